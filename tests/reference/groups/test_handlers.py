"""The consumer-group APIs over the wire, against one in-process coordinator.

Each test starts a Listener serving the group handlers of ``reference_impl.handlers`` on a
GroupService with a real asyncio clock and an in-memory ``__consumer_offsets`` log, and talks
to it with the suite's wire client, in every version of each API where the answer differs.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from types import SimpleNamespace

import pytest

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, Codec, ErrorCode
from reference_impl.groups.coordinator import GroupConfig, GroupCoordinator
from reference_impl.groups.placement import partition_for
from reference_impl.groups.scheduler import AsyncioScheduler
from reference_impl.groups.service import Coordinator, GroupService, LocalPlacement
from reference_impl.groups.store import MemoryOffsetsStore
from reference_impl.handlers import (
    delete_groups,
    describe_groups,
    find_coordinator,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
)
from reference_impl.net.listener import Listener

CODEC = Codec.from_specs()
MODULES = (
    find_coordinator,
    join_group,
    sync_group,
    heartbeat,
    leave_group,
    offset_commit,
    offset_fetch,
    offset_delete,
    describe_groups,
    list_groups,
    delete_groups,
)
PARTITIONS = 4
DELAY_MS = 30
E = ErrorCode
RANGE = [{"Name": "range", "Metadata": b"sub"}]
T_ID, UNKNOWN_ID = uuid.UUID(int=0x7), uuid.UUID(int=0x99)


class NoTransactions:
    """A transaction service whose ``__transaction_state`` has no leader yet."""

    async def find(self, key: str, listener: str) -> Coordinator:
        return Coordinator(int(E.COORDINATOR_NOT_AVAILABLE))


class Broker:
    """A listener serving the group APIs from one coordinator that owns every partition."""

    def __init__(self, *, deny: set[tuple[str, str, str]] = frozenset(), **config) -> None:
        self.scheduler = AsyncioScheduler()
        self.store = MemoryOffsetsStore(self.scheduler.wall_ms)
        cfg = GroupConfig(
            initial_rebalance_delay_ms=DELAY_MS,
            min_session_timeout_ms=50,
            offsets_topic_partitions=PARTITIONS,
            **config,
        )
        self.coordinator = GroupCoordinator(self.scheduler, self.store, cfg)
        for p in range(PARTITIONS):
            self.coordinator.finish_loading(p, self.coordinator.start_loading(p), [])
        self.placement = LocalPlacement(7, "127.0.0.1", 0)
        self.service = GroupService(
            self.coordinator, self.placement, partition_exists=lambda t, p: t != "missing"
        )
        self.deny = deny
        # topic "t" has an id (OffsetCommit/OffsetFetch v10 name topics by id)
        metadata_cache = SimpleNamespace(
            topic_ids={T_ID: "t"}, topics={"t": SimpleNamespace(topic_id=T_ID)}
        )
        node = SimpleNamespace(
            groups=self.service,
            authorize=self._authorize,
            transactions=NoTransactions(),
            metadata_cache=metadata_cache,
            config=SimpleNamespace(settings={}),  # no security settings: plain, no faults
        )
        self.listener = Listener("PLAINTEXT", "zkBroker", CODEC, [m.api(node) for m in MODULES])
        self.conns: list[Connection] = []

    def _authorize(self, session, operation: str, resource: tuple[str, str]) -> bool:
        return (operation, *resource) not in self.deny

    async def start(self) -> None:
        self.placement.port = await self.listener.start()

    async def connect(self, client_id: str = "client") -> Connection:
        conn = await Connection.open(
            "127.0.0.1", self.listener.port, codec=CODEC, client_id=client_id
        )
        self.conns.append(conn)
        return conn

    async def stop(self) -> None:
        for conn in self.conns:
            await conn.close()
        await self.listener.stop()


def run(test: Callable[[Broker], Awaitable[None]], **kwargs) -> None:
    async def main() -> None:
        broker = Broker(**kwargs)
        await broker.start()
        try:
            await test(broker)
        finally:
            await broker.stop()

    asyncio.run(asyncio.wait_for(main(), 30))


async def call(conn: Connection, key: int, version: int, body: dict) -> dict:
    return (await conn.request(key, version, body, timeout=10)).body


def join_body(group: str, member: str = "", *, instance: str | None = None, **kw) -> dict:
    body = {
        "GroupId": group,
        "SessionTimeoutMs": 10_000,
        "RebalanceTimeoutMs": 5_000,
        "MemberId": member,
        "GroupInstanceId": instance,
        "ProtocolType": "consumer",
        "Protocols": RANGE,
    }
    body.update(kw)
    return body


async def join(conn: Connection, group: str, version: int = 9, **kw) -> dict:
    """JoinGroup, repeating it once with the id a MEMBER_ID_REQUIRED answer gave."""
    r = await call(conn, ApiKey.JOIN_GROUP, version, join_body(group, **kw))
    if r["ErrorCode"] == E.MEMBER_ID_REQUIRED:
        kw["member"] = r["MemberId"]
        r = await call(conn, ApiKey.JOIN_GROUP, version, join_body(group, **kw))
    return r


async def sync(conn, group, r, assignments=None, version=5, **kw) -> dict:
    body = {
        "GroupId": group,
        "GenerationId": r["GenerationId"],
        "MemberId": r["MemberId"],
        "GroupInstanceId": kw.get("instance"),
        "ProtocolType": kw.get("ptype", "consumer"),
        "ProtocolName": kw.get("pname", "range"),
        "Assignments": [{"MemberId": m, "Assignment": a} for m, a in (assignments or {}).items()],
    }
    return await call(conn, ApiKey.SYNC_GROUP, version, body)


async def beat(conn, group, r, version=4, instance=None) -> int:
    body = {
        "GroupId": group,
        "GenerationId": r["GenerationId"],
        "MemberId": r["MemberId"],
        "GroupInstanceId": instance,
    }
    return (await call(conn, ApiKey.HEARTBEAT, version, body))["ErrorCode"]


async def stable_group(broker: Broker, group: str, n: int = 2) -> list[tuple[Connection, dict]]:
    """``n`` members joined and synced (member i assigned ``b"a<i>"``)."""
    conns = [await broker.connect(f"c{i}") for i in range(n)]
    joined = await asyncio.gather(*(join(c, group) for c in conns))
    leader = next(r for r in joined if r["Leader"] == r["MemberId"])
    plan = {r["MemberId"]: f"a{i}".encode() for i, r in enumerate(joined)}
    answers = await asyncio.gather(
        *(
            sync(c, group, r, plan if r is leader else None)
            for c, r in zip(conns, joined, strict=True)
        )
    )
    for i, a in enumerate(answers):
        assert a["ErrorCode"] == 0 and a["Assignment"] == f"a{i}".encode()
    return list(zip(conns, joined, strict=True))


async def until(done: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
    """Until ``done()``, looked at every turn of the loop in the awaiting task (a fixed sleep is
    stretched by a loaded host past the timers the tests race; a task of its own would cost one
    more turn before the awaiting one runs); bounded by ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"{what}: not after {timeout} s"
        await asyncio.sleep(0)


def preparing(broker: Broker, group: str, members: int) -> Callable[[], bool]:
    """Whether ``group`` waits in PreparingRebalance with ``members`` members joined."""

    def check() -> bool:
        g = broker.coordinator.groups.get(group)
        return g is not None and g.state.value == "PreparingRebalance" and len(g.members) == members

    return check


# -- FindCoordinator ------------------------------------------------------------------------


@pytest.mark.parametrize("version", range(7))
def test_find_coordinator_names_the_coordinator_in_every_version(version: int) -> None:
    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        if version >= 4:
            body = {"KeyType": 0, "CoordinatorKeys": ["g1", "g2"]}
            r = await call(conn, ApiKey.FIND_COORDINATOR, version, body)
            assert [c["Key"] for c in r["Coordinators"]] == ["g1", "g2"]
            for c in r["Coordinators"]:
                assert (c["ErrorCode"], c["NodeId"], c["Port"]) == (0, 7, broker.placement.port)
                assert c["Host"] == "127.0.0.1"
        else:
            r = await call(conn, ApiKey.FIND_COORDINATOR, version, {"Key": "g1", "KeyType": 0})
            assert (r["ErrorCode"], r["NodeId"], r["Port"]) == (0, 7, broker.placement.port)

    run(test)


@pytest.mark.parametrize("version", [1, 3, 4, 6])
def test_find_coordinator_key_types_and_authorization(version: int) -> None:
    async def test(broker: Broker) -> None:
        conn = await broker.connect()

        async def find(key: str, key_type: int) -> dict:
            if version >= 4:
                r = await call(
                    conn,
                    ApiKey.FIND_COORDINATOR,
                    version,
                    {"KeyType": key_type, "CoordinatorKeys": [key]},
                )
                return r["Coordinators"][0]
            return await call(
                conn, ApiKey.FIND_COORDINATOR, version, {"Key": key, "KeyType": key_type}
            )

        txn = await find("tx", 1)
        assert txn["ErrorCode"] == E.COORDINATOR_NOT_AVAILABLE and txn["NodeId"] == -1
        assert (await find("g", 9))["ErrorCode"] == E.INVALID_REQUEST
        assert (await find("secret", 0))["ErrorCode"] == 30  # GROUP_AUTHORIZATION_FAILED

    run(test, deny={("DESCRIBE", "GROUP", "secret")})


# -- JoinGroup / SyncGroup / Heartbeat / LeaveGroup ---------------------------------------------


@pytest.mark.parametrize("version", range(10))
def test_a_lone_member_joins_syncs_heartbeats_and_leaves_in_every_version(version: int) -> None:
    sync_v, beat_v, leave_v = min(version, 5), min(version, 4), min(version, 5)

    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        first = await call(conn, ApiKey.JOIN_GROUP, version, join_body("g"))
        if version >= 4:
            assert first["ErrorCode"] == E.MEMBER_ID_REQUIRED
            assert first["MemberId"].startswith("client-") and first["GenerationId"] == -1
            first = await call(conn, ApiKey.JOIN_GROUP, version, join_body("g", first["MemberId"]))
        assert first["ErrorCode"] == 0
        assert first["GenerationId"] == 1 and first["Leader"] == first["MemberId"]
        assert first["ProtocolName"] == "range"
        assert first["ProtocolType"] == ("consumer" if version >= 7 else None)
        assert [m["MemberId"] for m in first["Members"]] == [first["MemberId"]]
        assert first["Members"][0]["Metadata"] == b"sub"
        synced = await sync(conn, "g", first, {first["MemberId"]: b"mine"}, version=sync_v)
        assert (synced["ErrorCode"], synced["Assignment"]) == (0, b"mine")
        assert synced["ProtocolName"] == ("range" if sync_v >= 5 else None)
        assert await beat(conn, "g", first, version=beat_v) == 0
        if leave_v >= 3:
            body = {"GroupId": "g", "Members": [{"MemberId": first["MemberId"]}]}
        else:
            body = {"GroupId": "g", "MemberId": first["MemberId"]}
        left = await call(conn, ApiKey.LEAVE_GROUP, leave_v, body)
        assert left["ErrorCode"] == 0
        if leave_v >= 3:
            assert [m["ErrorCode"] for m in left["Members"]] == [0]
        assert broker.coordinator.groups["g"].state.value == "Empty"
        assert await beat(conn, "g", first, version=beat_v) == E.UNKNOWN_MEMBER_ID

    run(test)


def test_two_members_rebalance_on_join_and_on_leave() -> None:
    async def test(broker: Broker) -> None:
        (c0, r0), (c1, r1) = await stable_group(broker, "g")
        assert r0["GenerationId"] == r1["GenerationId"] == 1
        # a third member joins: the others learn it from their heartbeats
        c2 = await broker.connect("c2")
        joining = asyncio.ensure_future(join(c2, "g"))
        await until(preparing(broker, "g", 3), "the third member's join")
        assert await beat(c0, "g", r0) == E.REBALANCE_IN_PROGRESS
        rejoins = [join(c0, "g", member=r0["MemberId"]), join(c1, "g", member=r1["MemberId"])]
        results = await asyncio.gather(joining, *rejoins)
        assert {r["GenerationId"] for r in results} == {2}
        assert sum(1 for r in results if r["Members"]) == 1
        assert len(next(r for r in results if r["Members"])["Members"]) == 3
        # the stale generation is refused
        assert (await sync(c0, "g", r0))["ErrorCode"] == E.ILLEGAL_GENERATION
        leader = next(r for r in results if r["Members"])
        conns = {id(r): c for r, c in zip(results, [c2, c0, c1], strict=True)}
        plan = {r["MemberId"]: r["MemberId"].encode() for r in results}
        synced = await asyncio.gather(
            *(sync(conns[id(r)], "g", r, plan if r is leader else None) for r in results)
        )
        assert [s["Assignment"] for s in synced] == [r["MemberId"].encode() for r in results]
        # one leaves: generation 3 holds the two others
        c_leave = conns[id(results[0])]
        leave = {"GroupId": "g", "Members": [{"MemberId": results[0]["MemberId"]}]}
        assert (await call(c_leave, ApiKey.LEAVE_GROUP, 5, leave))["ErrorCode"] == 0
        again = await asyncio.gather(
            *(join(conns[id(r)], "g", member=r["MemberId"]) for r in results[1:])
        )
        assert {r["GenerationId"] for r in again} == {3}
        assert len(next(r for r in again if r["Members"])["Members"]) == 2

    run(test)


def test_join_group_errors() -> None:
    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        r = await call(conn, ApiKey.JOIN_GROUP, 5, join_body("g", SessionTimeoutMs=10))
        assert r["ErrorCode"] == E.INVALID_SESSION_TIMEOUT
        r = await call(conn, ApiKey.JOIN_GROUP, 5, join_body(""))
        assert r["ErrorCode"] == E.INVALID_GROUP_ID
        r = await call(conn, ApiKey.JOIN_GROUP, 5, join_body("nobody", "made-up"))
        assert (r["ErrorCode"], r["GenerationId"]) == (E.UNKNOWN_MEMBER_ID, -1)
        r = await call(conn, ApiKey.JOIN_GROUP, 5, join_body("g", Protocols=[]))
        assert r["ErrorCode"] == E.INCONSISTENT_GROUP_PROTOCOL
        await stable_group(broker, "g", 1)
        other = await call(conn, ApiKey.JOIN_GROUP, 5, join_body("g", ProtocolType="connect"))
        assert other["ErrorCode"] == E.INCONSISTENT_GROUP_PROTOCOL
        other = await call(
            conn, ApiKey.JOIN_GROUP, 5, join_body("g", Protocols=[{"Name": "x", "Metadata": b""}])
        )
        assert other["ErrorCode"] == E.INCONSISTENT_GROUP_PROTOCOL
        r = await call(conn, ApiKey.JOIN_GROUP, 5, join_body("g", "made-up"))
        assert r["ErrorCode"] == E.UNKNOWN_MEMBER_ID
        r = await call(conn, ApiKey.JOIN_GROUP, 5, join_body("secret"))
        assert r["ErrorCode"] == 30

    run(test, deny={("READ", "GROUP", "secret")})


def test_a_full_group_refuses_new_members() -> None:
    async def test(broker: Broker) -> None:
        [(conn, r)] = await stable_group(broker, "g", 1)
        other = await broker.connect("other")
        refused = await call(other, ApiKey.JOIN_GROUP, 5, join_body("g"))
        assert (refused["ErrorCode"], refused["MemberId"]) == (E.GROUP_MAX_SIZE_REACHED, "")
        # the member already in it may rejoin
        again = await join(conn, "g", version=5, member=r["MemberId"])
        assert again["ErrorCode"] == 0 and again["GenerationId"] == 2

    run(test, max_size=1)


def test_sync_heartbeat_and_leave_errors() -> None:
    async def test(broker: Broker) -> None:
        [(conn, r)] = await stable_group(broker, "g", 1)
        bad_gen = {**r, "GenerationId": 9}
        unknown = {**r, "MemberId": "who"}
        assert (await sync(conn, "g", bad_gen))["ErrorCode"] == E.ILLEGAL_GENERATION
        assert (await sync(conn, "g", unknown))["ErrorCode"] == E.UNKNOWN_MEMBER_ID
        assert (await sync(conn, "nope", r))["ErrorCode"] == E.UNKNOWN_MEMBER_ID
        assert (await sync(conn, "g", r, pname="other"))["ErrorCode"] == (
            E.INCONSISTENT_GROUP_PROTOCOL
        )
        assert (await sync(conn, "g", r, pname=None))["ErrorCode"] == (
            E.INCONSISTENT_GROUP_PROTOCOL
        )
        assert (await sync(conn, "g", r, pname=None, version=4))["ErrorCode"] == 0
        assert await beat(conn, "g", bad_gen) == E.ILLEGAL_GENERATION
        assert await beat(conn, "g", unknown) == E.UNKNOWN_MEMBER_ID
        assert await beat(conn, "", r) == E.INVALID_GROUP_ID
        left = await call(
            conn,
            ApiKey.LEAVE_GROUP,
            5,
            {"GroupId": "g", "Members": [{"MemberId": "who"}, {"MemberId": "x"}]},
        )
        assert [m["ErrorCode"] for m in left["Members"]] == [E.UNKNOWN_MEMBER_ID] * 2
        old = await call(conn, ApiKey.LEAVE_GROUP, 1, {"GroupId": "g", "MemberId": "who"})
        assert old["ErrorCode"] == E.UNKNOWN_MEMBER_ID
        assert (await call(conn, ApiKey.LEAVE_GROUP, 0, {"GroupId": "nope", "MemberId": "x"}))[
            "ErrorCode"
        ] == E.UNKNOWN_MEMBER_ID

    run(test)


def test_static_member_rejoining_fences_its_old_id_without_a_rebalance() -> None:
    async def test(broker: Broker) -> None:
        c0 = await broker.connect("c0")
        first = await join(c0, "g", version=5, instance="i-0")
        assert first["ErrorCode"] == 0 and first["MemberId"].startswith("i-0-")
        await sync(c0, "g", first, {first["MemberId"]: b"part"}, instance="i-0")
        c1 = await broker.connect("c1")
        again = await join(c1, "g", version=9, instance="i-0")
        assert again["ErrorCode"] == 0 and again["GenerationId"] == 1
        assert again["MemberId"] != first["MemberId"]
        assert again["SkipAssignment"] is True and again["Leader"] == again["MemberId"]
        assert await beat(c0, "g", first, instance="i-0") == E.FENCED_INSTANCE_ID
        assert await beat(c1, "g", again, instance="i-0") == 0
        s = await sync(c1, "g", again, instance="i-0")
        assert s["Assignment"] == b"part"
        assert broker.coordinator.groups["g"].state.value == "Stable"
        # removed by instance id alone (admin's removeMembersFromConsumerGroup)
        body = {"GroupId": "g", "Members": [{"MemberId": "", "GroupInstanceId": "i-0"}]}
        assert (await call(c1, ApiKey.LEAVE_GROUP, 4, body))["Members"][0]["ErrorCode"] == 0
        assert broker.coordinator.groups["g"].state.value == "Empty"

    run(test)


def test_session_expiry_removes_a_silent_member_and_rebalances() -> None:
    async def test(broker: Broker) -> None:
        c0, c1 = await broker.connect("c0"), await broker.connect("c1")
        # only c1's session is short: a loaded host's pause between c0's heartbeats cannot
        # expire c0 as well
        quick = {"SessionTimeoutMs": 300, "RebalanceTimeoutMs": 2000}
        joined = await asyncio.gather(
            join(c0, "g", RebalanceTimeoutMs=2000), join(c1, "g", **quick)
        )
        leader = next(r for r in joined if r["Members"])
        plan = {r["MemberId"]: b"x" for r in joined}
        await asyncio.gather(
            *(
                sync(c, "g", r, plan if r is leader else None)
                for c, r in zip((c0, c1), joined, strict=True)
            )
        )
        deadline = time.monotonic() + 10
        while (error := await beat(c0, "g", joined[0])) == 0:  # only c0 keeps heartbeating
            assert time.monotonic() < deadline, "c1's session never expired"
            await asyncio.sleep(0.1)
        assert error == E.REBALANCE_IN_PROGRESS
        assert list(broker.coordinator.groups["g"].members) == [joined[0]["MemberId"]]
        r = await join(c0, "g", member=joined[0]["MemberId"], RebalanceTimeoutMs=2000)
        assert r["GenerationId"] == 2 and len(r["Members"]) == 1

    run(test)


def test_coordinator_errors_for_partitions_not_led_or_still_loading() -> None:
    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        p = partition_for("g", PARTITIONS)
        broker.coordinator.unload(p)
        r = await call(conn, ApiKey.JOIN_GROUP, 5, join_body("g"))
        assert r["ErrorCode"] == E.NOT_COORDINATOR
        broker.coordinator.start_loading(p)
        assert (await call(conn, ApiKey.JOIN_GROUP, 5, join_body("g")))["ErrorCode"] == (
            E.COORDINATOR_LOAD_IN_PROGRESS
        )
        fetched = await call(
            conn, ApiKey.OFFSET_FETCH, 1, {"GroupId": "g", "Topics": [tp_request("t", 0)]}
        )
        assert fetched["Topics"][0]["Partitions"][0]["ErrorCode"] == E.COORDINATOR_LOAD_IN_PROGRESS
        fetched = await call(conn, ApiKey.OFFSET_FETCH, 5, {"GroupId": "g", "Topics": None})
        assert fetched["ErrorCode"] == E.COORDINATOR_LOAD_IN_PROGRESS
        described = await call(conn, ApiKey.DESCRIBE_GROUPS, 5, {"Groups": ["g"]})
        assert described["Groups"][0]["ErrorCode"] == E.COORDINATOR_LOAD_IN_PROGRESS
        assert described["Groups"][0]["GroupState"] == ""
        listed = await call(conn, ApiKey.LIST_GROUPS, 4, {})
        assert listed["ErrorCode"] == E.COORDINATOR_LOAD_IN_PROGRESS

    run(test)


def test_a_pending_join_gets_not_coordinator_when_the_partition_moves() -> None:
    """The partition is unloaded while the member waits out the initial rebalance delay (seen
    at once, ``until``: after a fixed 10 ms sleep the join had completed first in about 1 run
    in 6, four such runs at once)."""

    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        pending = asyncio.ensure_future(join(conn, "g"))
        await until(preparing(broker, "g", 1), "the join")
        broker.coordinator.unload(partition_for("g", PARTITIONS))
        assert (await pending)["ErrorCode"] == E.NOT_COORDINATOR

    run(test)


# -- offsets ------------------------------------------------------------------------------------


def tp_request(topic: str, *partitions: int) -> dict:
    return {"Name": topic, "PartitionIndexes": list(partitions)}


def commit_body(group: str, offsets: dict, gen: int = -1, member: str = "", **kw) -> dict:
    topics: dict[str, list] = {}
    for (t, p), off in offsets.items():
        topics.setdefault(t, []).append(
            {
                "PartitionIndex": p,
                "CommittedOffset": off,
                "CommittedLeaderEpoch": 3,
                "CommitTimestamp": -1,
                "CommittedMetadata": kw.get("metadata", "m"),
            }
        )
    return {
        "GroupId": group,
        "GenerationIdOrMemberEpoch": gen,
        "MemberId": member,
        "GroupInstanceId": None,
        "RetentionTimeMs": -1,
        "Topics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()],
    }


def commit_errors(r: dict) -> dict:
    return {
        (t["Name"], p["PartitionIndex"]): p["ErrorCode"]
        for t in r["Topics"]
        for p in t["Partitions"]
    }


@pytest.mark.parametrize("version", range(10))
def test_offsets_committed_read_back_in_every_version(version: int) -> None:
    fetch_v = min(version, 9)

    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        r = await call(
            conn, ApiKey.OFFSET_COMMIT, version, commit_body("g", {("t", 0): 42, ("t", 1): 7})
        )
        assert commit_errors(r) == {("t", 0): 0, ("t", 1): 0}
        if fetch_v >= 8:
            body = {"Groups": [{"GroupId": "g", "Topics": [tp_request("t", 0, 1, 2)]}]}
            got = (await call(conn, ApiKey.OFFSET_FETCH, fetch_v, body))["Groups"][0]
        else:
            got = await call(
                conn,
                ApiKey.OFFSET_FETCH,
                fetch_v,
                {"GroupId": "g", "Topics": [tp_request("t", 0, 1, 2)]},
            )
        parts = {p["PartitionIndex"]: p for p in got["Topics"][0]["Partitions"]}
        assert parts[0]["CommittedOffset"] == 42 and parts[1]["CommittedOffset"] == 7
        assert parts[2]["CommittedOffset"] == -1 and parts[2]["ErrorCode"] == 0
        assert parts[0]["Metadata"] == "m"
        assert parts[2]["Metadata"] == ""
        if fetch_v >= 5:
            assert parts[0]["CommittedLeaderEpoch"] == (3 if version >= 6 else -1)

    run(test)


def test_offsets_by_topic_id_from_v10() -> None:
    """OffsetCommit/OffsetFetch v10 name topics by id: the same offsets as by name, an unknown
    id UNKNOWN_TOPIC_ID for each partition (nothing committed), answers by id."""

    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        body = commit_body("g", {("t", 0): 42, ("x", 0): 1, ("y", 1): 2})
        for t, topic_id in zip(body["Topics"], (T_ID, UNKNOWN_ID, UNKNOWN_ID), strict=True):
            t["TopicId"] = topic_id
        r = await call(conn, ApiKey.OFFSET_COMMIT, 10, body)
        # entries naming the same id are answered as one, as Kafka 4.4.0 does
        codes = [(t["TopicId"], [(p["PartitionIndex"], p["ErrorCode"]) for p in t["Partitions"]])
                 for t in r["Topics"]]  # fmt: skip
        assert codes == [(T_ID, [(0, 0)]), (UNKNOWN_ID, [(0, 100), (1, 100)])]
        asked = [{"TopicId": T_ID, "PartitionIndexes": [0, 1]}]
        asked.append({"TopicId": UNKNOWN_ID, "PartitionIndexes": [0]})
        got = await call(
            conn, ApiKey.OFFSET_FETCH, 10, {"Groups": [{"GroupId": "g", "Topics": asked}]}
        )
        found = {(t["TopicId"], p["PartitionIndex"]): (p["CommittedOffset"], p["ErrorCode"])
                 for t in got["Groups"][0]["Topics"] for p in t["Partitions"]}  # fmt: skip
        assert found == {(T_ID, 0): (42, 0), (T_ID, 1): (-1, 0), (UNKNOWN_ID, 0): (-1, 100)}
        every = await call(
            conn, ApiKey.OFFSET_FETCH, 10, {"Groups": [{"GroupId": "g", "Topics": None}]}
        )
        assert [t["TopicId"] for t in every["Groups"][0]["Topics"]] == [T_ID]
        by_name = {"Groups": [{"GroupId": "g", "Topics": [tp_request("t", 0)]}]}
        old = await call(conn, ApiKey.OFFSET_FETCH, 9, by_name)
        assert old["Groups"][0]["Topics"][0]["Partitions"][0]["CommittedOffset"] == 42

    run(test)


def test_offset_fetch_all_partitions_and_several_groups() -> None:
    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        await call(conn, ApiKey.OFFSET_COMMIT, 8, commit_body("a", {("t", 0): 1, ("u", 3): 2}))
        await call(conn, ApiKey.OFFSET_COMMIT, 8, commit_body("b", {("t", 0): 5}))
        body = {
            "Groups": [
                {"GroupId": "a", "Topics": None},
                {"GroupId": "b", "Topics": [tp_request("t", 0)]},
                {"GroupId": "none", "Topics": None},
                {"GroupId": "secret", "Topics": None},
            ],
            "RequireStable": True,
        }
        got = (await call(conn, ApiKey.OFFSET_FETCH, 9, body))["Groups"]
        flat = [
            {
                (t["Name"], p["PartitionIndex"]): p["CommittedOffset"]
                for t in g["Topics"]
                for p in t["Partitions"]
            }
            for g in got
        ]
        assert flat == [{("t", 0): 1, ("u", 3): 2}, {("t", 0): 5}, {}, {}]
        assert [g["ErrorCode"] for g in got] == [0, 0, 0, 30]
        old = await call(conn, ApiKey.OFFSET_FETCH, 2, {"GroupId": "a", "Topics": None})
        assert sorted(t["Name"] for t in old["Topics"]) == ["t", "u"]

    run(test, deny={("DESCRIBE", "GROUP", "secret")})


def test_offset_commit_errors() -> None:
    async def test(broker: Broker) -> None:
        [(conn, r)] = await stable_group(broker, "g", 1)
        gen, member = r["GenerationId"], r["MemberId"]
        ok = await call(conn, ApiKey.OFFSET_COMMIT, 8, commit_body("g", {("t", 0): 1}, gen, member))
        assert commit_errors(ok) == {("t", 0): 0}
        cases = [
            (commit_body("g", {("t", 0): 1}, gen + 1, member), E.ILLEGAL_GENERATION),
            (commit_body("g", {("t", 0): 1}, gen, "who"), E.UNKNOWN_MEMBER_ID),
            (commit_body("g", {("t", 0): 1}), E.UNKNOWN_MEMBER_ID),  # not a member, not Empty
            (commit_body("new", {("t", 0): 1}, 3, "m"), E.ILLEGAL_GENERATION),
            (commit_body("g", {("missing", 0): 1}, gen, member), E.UNKNOWN_TOPIC_OR_PARTITION),
            (commit_body("g", {("t", 0): 1}, gen, member, metadata="x" * 5000), 12),
            (commit_body("secret", {("t", 0): 1}), 30),
            (commit_body("g", {("hidden", 0): 1}, gen, member), 29),
        ]
        for body, expected in cases:
            got = commit_errors(await call(conn, ApiKey.OFFSET_COMMIT, 8, body))
            assert set(got.values()) == {expected}, (body, got)
        broker.store.fail_with = E.NOT_LEADER_OR_FOLLOWER
        failed = await call(
            conn, ApiKey.OFFSET_COMMIT, 8, commit_body("g", {("t", 0): 9}, gen, member)
        )
        assert commit_errors(failed) == {("t", 0): E.NOT_COORDINATOR}
        broker.store.fail_with = E.MESSAGE_TOO_LARGE
        failed = await call(
            conn, ApiKey.OFFSET_COMMIT, 8, commit_body("g", {("t", 0): 9}, gen, member)
        )
        assert commit_errors(failed) == {("t", 0): E.INVALID_COMMIT_OFFSET_SIZE}
        broker.store.fail_with = None
        got = await call(
            conn, ApiKey.OFFSET_FETCH, 7, {"GroupId": "g", "Topics": [tp_request("t", 0)]}
        )
        assert got["Topics"][0]["Partitions"][0]["CommittedOffset"] == 1

    run(
        test,
        deny={("READ", "GROUP", "secret"), ("READ", "TOPIC", "hidden")},
    )


def test_offsets_and_groups_survive_a_coordinator_reload() -> None:
    async def test(broker: Broker) -> None:
        pairs = await stable_group(broker, "g", 2)
        conn, r = pairs[0]
        await call(
            conn,
            ApiKey.OFFSET_COMMIT,
            8,
            commit_body("g", {("t", 0): 11}, r["GenerationId"], r["MemberId"]),
        )
        p = partition_for("g", PARTITIONS)
        broker.coordinator.unload(p)
        token = broker.coordinator.start_loading(p)
        assert broker.coordinator.finish_loading(p, token, broker.store.read(p))
        got = await call(
            conn, ApiKey.OFFSET_FETCH, 7, {"GroupId": "g", "Topics": [tp_request("t", 0)]}
        )
        assert got["Topics"][0]["Partitions"][0]["CommittedOffset"] == 11
        described = (await call(conn, ApiKey.DESCRIBE_GROUPS, 5, {"Groups": ["g"]}))["Groups"][0]
        assert described["GroupState"] == "Stable"
        assert sorted(m["MemberAssignment"] for m in described["Members"]) == [b"a0", b"a1"]
        assert await beat(conn, "g", r) == 0

    run(test)


# -- DescribeGroups / ListGroups / DeleteGroups -------------------------------------------------


@pytest.mark.parametrize("version", range(7))
def test_describe_groups_in_every_version(version: int) -> None:
    async def test(broker: Broker) -> None:
        pairs = await stable_group(broker, "g", 2)
        conn = pairs[0][0]
        body = {"Groups": ["g", "unknown"], "IncludeAuthorizedOperations": True}
        g, unknown = (await call(conn, ApiKey.DESCRIBE_GROUPS, version, body))["Groups"]
        assert (g["ErrorCode"], g["GroupState"], g["ProtocolType"], g["ProtocolData"]) == (
            0,
            "Stable",
            "consumer",
            "range",
        )
        members = sorted(g["Members"], key=lambda m: m["ClientId"])
        assert [m["ClientId"] for m in members] == ["c0", "c1"]
        assert [m["MemberAssignment"] for m in members] == [b"a0", b"a1"]
        assert {m["MemberMetadata"] for m in members} == {b"sub"}
        assert members[0]["ClientHost"] == "/127.0.0.1"
        # v6 (KIP-1043): an unknown group is GROUP_ID_NOT_FOUND, with a message
        code = E.GROUP_ID_NOT_FOUND if version >= 6 else 0
        assert (unknown["ErrorCode"], unknown["GroupState"], unknown["Members"]) == (
            code,
            "Dead",
            [],
        )
        assert (unknown.get("ErrorMessage") is not None) == (version >= 6)
        if version >= 3:
            assert g["AuthorizedOperations"] == (1 << 3) | (1 << 6) | (1 << 8)

    run(test)


@pytest.mark.parametrize("version", range(6))
def test_list_groups_in_every_version(version: int) -> None:
    async def test(broker: Broker) -> None:
        await stable_group(broker, "busy", 1)
        conn = await broker.connect()
        await call(conn, ApiKey.OFFSET_COMMIT, 8, commit_body("idle", {("t", 0): 1}))
        listed = await call(
            conn, ApiKey.LIST_GROUPS, version, {"StatesFilter": [], "TypesFilter": []}
        )
        assert listed["ErrorCode"] == 0
        got = {g["GroupId"]: g for g in listed["Groups"]}
        assert set(got) == {"busy", "idle"}
        assert got["busy"]["ProtocolType"] == "consumer" and got["idle"]["ProtocolType"] == ""
        if version >= 4:
            assert got["busy"]["GroupState"] == "Stable" and got["idle"]["GroupState"] == "Empty"
            only = await call(
                conn, ApiKey.LIST_GROUPS, version, {"StatesFilter": ["stable"], "TypesFilter": []}
            )
            assert [g["GroupId"] for g in only["Groups"]] == ["busy"]
        if version >= 5:
            assert got["busy"]["GroupType"] == "classic"
            none = await call(
                conn, ApiKey.LIST_GROUPS, version, {"StatesFilter": [], "TypesFilter": ["consumer"]}
            )
            assert none["Groups"] == []

    run(test)


@pytest.mark.parametrize("version", range(4))
def test_delete_groups_in_every_version(version: int) -> None:
    async def test(broker: Broker) -> None:
        await stable_group(broker, "busy", 1)
        conn = await broker.connect()
        await call(conn, ApiKey.OFFSET_COMMIT, 8, commit_body("idle", {("t", 0): 1}))
        body = {"GroupsNames": ["idle", "busy", "unknown", "idle", "secret"]}
        results = (await call(conn, ApiKey.DELETE_GROUPS, version, body))["Results"]
        assert [(r["GroupId"], r["ErrorCode"]) for r in results] == [
            ("idle", 0),
            ("busy", E.NON_EMPTY_GROUP),
            ("unknown", E.GROUP_ID_NOT_FOUND),
            ("secret", 30),
        ]
        got = await call(
            conn, ApiKey.OFFSET_FETCH, 7, {"GroupId": "idle", "Topics": [tp_request("t", 0)]}
        )
        assert got["Topics"][0]["Partitions"][0]["CommittedOffset"] == -1
        # the tombstones are in the log: a reload does not bring the group back
        p = partition_for("idle", PARTITIONS)
        broker.coordinator.unload(p)
        broker.coordinator.finish_loading(
            p, broker.coordinator.start_loading(p), broker.store.read(p)
        )
        assert "idle" not in broker.coordinator.groups

    run(test, deny={("DELETE", "GROUP", "secret")})


# -- OffsetDelete -------------------------------------------------------------------------------


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0 naming ``topics`` (null user data)."""
    out = (0).to_bytes(2, "big") + len(topics).to_bytes(4, "big")
    for t in topics:
        out += len(t).to_bytes(2, "big") + t.encode()
    return out + (-1).to_bytes(4, "big", signed=True)


def deleted(r: dict) -> tuple[int, dict]:
    return r["ErrorCode"], {
        (t["Name"], p["PartitionIndex"]): p["ErrorCode"]
        for t in r["Topics"]
        for p in t["Partitions"]
    }


def offset_delete_body(group: str, *tps: tuple[str, int]) -> dict:
    by: dict[str, list[dict]] = {}
    for t, p in tps:
        by.setdefault(t, []).append({"PartitionIndex": p})
    return {"GroupId": group, "Topics": [{"Name": t, "Partitions": ps} for t, ps in by.items()]}


def test_offset_delete_removes_subscribed_topics_stay_and_tombstones_survive_a_reload() -> None:
    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        await call(conn, ApiKey.OFFSET_COMMIT, 8, commit_body("idle", {("t", 0): 1, ("t", 1): 2}))
        got = await call(
            conn, ApiKey.OFFSET_DELETE, 0, offset_delete_body("idle", ("t", 0), ("missing", 0))
        )
        assert deleted(got) == (0, {("t", 0): 0, ("missing", 0): E.UNKNOWN_TOPIC_OR_PARTITION})
        fetched = await call(
            conn, ApiKey.OFFSET_FETCH, 7, {"GroupId": "idle", "Topics": [tp_request("t", 0, 1)]}
        )
        assert [p["CommittedOffset"] for p in fetched["Topics"][0]["Partitions"]] == [-1, 2]
        p = partition_for("idle", PARTITIONS)
        broker.coordinator.unload(p)
        broker.coordinator.finish_loading(
            p, broker.coordinator.start_loading(p), broker.store.read(p)
        )
        assert ("t", 0) not in broker.coordinator.groups["idle"].offsets
        assert broker.coordinator.groups["idle"].offsets[("t", 1)].offset == 2
        # a consumer group with a member subscribed to "t": its offsets stay, "u"'s go
        member = await broker.connect("member")
        protocols = [{"Name": "range", "Metadata": subscription("t")}]
        r = await join(member, "busy", Protocols=protocols)
        await sync(member, "busy", r, {r["MemberId"]: b"a"})
        offsets = {("t", 0): 5, ("u", 0): 6}
        await call(
            member,
            ApiKey.OFFSET_COMMIT,
            8,
            commit_body("busy", offsets, r["GenerationId"], r["MemberId"]),
        )
        got = await call(conn, ApiKey.OFFSET_DELETE, 0, offset_delete_body("busy", *offsets))
        assert deleted(got) == (0, {("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC, ("u", 0): 0})
        got = await call(conn, ApiKey.OFFSET_DELETE, 0, offset_delete_body("unknown", ("t", 0)))
        assert deleted(got) == (E.GROUP_ID_NOT_FOUND, {})
        got = await call(conn, ApiKey.OFFSET_DELETE, 0, offset_delete_body("secret", ("t", 0)))
        assert deleted(got) == (E.GROUP_AUTHORIZATION_FAILED, {})

    run(test, deny={("DELETE", "GROUP", "secret")})
