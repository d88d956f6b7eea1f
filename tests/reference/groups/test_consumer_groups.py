"""KIP-848 consumer groups in the group coordinator (library, manual clock, in-memory log):
epochs, the server-side assignors, incremental reconciliation, the errors, leaving, static
members, timeouts, subscriptions by name and regex, offsets with member epochs, ListGroups /
DescribeGroups / DeleteGroups, and a replay of the log."""

from __future__ import annotations

import uuid

from conformance.protocol import ErrorCode as E
from reference_impl.groups.consumer import HeartbeatRequest, HeartbeatResult
from reference_impl.groups.coordinator import GroupConfig, GroupCoordinator
from reference_impl.groups.group_types import OffsetAndMetadata
from reference_impl.groups.scheduler import ManualScheduler
from reference_impl.groups.store import MemoryOffsetsStore

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


class World:
    def __init__(self, store: MemoryOffsetsStore | None = None, interval: int = 0) -> None:
        self.clock = ManualScheduler()
        self.store = store or MemoryOffsetsStore(self.clock.wall_ms)
        self.topics: dict[str, tuple[uuid.UUID, int]] = {"t": (T1, 3)}
        cfg = GroupConfig(
            offsets_topic_partitions=1,
            consumer_session_timeout_ms=1000,
            consumer_assignment_interval_ms=interval,
        )
        self.c = GroupCoordinator(self.clock, self.store, cfg, topics=lambda: dict(self.topics))
        self.c.finish_loading(0, self.c.start_loading(0), self.store.read(0))

    def hb(self, member: str, epoch: int, owned=(), **kw) -> HeartbeatResult:
        fields = dict(rebalance_timeout_ms=500, subscribed_topic_names=["t"]) if epoch == 0 else {}
        fields.update(kw)
        req = HeartbeatRequest(
            "g",
            member,
            epoch,
            topic_partitions=None if owned is None else [(t, sorted(ps)) for t, ps in owned],
            **fields,
        )
        got: list[HeartbeatResult] = []
        self.c.consumer.heartbeat(req, got.append)
        assert len(got) == 1
        return got[0]

    def group(self):
        return self.c.groups["g"]


def owned_of(r: HeartbeatResult) -> list:
    return sorted((r.assignment or {}).items())


def test_join_epochs_and_incremental_reconciliation() -> None:
    w = World()
    a = w.hb("a", 0)
    # Kafka 4.4.0: one step for the new member, one for the subscribed topics' metadata
    assert a.error == 0 and a.member_epoch == 2 and a.assignment == {T1: {0, 1, 2}}
    b = w.hb("b", 0)
    # b waits: a still owns everything; the group epoch moved to 3
    assert b.error == 0 and b.member_epoch == 3 and b.assignment == {}
    assert w.group().state == "Reconciling" and w.group().group_epoch == 3
    a2 = w.hb("a", 2, owned=owned_of(a))
    # a must give partitions back first: same epoch, a smaller assignment
    assert a2.member_epoch == 2 and a2.assignment is not None
    revoked = {0, 1, 2} - a2.assignment[T1]
    assert revoked and w.hb("b", 3, owned=[]).assignment in (None, {})  # not released yet
    a3 = w.hb("a", 2, owned=owned_of(a2))  # acknowledged: a moves to epoch 3
    assert a3.member_epoch == 3
    b2 = w.hb("b", 3, owned=[])
    assert b2.assignment == {T1: revoked}
    assert w.group().state == "Stable"


def test_errors_as_kafka() -> None:
    w = World()
    assert w.hb("a", 0).error == 0
    assert w.hb("a", 5, owned=[]).error == E.FENCED_MEMBER_EPOCH
    assert w.hb("zz", 1, owned=[]).error == E.UNKNOWN_MEMBER_ID
    assert w.hb("", 0, version=1).error == E.INVALID_REQUEST
    assert w.hb("x", 0, rebalance_timeout_ms=-1).error == E.INVALID_REQUEST
    assert w.hb("x", 0, owned=[(T1, [0])]).error == E.INVALID_REQUEST
    assert w.hb("x", 0, server_assignor="nope").error == E.UNSUPPORTED_ASSIGNOR
    assert w.hb("x", 0, subscribed_topic_regex="(").error == E.INVALID_REGULAR_EXPRESSION
    assert w.hb("x", -3).error == E.INVALID_REQUEST
    r = HeartbeatRequest("other", "m", 3, topic_partitions=[])
    got: list = []
    w.c.consumer.heartbeat(r, got.append)
    assert got[0].error == E.GROUP_ID_NOT_FOUND
    v0 = w.hb("", 0, version=0)
    assert v0.error == 0 and v0.member_id


def test_leave_and_static_membership() -> None:
    w = World()
    s = w.hb("s1", 0, instance_id="i")
    assert s.assignment == {T1: {0, 1, 2}}
    assert w.hb("s2", 0, instance_id="i").error == E.UNRELEASED_INSTANCE_ID
    assert w.hb("s2", -2, instance_id="i").error == E.FENCED_INSTANCE_ID
    left = w.hb("s1", -2, instance_id="i")
    assert left.error == 0 and left.member_epoch == -2
    back = w.hb("s3", 0, instance_id="i")  # a new member id takes its place and partitions
    assert back.error == 0 and back.assignment == {T1: {0, 1, 2}}
    epoch = w.group().group_epoch
    bye = w.hb("s3", -1, instance_id="i")
    assert bye.error == 0 and bye.member_epoch == -1
    assert w.group().group_epoch == epoch + 1 and w.group().state == "Empty"
    assert w.hb("s3", -1).error == E.UNKNOWN_MEMBER_ID


def test_session_and_rebalance_timeouts_move_partitions() -> None:
    w = World()
    a = w.hb("a", 0)
    w.clock.advance(600)
    b = w.hb("b", 0)
    w.clock.advance(600)  # a silent for 1200 ms > 1000: removed, its partitions free
    assert "a" not in w.group().members
    b2 = w.hb("b", b.member_epoch, owned=[])
    assert b2.assignment == {T1: {0, 1, 2}} and a.member_epoch < b2.member_epoch
    # a member that does not revoke within its rebalance timeout (500 ms) is removed
    w.hb("c", 0)
    w.hb("b", b2.member_epoch, owned=owned_of(b2))  # told to revoke
    w.clock.advance(400)
    w.hb("c", w.group().members["c"].member_epoch, owned=[])
    w.clock.advance(200)
    assert "b" not in w.group().members


def test_regex_and_new_partitions_are_picked_up() -> None:
    w = World()
    r = w.hb("a", 0, subscribed_topic_names=None, subscribed_topic_regex="t.*")
    assert r.assignment == {T1: {0, 1, 2}}
    w.topics["t2"] = (T2, 2)
    w.topics["t"] = (T1, 4)
    w.topics["other"] = (uuid.UUID(int=3), 1)
    r2 = w.hb("a", r.member_epoch, owned=owned_of(r))
    assert r2.member_epoch == r.member_epoch + 1
    assert r2.assignment == {T1: {0, 1, 2, 3}, T2: {0, 1}}


def test_range_assignor() -> None:
    w = World()
    w.topics["t"] = (T1, 5)
    a = w.hb("a", 0, server_assignor="range")
    b = w.hb("b", 0, server_assignor="range")
    w.hb("a", a.member_epoch, owned=owned_of(a))
    w.hb("a", a.member_epoch, owned=[(T1, [0, 1, 2])])
    b2 = w.hb("b", b.member_epoch, owned=[])
    assert w.group().target == {"a": {T1: {0, 1, 2}}, "b": {T1: {3, 4}}}
    assert b2.assignment == {T1: {3, 4}}


def test_offsets_with_member_epochs_and_admin_apis() -> None:
    w = World()
    a = w.hb("a", 0)
    got: list = []
    om = {("t", 0): OffsetAndMetadata(5)}
    w.c.offsets.commit_offsets("g", "a", None, a.member_epoch + 1, om, got.append)
    w.c.offsets.commit_offsets("g", "zz", None, 1, om, got.append)
    w.c.offsets.commit_offsets("g", "a", None, a.member_epoch, om, got.append)
    w.c.offsets.commit_offsets("g", "a", None, a.member_epoch, om, got.append, api_version=8)
    w.c.offsets.commit_offsets("g", "", None, -1, om, got.append)  # an admin's, to a busy group
    assert [g[("t", 0)] for g in got] == [
        E.STALE_MEMBER_EPOCH,
        E.UNKNOWN_MEMBER_ID,
        0,
        E.UNSUPPORTED_VERSION,  # a consumer-protocol member commits with v9+ (Kafka 4.4.0)
        E.UNKNOWN_MEMBER_ID,
    ]
    assert w.c.offsets.fetch_offsets("g", None, "a", 9)[0] == E.STALE_MEMBER_EPOCH
    assert w.c.offsets.fetch_offsets("g", None, "a", a.member_epoch)[1][("t", 0)].offset == 5
    _, listed = w.c.list_groups(types=["consumer"])
    assert [(g.group_id, g.group_type, g.state) for g in listed] == [("g", "consumer", "Stable")]
    assert w.c.list_groups(types=["classic"])[1] == []
    assert w.c.describe_group("g")[1].state == "Dead"
    deleted: list = []
    w.c.delete_groups(["g"], deleted.append)
    assert deleted == [{"g": E.NON_EMPTY_GROUP}]
    w.hb("a", -1)
    w.c.delete_groups(["g"], deleted.append)
    assert deleted[-1] == {"g": 0} and "g" not in w.c.groups


def test_a_replay_brings_the_group_back() -> None:
    w = World()
    a = w.hb("a", 0, instance_id="i")
    b = w.hb("b", 0)
    again = World(w.store)
    g = again.group()
    assert set(g.members) == {"a", "b"} and g.group_epoch == w.group().group_epoch
    assert g.members["a"].assigned == w.group().members["a"].assigned
    assert again.hb("a", a.member_epoch, owned=owned_of(a)).error == 0
    assert b.error == 0


def test_classic_and_consumer_groups_mix_only_as_consumers() -> None:
    """A classic join of another protocol type (or unreadable metadata) to a consumer group is
    refused; an Empty classic group becomes a consumer group, one with members whose metadata
    is not a consumer subscription is not upgraded (the migration: test_consumer_migration)."""
    from reference_impl.groups.group import JoinRequest

    w = World()
    w.hb("a", 0)
    joined: list = []
    for ptype, metadata in (("connect", b"x"), ("consumer", b"")):
        req = JoinRequest("g", "m", 10_000, 10_000, ptype, [("range", metadata)])
        w.c.classic.join_group(req, joined.append)
    assert [j.error for j in joined] == [E.INCONSISTENT_GROUP_PROTOCOL] * 2
    empty = JoinRequest("c", "", 10_000, 10_000, "consumer", [("r", b"")])
    w.c.classic.join_group(empty, joined.append)
    assert joined[-1].error == E.MEMBER_ID_REQUIRED and w.c.groups["c"].group_type == "classic"
    got: list = []
    for group in ("c", "d"):
        if group == "d":
            join = JoinRequest("d", "", 10_000, 10_000, "consumer", [("r", b"")])
            join.require_known_member_id = False
            w.c.classic.join_group(join, joined.append)
            w.clock.advance(3_500)
            assert joined[-1].error == 0
        r = HeartbeatRequest(
            group, "m", 0, rebalance_timeout_ms=1, subscribed_topic_names=[], topic_partitions=[]
        )
        w.c.consumer.heartbeat(r, got.append)
    assert [g.error for g in got] == [0, E.GROUP_ID_NOT_FOUND]
    assert w.c.groups["c"].group_type == "consumer"


def test_an_older_epoch_commits_the_partitions_owned_since_kip_1251() -> None:
    w = World()
    a = w.hb("a", 0)
    w.hb("b", 0)
    a2 = w.hb("a", 2, owned=owned_of(a))  # revoke
    a3 = w.hb("a", 2, owned=owned_of(a2))  # acknowledged: epoch 3
    assert a3.member_epoch == 3
    kept, gone = min(a2.assignment[T1]), min({0, 1, 2} - a2.assignment[T1])
    got: list = []
    om = OffsetAndMetadata(1)
    offsets = {("t", kept): om, ("t", gone): om}
    w.c.offsets.commit_offsets("g", "a", None, 2, offsets, got.append)
    w.c.offsets.commit_offsets("g", "a", None, 4, {("t", kept): om}, got.append)
    assert got == [
        {("t", kept): 0, ("t", gone): E.STALE_MEMBER_EPOCH},
        {("t", kept): E.STALE_MEMBER_EPOCH},
    ]


def test_the_target_is_computed_at_most_every_assignment_interval() -> None:
    """Kafka 4.4.0 (consumer.assignment.interval.ms, 1 s; 0.5 s here): a member joining within
    the interval after the last target reconciles to that target first (the group is
    Assigning); a heartbeat after the interval computes the new one."""
    w = World(interval=500)
    a = w.hb("a", 0)
    assert a.member_epoch == 2 and a.assignment == {T1: {0, 1, 2}}  # the first at once
    b = w.hb("b", 0)
    assert (b.member_epoch, b.assignment) == (2, {})
    assert (w.group().state, w.group().group_epoch, w.group().assignment_epoch) == (
        "Assigning",
        3,
        2,
    )
    w.clock.advance(500)
    a2 = w.hb("a", 2, owned=owned_of(a))
    assert w.group().assignment_epoch == 3 and a2.member_epoch == 2  # revoking first
    assert a2.assignment is not None and len(a2.assignment[T1]) < 3


def test_group_config_bounds_follow_the_node_settings() -> None:
    """A group's consumer.session.timeout.ms and consumer.heartbeat.interval.ms are bounded by
    the node's settings["groups"] where given (a test run lowers them), else by Kafka's
    defaults (45-60 s and 5-15 s)."""
    from reference_impl import config as cfg

    default = cfg.group_configs(None)
    lowered = cfg.group_configs(
        {"consumer_min_session_timeout_ms": 1000, "consumer_min_heartbeat_interval_ms": 500}
    )
    session, interval = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
    assert cfg.validate_config_value(default[session], "1500") is not None
    assert cfg.validate_config_value(default[interval], "500") is not None
    assert cfg.validate_config_value(lowered[session], "1500") is None
    assert cfg.validate_config_value(lowered[interval], "500") is None
    assert cfg.validate_config_value(lowered[session], "500") is not None
    assert cfg.validate_config_value(lowered[session], "60001") is not None


def test_group_config_bounds_keep_every_group_config() -> None:
    """Bounding by the settings changes the two consumer bounds only: every other group config
    (another group type's, say) is kept as defined."""
    from reference_impl import config as cfg

    assert set(cfg.group_configs({"consumer_min_session_timeout_ms": 1000})) == set(
        cfg.GROUP_CONFIGS
    )


def test_described_assignment_keeps_the_partitions_being_revoked() -> None:
    """ConsumerGroupDescribe's Assignment: what a member still answers for, the partitions it
    must give back included until it acknowledges (Kafka 4.4.0, KAFKA-20431)."""
    from reference_impl.handlers.consumer_group_describe import owned

    w = World()
    a = w.hb("a", 0)
    w.hb("b", 0)
    a2 = w.hb("a", 2, owned=owned_of(a))
    member = w.group().members["a"]
    assert a2.assignment is not None and a2.assignment[T1] != {0, 1, 2}
    assert member.assigned == a2.assignment and owned(member) == {T1: {0, 1, 2}}
    w.hb("a", 2, owned=owned_of(a2))  # acknowledged: the revoked partitions are gone
    assert owned(member) == a2.assignment


def unsubscribing(w: World) -> tuple[HeartbeatResult, HeartbeatResult]:
    """Member a owns t and u at the target epoch; it subscribes to t alone within the
    assignment interval (the new target not computed yet): the answer, then the next one."""
    w.topics["u"] = (T2, 2)
    a = w.hb("a", 0, subscribed_topic_names=["t", "u"])
    assert a.assignment == {T1: {0, 1, 2}, T2: {0, 1}}
    changed = w.hb("a", a.member_epoch, owned=owned_of(a), subscribed_topic_names=["t"])
    acked = w.hb("a", a.member_epoch, owned=owned_of(changed))
    return changed, acked


def test_a_subscription_change_revokes_the_dropped_topic_at_once() -> None:
    """Kafka 4.4.0 (CurrentAssignmentBuilder.updateCurrentAssignment, from its bytecode): a
    member at the target epoch that stops subscribing to a topic is told to give back that
    topic's partitions in the answer to its change, at the same epoch, before any new target."""
    w = World(interval=500)
    changed, acked = unsubscribing(w)
    assert (changed.member_epoch, changed.assignment) == (2, {T1: {0, 1, 2}})
    assert w.group().members["a"].pending_revocation == {}  # acknowledged by its next heartbeat
    assert acked.assignment is None and w.group().assignment_epoch == 2


def test_without_the_revocation_the_dropped_topic_stays(monkeypatch) -> None:
    """The fault: subscription changes ignored until the next target (the reference before
    session 13) keeps u with the member, and the check above fails."""
    from reference_impl.groups import consumer_assignment

    plain = consumer_assignment.reconcile
    monkeypatch.setattr(
        "reference_impl.groups.consumer.reconcile",
        lambda group, member, owned, changed=False: plain(group, member, owned),
    )
    changed, _ = unsubscribing(World(interval=500))
    assert changed.assignment is None  # nothing said: it still holds u


def test_the_last_member_gone_the_next_is_assigned_at_once(monkeypatch) -> None:
    """Kafka 4.4.0 (consumerGroupFenceMembers, from its bytecode; seen in diff --models): when the
    last member leaves, the group is Empty with its assignment epoch at the new group epoch and
    its assignment time reset, so a member joining within the interval is assigned at once. The
    fault (the target left as it was) leaves the newcomer waiting out the interval."""
    from reference_impl.groups.modern import ModernGroups

    def joined_after_the_last_left(w: World) -> HeartbeatResult:
        w.hb("a", 0)
        left = w.hb("a", -1)
        assert left.member_epoch == -1 and w.group().state == "Empty"
        return w.hb("b", 0)

    w = World(interval=500)
    b = joined_after_the_last_left(w)
    assert w.group().assignment_epoch == w.group().group_epoch == b.member_epoch == 4
    assert b.assignment == {T1: {0, 1, 2}}
    monkeypatch.setattr(
        "reference_impl.groups.consumer.ConsumerGroups._fence",
        lambda self, group, member: ModernGroups._fence(self, group, member),
    )
    assert joined_after_the_last_left(World(interval=500)).assignment == {}


def test_a_group_assignment_interval_config_applies(monkeypatch) -> None:
    """Kafka 4.4.0's group config consumer.assignment.interval.ms (seen on the wire: at 0, a
    member joining is given the new epoch in its join's answer): the group's value, not the
    broker's, decides whether the target is computed now. The fault (the broker's setting
    alone) keeps the newcomer waiting out the broker's interval."""
    from reference_impl.groups.modern import ModernGroups

    def joined(w: World) -> HeartbeatResult:
        w.c.consumer.group_configs = lambda gid: {"consumer.assignment.interval.ms": "0"}
        w.hb("a", 0)
        return w.hb("b", 0)

    assert joined(World(interval=5000)).member_epoch == 3
    monkeypatch.setattr(
        ModernGroups,
        "_group_config",
        lambda self, group_id, what: self._setting(what),
    )
    assert joined(World(interval=5000)).member_epoch == 2  # the target of epoch 2 still
