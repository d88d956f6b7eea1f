"""Classic consumer groups on the wire, as the suite drives them: the coordinator, members on
their own connections, and rebalance rounds.

A round is driven the way Kafka's clients drive one, so that every answer is determined: a new
member's JoinGroup (after MEMBER_ID_REQUIRED where the version asks for it) or a LeaveGroup
starts the rebalance; each member already in the group learns of it from a Heartbeat answered
REBALANCE_IN_PROGRESS and rejoins; every JoinGroup of the round is then answered together, the
leader assigns, and every member's SyncGroup gets its share. Nothing here judges the answers:
the tests and the model's binding do, naming their requirements.
"""

from __future__ import annotations

import asyncio
import struct
import time
from collections.abc import Iterable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from conformance.client.wire import ConnectionClosed, Response
from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.kafka_errors import error_name
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.records_io import quiet_version
from conformance.suite.kit.safety import fresh_name
from conformance.targets.base import Endpoint

#: answers that mean "ask again shortly" while a coordinator is being placed or loaded
TRANSIENT = frozenset(
    {
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
    }
)
#: JoinGroup answers a round is joined again after (every member, like Kafka's clients): the
#: coordinator is loading, or storing the group timed out (Kafka 3.9 under load answers
#: COORDINATOR_NOT_AVAILABLE then). Not NOT_COORDINATOR: from the broker FindCoordinator named,
#: that answer is what GROUPS.R1 judges
REJOIN = TRANSIENT - {ErrorCode.NOT_COORDINATOR}
#: at most so many extra rounds, so far apart: a target that keeps answering so costs bounded time
REJOIN_TRIES = 3
REJOIN_PAUSE = 1.0
PROTOCOL_TYPE = "consumer"
PROTOCOL_NAME = "range"
#: a member's session: longer than any step of a test (each round refreshes it), so that only
#: the expiry test sees one end; short, so that a coordinator holding JoinGroup for part of the
#: session (tansu: half of it) still answers within ROUND_WAIT and the rest can be judged
SESSION_MS = 10_000
#: a consumer's usual session (Kafka clients' default): the rebalance-timeout test uses it, so
#: that a JoinGroup held for part of the session is seen for what it is
CLIENT_SESSION_MS = 45_000
REBALANCE_MS = 4_000
#: how long a coordinator may take to be placed (the first FindCoordinator may create
#: __consumer_offsets) or to answer a rebalance
COORDINATOR_WAIT = 30.0
#: how long a JoinGroup / SyncGroup answer may take once the round's requests are all sent
ROUND_WAIT = REBALANCE_MS / 1000 + 4
#: Kafka's group.min.session.timeout.ms, where the target does not report its own
KAFKA_MIN_SESSION_MS = 6000
GROUP_KEY = 0


def consumer_subscription(topics: list[str], user_data: bytes | None = None) -> bytes:
    """Member metadata as Kafka's consumers send it under protocol type "consumer":
    ConsumerProtocolSubscription v0 (int16 version, the topic names, nullable user data).
    Kafka's coordinator reads it to learn a group's subscribed topics (OffsetDelete, offset
    expiry); Apache Kafka 3.9 and 4.0 leave the round unanswered when it cannot
    (confirmations/kafka_groups.py), so the suite sends nothing else under that type."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        name = t.encode()
        out += struct.pack(">h", len(name)) + name
    if user_data is None:
        return out + struct.pack(">i", -1)
    return out + struct.pack(">i", len(user_data)) + user_data


def subscription(member: str) -> bytes:
    """Member metadata the leader must see as sent: a consumer subscription to no topic whose
    user data is distinct per member."""
    return consumer_subscription([], f"subscription of {member}".encode())


def assignment_for(member_id: str, generation: int) -> bytes:
    """What the suite's leader assigns a member: distinct per member and generation."""
    return f"assignment {generation} {member_id}".encode()


@dataclass
class Member:
    conn: SyncConnection
    client_id: str
    instance_id: str | None = None
    member_id: str = ""
    generation: int = -1
    leader: str = ""
    assignment: bytes | None = None
    metadata: bytes = b""
    session_ms: int = SESSION_MS
    #: the JoinGroup answers this member got, in order
    joins: list[dict] = field(default_factory=list)


@dataclass
class Round:
    """What one rebalance round's answers were."""

    first_joins: dict[str, dict] = field(default_factory=dict)  # client id -> MEMBER_ID_REQUIRED
    leave: dict | None = None
    heartbeats: list[int] = field(default_factory=list)  # codes while the rebalance started
    joins: dict[str, dict] = field(default_factory=dict)  # client id -> JoinGroup answer
    rejoined: list[dict[str, dict]] = field(default_factory=list)  # earlier tries' REJOIN answers
    syncs: dict[str, dict] = field(default_factory=dict)  # client id -> SyncGroup answer
    assigned: dict[str, bytes] = field(default_factory=dict)  # member id -> what leader gave


class Group:
    """One suite-made group: its coordinator, its members, the versions the target speaks."""

    def __init__(
        self, harness: Harness, name: str | None = None, *, join_versions: str | None = None
    ) -> None:
        self.harness = harness
        self.name = name or fresh_name("group")
        self.members: list[Member] = []
        self.versions = {
            api: harness.pick_version(api, join_versions if api == ApiKey.JOIN_GROUP else None)
            for api in (
                ApiKey.FIND_COORDINATOR,
                ApiKey.SYNC_GROUP,
                ApiKey.HEARTBEAT,
                ApiKey.LEAVE_GROUP,
                ApiKey.JOIN_GROUP,
            )
        }
        self._count = 0
        self.coordinator = ready_coordinator(
            harness, self.name, self.versions[ApiKey.FIND_COORDINATOR]
        )
        self._admin: SyncConnection | None = None

    # --- plumbing ------------------------------------------------------------------------------

    def connect(self, client_id: str | None = None) -> SyncConnection:
        return self.harness.connect(self.coordinator.endpoint, client_id=client_id)

    @property
    def admin(self) -> SyncConnection:
        if self._admin is None or self._admin.closed:
            self._admin = self.connect("kc-admin")
        return self._admin

    def request(self, api: int, version: int, body: dict, conn: SyncConnection | None = None):
        """An answered request to the coordinator (transient coordinator errors retried)."""
        return coordinator_request(self.harness, conn or self.admin, api, version, body)

    def start(self, m: Member, api: int, body: dict, timeout: float = ROUND_WAIT) -> Future:
        """Send without waiting for the answer (JoinGroup / SyncGroup block for the round)."""
        version = self.versions[api]
        return asyncio.run_coroutine_threadsafe(
            m.conn.conn.request(api, version, body, timeout=timeout), self.harness.loop
        )

    def finish(self, m: Member, api: int, fut: Future) -> dict:
        """The answer of a request sent with ``start``: within ROUND_WAIT (GROUPS.R21)."""
        name = self.harness.api_name(api)
        try:
            resp: Response = fut.result(ROUND_WAIT + 1)
        except ConnectionClosed as e:
            raise verify.Failed(f"{name} of {m.client_id}: connection closed ({e})") from None
        except TimeoutError:
            fut.cancel()
            resp = None
        verify.check(
            resp is not None,
            f"{name} v{self.versions[api]} of {m.client_id}: no answer within {ROUND_WAIT:.0f} s "
            f"(rebalance timeout {REBALANCE_MS} ms, session {m.session_ms} ms)",
            "GROUPS.R21",
        )
        assert resp is not None
        return resp.body

    # --- members -------------------------------------------------------------------------------

    def new_member(self, instance_id: str | None = None) -> Member:
        self._count += 1
        client_id = f"kc-member-{self._count}"
        m = Member(self.connect(client_id), client_id, instance_id)
        m.metadata = subscription(client_id)
        return m

    def join_body(self, m: Member, *, protocol_type: str = PROTOCOL_TYPE) -> dict[str, Any]:
        return {
            "GroupId": self.name,
            "SessionTimeoutMs": m.session_ms,
            "RebalanceTimeoutMs": REBALANCE_MS,
            "MemberId": m.member_id,
            "GroupInstanceId": m.instance_id,
            "ProtocolType": protocol_type,
            "Protocols": [{"Name": PROTOCOL_NAME, "Metadata": m.metadata}],
            "Reason": None,
        }

    def join(self, m: Member, **kw: Any) -> Future:
        return self.start(m, ApiKey.JOIN_GROUP, self.join_body(m, **kw))

    def ask_member_id(self, m: Member) -> dict:
        """A new dynamic member's first JoinGroup at v4+: MEMBER_ID_REQUIRED and its id."""
        body = self.finish(m, ApiKey.JOIN_GROUP, self.join(m))
        if body["ErrorCode"] == ErrorCode.MEMBER_ID_REQUIRED and body["MemberId"]:
            m.member_id = body["MemberId"]
        return body

    def heartbeat(
        self, m: Member, *, generation: int | None = None, member_id: str | None = None
    ) -> int:
        body = {
            "GroupId": self.name,
            "GenerationId": m.generation if generation is None else generation,
            "MemberId": m.member_id if member_id is None else member_id,
            "GroupInstanceId": m.instance_id if member_id is None else None,
        }
        version = self.versions[ApiKey.HEARTBEAT]
        return verify.expect_response(m.conn, ApiKey.HEARTBEAT, version, body).body["ErrorCode"]

    def sync_body(self, m: Member, assignments: dict[str, bytes]) -> dict[str, Any]:
        return {
            "GroupId": self.name,
            "GenerationId": m.generation,
            "MemberId": m.member_id,
            "GroupInstanceId": m.instance_id,
            "ProtocolType": PROTOCOL_TYPE,
            "ProtocolName": PROTOCOL_NAME,
            "Assignments": [{"MemberId": k, "Assignment": v} for k, v in assignments.items()],
        }

    def leave_body(self, leaving: Iterable[Member]) -> dict[str, Any]:
        ms = list(leaving)
        if self.versions[ApiKey.LEAVE_GROUP] < 3:
            return {"GroupId": self.name, "MemberId": ms[0].member_id}
        return {
            "GroupId": self.name,
            "Members": [
                {"MemberId": m.member_id, "GroupInstanceId": m.instance_id, "Reason": None}
                for m in ms
            ],
        }

    # --- rounds --------------------------------------------------------------------------------

    def await_rebalance(self, staying: list[Member], r: Round) -> None:
        """Heartbeat a staying member until the coordinator says a rebalance is under way
        (at most for the rebalance timeout: a rebalance cannot be pending longer)."""
        deadline = time.monotonic() + REBALANCE_MS / 1000 + 1
        while True:
            code = self.heartbeat(staying[0])
            r.heartbeats.append(code)
            if code != ErrorCode.NONE or time.monotonic() > deadline:
                return
            time.sleep(0.05)

    def rebalance(
        self, joining: Iterable[Member] = (), leaving: Iterable[Member] = (), *, sync: bool = True
    ) -> Round:
        """One round: ``joining`` members enter, ``leaving`` ones leave, the rest rejoin; the
        leader assigns ``assignment_for`` each member and everyone syncs (unless ``sync`` is
        False: the round stops after JoinGroup, the group CompletingRebalance). Where every
        JoinGroup is answered with a REJOIN error, all join again (at most REJOIN_TRIES
        times); ``Round.rejoined`` keeps those answers."""
        joining, leaving = list(joining), list(leaving)
        staying = [m for m in self.members if m not in leaving]
        r = Round()
        for m in joining:
            if not m.member_id and m.instance_id is None and self.versions[ApiKey.JOIN_GROUP] >= 4:
                r.first_joins[m.client_id] = self.ask_member_id(m)
        if leaving:
            v = self.versions[ApiKey.LEAVE_GROUP]
            r.leave = self.request(ApiKey.LEAVE_GROUP, v, self.leave_body(leaving)).body
            for m in leaving:
                self.members.remove(m)
        pending = {m.client_id: (m, self.join(m)) for m in joining}
        if staying and (joining or leaving):
            self.await_rebalance(staying, r)
        pending.update({m.client_id: (m, self.join(m)) for m in staying})
        members = [*staying, *joining]
        self.members = members
        self.finish_joins(r, pending)
        for _ in range(REJOIN_TRIES):
            if not r.joins or any(b["ErrorCode"] not in REJOIN for b in r.joins.values()):
                break
            r.rejoined.append(r.joins)
            r.joins = {}
            time.sleep(REJOIN_PAUSE)
            self.finish_joins(r, {m.client_id: (m, self.join(m)) for m in members})
        if sync and all(b["ErrorCode"] == ErrorCode.NONE for b in r.joins.values()):
            self.sync_all(r)
        return r

    def finish_joins(self, r: Round, pending: dict[str, tuple[Member, Future]]) -> None:
        """The round's JoinGroup answers, each noted in ``r`` and in its member."""
        for cid, (m, fut) in pending.items():
            body = self.finish(m, ApiKey.JOIN_GROUP, fut)
            m.joins.append(body)
            r.joins[cid] = body
            if body["ErrorCode"] == ErrorCode.NONE:
                m.member_id, m.generation, m.leader = (
                    body["MemberId"],
                    body["GenerationId"],
                    body["Leader"],
                )

    def sync_all(self, r: Round) -> None:
        leader = next((m for m in self.members if m.member_id == m.leader), None)
        if leader is None:
            return
        listed = [x["MemberId"] for x in r.joins[leader.client_id]["Members"]]
        r.assigned = {mid: assignment_for(mid, leader.generation) for mid in listed}
        futs = [
            (
                m,
                self.start(
                    m, ApiKey.SYNC_GROUP, self.sync_body(m, r.assigned if m is leader else {})
                ),
            )
            for m in self.members
        ]
        for m, fut in futs:
            body = self.finish(m, ApiKey.SYNC_GROUP, fut)
            r.syncs[m.client_id] = body
            if body["ErrorCode"] == ErrorCode.NONE:
                m.assignment = body["Assignment"]

    def leave_all(self) -> None:
        """Best effort: the suite's members leave (the group may then be deleted)."""
        if not self.members:
            return
        try:
            self.request(
                ApiKey.LEAVE_GROUP, self.versions[ApiKey.LEAVE_GROUP], self.leave_body(self.members)
            )
        except (verify.Failed, ConnectionError, TimeoutError):
            pass
        self.members = []

    def cleanup(self) -> None:
        """Leave, then delete the group where the target has DeleteGroups (best effort; where
        it has none the suite-named group stays). Clean-up is not what a test judges: it never
        decides a verdict, and the API it uses is not noted."""
        self.leave_all()
        if ApiKey.DELETE_GROUPS not in self.harness.advertised:
            return
        try:
            version = quiet_version(self.harness, ApiKey.DELETE_GROUPS)
            delete_groups(self.harness, self.admin, [self.name], version)
        except Exception:
            pass

    # --- administration ------------------------------------------------------------------------

    def describe(self, version: int | None = None) -> dict:
        v = version if version is not None else self.harness.pick_version(ApiKey.DESCRIBE_GROUPS)
        body = {"Groups": [self.name], "IncludeAuthorizedOperations": False}
        groups = self.request(ApiKey.DESCRIBE_GROUPS, v, body).body["Groups"]
        if len(groups) != 1:  # a precondition of the caller's checks: credits nothing
            raise verify.Failed(f"DescribeGroups v{v} of one group gave {len(groups)}")
        return groups[0]


@dataclass(frozen=True)
class Coordinator:
    node_id: int
    endpoint: Endpoint


def find_coordinator(
    harness: Harness, group: str, version: int, *reqs: str, key_type: int = GROUP_KEY
) -> Coordinator:
    """FindCoordinator of ``group`` from the bootstrap, repeated while the coordinator is
    being placed; a final answer other than NONE fails ``reqs``."""
    conn = harness.connect()
    deadline = time.monotonic() + COORDINATOR_WAIT
    used = [version]
    lowest = 0 if key_type == GROUP_KEY else 1  # KeyType: v1+

    def body_at(v: int) -> dict[str, Any]:
        used[0] = v
        if v >= 4:
            return {"KeyType": key_type, "CoordinatorKeys": [group]}
        return {"Key": group, "KeyType": key_type}

    while True:
        # a version whose answers do not decode costs one finding (a set-up defect, issue 42),
        # then the next lower one is used: ``reqs`` judge the coordinator it names
        got = verify.setup_response(
            conn, ApiKey.FIND_COORDINATOR, body_at, f"{lowest}-{version}", judged_by="GROUPS.R1"
        )
        version, got = used[0], got.body
        entry = got["Coordinators"][0] if version >= 4 and got.get("Coordinators") else got
        code = entry.get("ErrorCode")
        if code not in TRANSIENT or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    message = (
        f"FindCoordinator v{version} of group {group}: error {code} "
        f"({error_name(code)}) after {COORDINATOR_WAIT:.0f} s"
    )
    if reqs:
        verify.check(code == ErrorCode.NONE, message, *reqs)
    elif (
        code != ErrorCode.NONE
    ):  # a precondition of the caller's checks: fails them, credits nothing
        raise verify.Failed(message)
    return Coordinator(entry["NodeId"], Endpoint(entry["Host"], entry["Port"]))


def ready_coordinator(harness: Harness, group: str, version: int) -> Coordinator:
    """The group's coordinator once it answers for the group. Right after the offsets topic is
    made, a KRaft broker may not yet have applied its leadership of the group's partition and
    answers NOT_COORDINATOR, or COORDINATOR_LOAD_IN_PROGRESS while it loads (Kafka's clients
    look the coordinator up again and retry): set-up waits that out with a DescribeGroups of
    the group, for at most COORDINATOR_WAIT; then the tests judge the broker last found."""
    coordinator = find_coordinator(harness, group, version)
    if ApiKey.DESCRIBE_GROUPS not in harness.advertised:
        return coordinator
    describe = harness.pick_version(ApiKey.DESCRIBE_GROUPS)
    body = {"Groups": [group], "IncludeAuthorizedOperations": False}
    deadline = time.monotonic() + COORDINATOR_WAIT
    while True:
        conn = harness.connect(coordinator.endpoint)
        got = verify.expect_response(conn, ApiKey.DESCRIBE_GROUPS, describe, body).body
        codes = {c for _, c in verify.error_codes(harness, got, ApiKey.DESCRIBE_GROUPS)}
        if not codes & TRANSIENT or time.monotonic() > deadline:
            return coordinator
        time.sleep(0.1)
        coordinator = find_coordinator(harness, group, version)


def coordinator_request(
    harness: Harness, conn: SyncConnection, api: int, version: int, body: dict
) -> Response:
    """A request whose top-level (or only group's) error may be transient: asked again."""
    deadline = time.monotonic() + COORDINATOR_WAIT
    while True:
        resp = verify.expect_response(conn, api, version, body)
        codes = {c for _, c in verify.error_codes(harness, resp.body, api)}
        if not codes & TRANSIENT or time.monotonic() > deadline:
            return resp
        time.sleep(0.1)


def delete_groups(
    harness: Harness, conn: SyncConnection, names: list[str], version: int | None = None
) -> dict[str, int]:
    version = version if version is not None else harness.pick_version(ApiKey.DELETE_GROUPS)
    body = coordinator_request(
        harness, conn, ApiKey.DELETE_GROUPS, version, {"GroupsNames": names}
    ).body
    return {r["GroupId"]: r["ErrorCode"] for r in body["Results"]}


def list_groups(
    harness: Harness,
    endpoint: Endpoint | None = None,
    states: list[str] | None = None,
    conn: SyncConnection | None = None,
) -> dict[str, dict]:
    """ListGroups of one broker (the bootstrap unless named): group id -> entry."""
    version = harness.pick_version(ApiKey.LIST_GROUPS, "4+" if states is not None else None)
    conn = conn or harness.connect(endpoint or "client")
    body = {"StatesFilter": states or [], "TypesFilter": []}
    got = coordinator_request(harness, conn, ApiKey.LIST_GROUPS, version, body).body
    if got["ErrorCode"] != ErrorCode.NONE:  # a precondition of the caller's checks: credits nothing
        raise verify.Failed(f"ListGroups v{version}: error {got['ErrorCode']}")
    return {g["GroupId"]: g for g in got["Groups"]}


def list_everywhere(
    harness: Harness,
    states: list[str] | None = None,
    conns: list[SyncConnection] | None = None,
) -> dict[str, dict]:
    """ListGroups of every broker, merged (each broker lists the groups it coordinates);
    ``conns``: kept connections to every broker."""
    out: dict[str, dict] = {}
    for conn in conns or [harness.connect(b.endpoint) for b in cluster.brokers(harness)]:
        out.update(list_groups(harness, states=states, conn=conn))
    return out


def min_session_ms(harness: Harness) -> int:
    """The shortest member session the target accepts (group.min.session.timeout.ms where a
    broker reports it; Kafka's default otherwise)."""
    brokers = cluster.brokers(harness)
    got = cluster.broker_configs(harness, brokers[0], ["group.min.session.timeout.ms"]) or {}
    try:
        return int(got.get("group.min.session.timeout.ms", KAFKA_MIN_SESSION_MS))
    except ValueError:
        return KAFKA_MIN_SESSION_MS
