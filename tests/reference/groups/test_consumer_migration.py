"""The online migration between classic and consumer groups in the group coordinator (library,
manual clock, in-memory log): classic members inside a consumer group (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, offsets), the upgrade of a classic consumer group when a
ConsumerGroupHeartbeat joins, the downgrade when its last consumer-protocol member leaves, and a
replay of the mixed group."""

from __future__ import annotations

from conformance.protocol import ErrorCode as E
from conformance.suite.groups.members import consumer_subscription as _sub
from reference_impl.groups.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
)
from reference_impl.groups.group import JoinRequest, JoinResult, SyncResult
from tests.reference.groups.test_consumer_groups import T1, World, owned_of


class Classic:
    """One classic consumer member of group "g" driven through the coordinator's classic API."""

    def __init__(self, w: World) -> None:
        self.w, self.member_id, self.generation = w, "", -1

    def join(self, require_known: bool = True, wait_ms: int = 0) -> JoinResult:
        """JoinGroup, answered at once (or after ``wait_ms``: a classic group's rebalance)."""
        req = JoinRequest("g", self.member_id, 6_000, 2_000, "consumer", [("range", _sub(["t"]))])
        req.require_known_member_id = require_known
        got: list[JoinResult] = []
        self.w.c.classic.join_group(req, got.append)
        self.w.clock.advance(wait_ms)
        assert len(got) == 1
        self.member_id = got[0].member_id or self.member_id
        if got[0].error == 0:
            self.generation = got[0].generation_id
        return got[0]

    def sync(self, assignment: bytes = b"") -> SyncResult:
        got: list[SyncResult] = []
        assignments = {self.member_id: assignment} if assignment else {}
        self.w.c.classic.sync_group(
            "g", self.generation, self.member_id, None, "consumer", "range", assignments, got.append
        )
        assert len(got) == 1
        return got[0]

    def heartbeat(self) -> int:
        return self.w.c.classic.heartbeat("g", self.generation, self.member_id, None)


def test_the_codec_reads_what_it_writes() -> None:
    data = encode_assignment({"t": {2, 0}}, 3)
    assert decode_assignment(data) == {"t": {0, 2}}
    assert decode_subscription(_sub(["t", "u"])).topics == ["t", "u"]


def test_a_classic_member_joins_a_consumer_group() -> None:
    w = World()
    a = w.hb("a", 0)
    c = Classic(w)
    assert c.join().error == E.MEMBER_ID_REQUIRED and c.member_id
    joined = c.join()
    member = w.group().members[c.member_id]
    assert joined.error == 0 and joined.generation_id == member.member_epoch
    assert (joined.protocol_type, joined.protocol_name, joined.leader_id) == (
        "consumer",
        "range",
        "",
    )
    assert member.uses_classic and not joined.members
    synced = c.sync()
    assert synced.error == 0 and decode_assignment(synced.assignment) == {}
    # a still owns every partition: the classic member is told to rejoin until it gets its share
    a2 = w.hb("a", a.member_epoch, owned=owned_of(a))
    w.hb("a", a2.member_epoch, owned=owned_of(a2))
    assert c.heartbeat() == E.REBALANCE_IN_PROGRESS
    rejoined = c.join()
    assert rejoined.error == 0 and rejoined.generation_id == w.group().assignment_epoch
    got = decode_assignment(c.sync().assignment)["t"]
    assert got and not got & w.group().members["a"].assigned[T1]
    assert c.heartbeat() == 0
    # offsets with its generation (the member epoch), at any OffsetCommit version
    cg, epoch = w.c.consumer, rejoined.generation_id
    check = lambda gen: cg.validate_commit(  # noqa: E731
        w.group(), c.member_id, None, gen, transactional=False, api_version=8
    )
    assert (check(epoch), check(epoch + 1)) == (0, E.ILLEGAL_GENERATION)
    error, errors = w.c.classic.leave_group("g", [(c.member_id, None)])
    assert (error, errors) == (0, [0]) and c.member_id not in w.group().members


def test_a_classic_members_session_is_its_own() -> None:
    w = World()
    a = w.hb("a", 0)
    c = Classic(w)
    c.join(require_known=False)
    assert c.sync().error == 0
    for _ in range(14):  # a heartbeats within its 1 s session, c not at all
        w.clock.advance(400)
        a = w.hb("a", a.member_epoch, owned=owned_of(a) if a.assignment else [])
    assert c.member_id in w.group().members  # 5.6 s of its 6 s session
    for _ in range(2):
        w.clock.advance(400)
        w.hb("a", a.member_epoch, owned=[])
    assert c.member_id not in w.group().members


def test_upgrade_then_downgrade() -> None:
    w = World()
    c = Classic(w)
    c.join(require_known=False, wait_ms=3_500)  # the initial rebalance delay
    assert c.generation == 1
    assert c.sync(encode_assignment({"t": {0, 1, 2}}, 0)).error == 0
    assert w.group().group_type == "classic"
    b = w.hb("b", 0)
    g = w.group()
    assert b.error == 0 and g.group_type == "consumer"
    assert g.members[c.member_id].member_epoch == 1
    assert g.members[c.member_id].assigned == {T1: {0, 1, 2}} and b.assignment == {}
    assert c.heartbeat() == E.REBALANCE_IN_PROGRESS
    assert c.join().error == 0
    # revoking: its assignment shrinks, b gets partitions only once c gave them back
    kept = decode_assignment(c.sync().assignment).get("t", set())
    assert kept != {0, 1, 2}
    c.join()
    b2 = w.hb("b", b.member_epoch, owned=[])
    assert b2.assignment and not b2.assignment[T1] & kept
    left = w.hb("b", -1)
    assert left.error == 0
    classic = w.group()
    assert classic.group_type == "classic" and list(classic.members) == [c.member_id]
    assert classic.state.value == "PreparingRebalance"
    assert c.heartbeat() in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION)


def test_a_replay_keeps_classic_members() -> None:
    w = World()
    w.hb("a", 0)
    c = Classic(w)
    c.join(require_known=False)
    again = World(w.store)
    member = again.group().members[c.member_id]
    assert member.uses_classic and member.classic_session_timeout_ms == 6_000


def test_classic_members_keep_a_common_protocol() -> None:
    """A classic member naming no protocol the group's classic members all support is refused
    (Kafka's throwIfClassicProtocolIsNotSupported), so a downgrade can always choose one."""
    w = World()
    w.hb("b", 0)
    got: list[JoinResult] = []
    for name in ("range", "roundrobin"):
        req = JoinRequest("g", "", 6_000, 2_000, "consumer", [(name, _sub(["t"]))])
        req.require_known_member_id = False
        w.c.classic.join_group(req, got.append)
    assert [j.error for j in got] == [0, E.INCONSISTENT_GROUP_PROTOCOL]
    assert w.hb("b", -1).error == 0
    assert w.group().group_type == "classic" and len(w.group().members) == 1
