"""KIP-932 share groups in the group coordinator (library, manual clock, in-memory log):
epochs, the deferred initialization of share partitions, the simple assignor sharing
partitions, the errors Kafka 4.4.0 gives, leaving, session timeouts, ListGroups /
DescribeGroups / DeleteGroups, and a replay of the log."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.protocol import ErrorCode as E
from reference_impl.groups.coordinator import GroupConfig, GroupCoordinator
from reference_impl.groups.scheduler import ManualScheduler
from reference_impl.groups.share import ShareHeartbeatRequest, ShareHeartbeatResult, simple_assign
from reference_impl.groups.store import MemoryOffsetsStore

T1 = uuid.UUID(int=1)


class World:
    def __init__(self, store: MemoryOffsetsStore | None = None, partitions: int = 3) -> None:
        self.clock = ManualScheduler()
        self.store = store or MemoryOffsetsStore(self.clock.wall_ms)
        self.topics: dict[str, tuple[uuid.UUID, int]] = {"t": (T1, partitions)}
        cfg = GroupConfig(offsets_topic_partitions=1, share_session_timeout_ms=1500)
        self.c = GroupCoordinator(self.clock, self.store, cfg, topics=lambda: dict(self.topics))
        self.c.finish_loading(0, self.c.start_loading(0), self.store.read(0))
        self.epochs: dict[str, int] = {}

    def hb(self, member: str, epoch: int | None = None, **kw) -> ShareHeartbeatResult:
        epoch = self.epochs.get(member, 0) if epoch is None else epoch
        if epoch == 0 and "subscribed_topic_names" not in kw:
            kw["subscribed_topic_names"] = ["t"]
        got: list[ShareHeartbeatResult] = []
        self.c.share.heartbeat(ShareHeartbeatRequest("g", member, epoch, **kw), got.append)
        assert len(got) == 1
        if got[0].error == 0:
            self.epochs[member] = got[0].member_epoch
        return got[0]

    def settle(self, members: list[str]) -> None:
        """Past the assignment interval and the initialization: every member heartbeats."""
        for _ in range(2):
            self.clock.advance(1000)
            for m in members:
                assert self.hb(m).error == 0

    def group(self):
        return self.c.groups["g"]


def test_join_initialize_then_assign_as_kafka() -> None:
    w = World()
    a = w.hb("a")
    # Kafka 4.4.0: epoch 2 (the member, the topics), no partitions before they are initialized
    assert a.error == 0 and a.member_epoch == 2 and a.assignment == {}
    assert a.heartbeat_interval_ms == 5000
    w.clock.advance(0)  # the share partitions are initialized: the group epoch moves
    assert w.group().group_epoch == 3
    w.clock.advance(1000)
    a2 = w.hb("a")
    assert a2.member_epoch == 3 and a2.assignment == {T1: {0, 1, 2}}
    assert w.hb("a").assignment is None  # unchanged: not sent


def test_more_members_than_partitions_share_them() -> None:
    w = World()
    names = ["a", "b", "c", "d"]
    for n in names:
        w.hb(n)
    w.settle(names)
    held = [w.group().members[n].assigned.get(T1, set()) for n in names]
    assert all(held), held  # every member holds a partition
    counts = [sum(p in h for h in held) for p in range(3)]
    assert counts == [2, 2, 2]  # ceil(4 / 3) members per partition
    assert len({w.group().members[n].member_epoch for n in names}) == 1


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 9), st.integers(1, 9), st.integers(0, 2**16))
def test_simple_assignor_balance(members: int, partitions: int, seed: int) -> None:
    ids = [f"m{(i * 7919 + seed) % 10007}-{i}" for i in range(members)]
    tps = [(T1, p) for p in range(partitions)]
    previous = simple_assign(ids[: max(1, members // 2)], tps[: max(1, partitions - 1)], {})
    out = simple_assign(ids, tps, previous)
    sharing = max(1, -(-members // partitions))
    per_partition = [sum(p in out[m].get(T1, set()) for m in ids) for p in range(partitions)]
    assert all(c == sharing for c in per_partition) or members < partitions
    assert all(c <= sharing for c in per_partition)
    loads = [len(out[m].get(T1, set())) for m in ids]
    assert max(loads) - min(loads) <= 1
    if members >= partitions:
        assert min(loads) >= 1
    else:
        assert sum(loads) == partitions


def test_errors_as_kafka() -> None:
    w = World()
    assert w.hb("", 0).error == E.INVALID_REQUEST and w.hb("", 0).message is None
    r = w.hb("a", 0, subscribed_topic_names=[])
    assert (r.error, r.message) == (
        E.INVALID_REQUEST,
        "SubscribedTopicNames must be set in first request.",
    )
    assert w.hb("a", 0, rack_id="").message == "RackId can't be empty."
    assert w.hb("a", -2).message == "MemberEpoch is invalid."
    assert w.hb("a", 1).error == E.GROUP_ID_NOT_FOUND
    assert w.hb("a", -1).error == E.GROUP_ID_NOT_FOUND
    assert w.hb("a").error == 0
    assert w.hb("x", 2).error == E.UNKNOWN_MEMBER_ID
    r = w.hb("a", 5)
    assert r.error == E.FENCED_MEMBER_EPOCH and "greater member epoch (5)" in (r.message or "")
    w.clock.advance(0)
    w.clock.advance(1000)
    assert w.hb("a").member_epoch == 3
    assert w.hb("a", 2).error == 0  # the previous epoch: a lost answer
    assert w.hb("a", 1).error == E.FENCED_MEMBER_EPOCH


def test_leave_session_timeout_and_group_apis() -> None:
    w = World()
    w.hb("a")
    w.hb("b")
    w.settle(["a", "b"])
    assert w.c.list_groups()[1][0].group_type == "share"
    assert (w.c.list_groups()[1][0].protocol_type, w.c.list_groups()[1][0].state) == (
        "share",
        "Stable",
    )
    assert w.c.describe_group("g")[1].state == "Dead"
    done: list = []
    w.c.delete_groups(["g"], done.append)
    assert done[-1] == {"g": E.NON_EMPTY_GROUP}
    epoch = w.group().group_epoch
    left = w.hb("a", -1)
    assert (left.error, left.member_id, left.member_epoch) == (0, "a", -1)
    assert w.group().group_epoch == epoch + 1
    assert w.hb("a", -1).error == E.UNKNOWN_MEMBER_ID
    w.clock.advance(1500)  # b is silent for its session timeout
    assert not w.group().members and w.group().state == "Empty"
    w.c.delete_groups(["g"], done.append)
    assert done[-1] == {"g": 0} and "g" not in w.c.groups


def test_other_types_refused_and_replay() -> None:
    w = World()
    assert w.hb("a").error == 0
    w.clock.advance(0)
    w.clock.advance(1000)
    assert w.hb("a").assignment == {T1: {0, 1, 2}}
    again = World(w.store)
    g = again.c.groups["g"]
    assert g.group_type == "share" and g.members["a"].assigned == {T1: {0, 1, 2}}
    assert g.group_epoch == w.group().group_epoch
    assert again.c.share.describe_group("g")[0] == 0
    assert again.c.share.describe_group("h")[0] == E.GROUP_ID_NOT_FOUND


#: what Kafka 4.4.0 accepts (True) or refuses with INVALID_CONFIG in IncrementalAlterConfigs on
#: a GROUP resource (validateOnly; measured on the wire, issue 39)
KAFKA_GROUP_CONFIGS = [
    ("share.session.timeout.ms", "44999", False),
    ("share.session.timeout.ms", "45000", True),
    ("share.session.timeout.ms", "60001", False),
    ("share.heartbeat.interval.ms", "4999", False),
    ("share.heartbeat.interval.ms", "15000", True),
    ("share.record.lock.duration.ms", "14999", False),
    ("share.record.lock.duration.ms", "60000", True),
    ("share.record.lock.duration.ms", "60001", False),
    ("share.delivery.count.limit", "1", False),
    ("share.delivery.count.limit", "10", True),
    ("share.delivery.count.limit", "11", False),
    ("share.auto.offset.reset", "earliest", True),
    ("share.auto.offset.reset", "by_duration:PT1H", True),
    ("share.auto.offset.reset", "EARLIEST", False),
    ("share.auto.offset.reset", "foo", False),
    ("share.isolation.level", "read_committed", True),
    ("share.isolation.level", "x", False),
    ("share.partition.max.record.locks", "99", False),
    ("share.partition.max.record.locks", "4000", True),
    ("share.partition.max.record.locks", "4001", False),
    ("share.assignment.interval.ms", "0", True),
    ("share.renew.acknowledge.enable", "false", True),
]


def test_share_group_configs_bounded_as_kafka() -> None:
    from reference_impl.config import GROUP_CONFIGS, validate_config_value

    for name, value, accepted in KAFKA_GROUP_CONFIGS:
        assert (validate_config_value(GROUP_CONFIGS[name], value) is None) == accepted, name
    defaults = {n: d.default for n, d in GROUP_CONFIGS.items() if n.startswith("share.")}
    assert defaults["share.auto.offset.reset"] == "latest"
    assert defaults["share.record.lock.duration.ms"] == "30000"
    assert defaults["share.delivery.count.limit"] == "5"


def test_share_group_offsets_admin() -> None:
    """DescribeShareGroupOffsets / Alter… / Delete… as Kafka 4.4.0 answers them (probed on the
    wire, issue 39): refused while the group has a member, applied once it is empty, kept in the
    group's record."""
    w = World()

    def alter(offsets):
        got: list = []
        w.c.share.alter_offsets("g", offsets, lambda *r: got.append(r))
        return got[0]

    def delete(names, group="g"):
        got: list = []
        w.c.share.delete_offsets(group, names, lambda *r: got.append(r))
        return got[0]

    error, _, found = w.c.share.describe_offsets("g", [("t", [0, 1])])
    assert error == 0 and found[0].start_offsets == {0: -1, 1: -1}  # no group yet: no error
    assert alter([("t", [(0, 5)])]) == (0, None, {"t": {0: 0}})  # answered, no group made
    assert delete(["t"])[0] == E.GROUP_ID_NOT_FOUND
    w.hb("a")
    w.clock.advance(0)  # its partitions are initialized
    assert alter([("t", [(0, 5)])])[:2] == (E.NON_EMPTY_GROUP, "The group is not empty.")
    assert delete(["t"])[0] == E.NON_EMPTY_GROUP
    w.hb("a", -1)
    assert alter([("t", [(0, 5), (7, 0)]), ("nope", [(0, 0)])]) == (
        0,
        None,
        {"t": {0: 0, 7: E.UNKNOWN_TOPIC_OR_PARTITION}, "nope": {0: E.UNKNOWN_TOPIC_OR_PARTITION}},
    )
    _, _, found = w.c.share.describe_offsets("g", None)
    assert [(t.topic, t.start_offsets) for t in found] == [("t", {0: 5, 1: -1, 2: -1})]
    again = World(w.store)  # the start offsets come back with the group's record
    assert again.c.share.describe_offsets("g", [("t", [0])])[2][0].start_offsets == {0: 5}
    assert delete(["t", "nope"]) == (0, None, {"t": 0, "nope": E.UNKNOWN_TOPIC_OR_PARTITION})
    assert w.c.share.describe_offsets("g", None)[2] == []
    assert w.c.share.describe_offsets("g", [("t", [0])])[2][0].start_offsets == {0: -1}


def test_the_last_member_leaving_moves_the_assignment_epoch() -> None:
    """Kafka 4.4.0 (diff --models): a member leaving beside others leaves the target assignment
    at its epoch until the next heartbeat; the last one leaving moves it to the new group epoch."""
    w = World()
    w.hb("a")
    w.hb("b")
    w.settle(["a", "b"])
    assigned = w.group().assignment_epoch
    assert w.hb("b", -1).error == 0
    assert w.group().assignment_epoch == assigned < w.group().group_epoch
    assert w.hb("a", -1).error == 0
    assert w.group().assignment_epoch == w.group().group_epoch and not w.group().target
