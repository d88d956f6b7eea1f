"""The group coordinator as a state machine, driven by simulated consumers on a manual clock.

Clients join, sync, heartbeat, leave and commit in any order while time jumps past session
and rebalance timeouts and coordinator partitions fail over (unload, replay the log). After
every step:

* only Kafka's transitions happen (the Group refuses any other);
* a generation is one thing: every successful JoinGroup answer of generation g names the same
  leader and protocol, and generations a client sees never go back;
* a Stable group's members hold exactly the assignments its leader sent for that generation;
* a member that is not waiting on a rebalance has been heard from within its session timeout
  (otherwise it must have been expired);
* committed offsets read back as the last successful commit, across failovers, while appends
  to the log may be held back (slow replication) and fail when leadership moves.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from conformance.protocol import ErrorCode
from reference_impl.groups.coordinator import GroupConfig, GroupCoordinator
from reference_impl.groups.group import GroupState, JoinRequest, JoinResult, SyncResult
from reference_impl.groups.group_types import OffsetAndMetadata
from reference_impl.groups.scheduler import ManualScheduler
from reference_impl.groups.store import MemoryOffsetsStore

SESSION_MS = 1000
REBALANCE_MS = 2000
DELAY_MS = 100
PARTITIONS = 3
GROUPS = ("alpha", "beta")
PROTOCOL_CHOICES = (
    (("range", b"r"),),
    (("range", b"r"), ("roundrobin", b"x")),
    (("roundrobin", b"x"),),
)
RESET = {ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID}


@dataclass
class Client:
    name: str
    group: str
    instance_id: str | None
    require_known: bool
    member_id: str = ""
    generation: int = -1
    leader: bool = False
    members: list = field(default_factory=list)
    outstanding: str | None = None
    assignment: bytes | None = None


class GroupMachine(RuleBasedStateMachine):
    @initialize()
    def setup(self) -> None:
        self.clock = ManualScheduler()
        self.store = MemoryOffsetsStore(self.clock.wall_ms)
        ids = itertools.count()
        self.coordinator = GroupCoordinator(
            self.clock,
            self.store,
            GroupConfig(
                initial_rebalance_delay_ms=DELAY_MS,
                min_session_timeout_ms=10,
                offsets_topic_partitions=PARTITIONS,
            ),
            member_id_factory=lambda prefix: f"{prefix}-{next(ids)}",
        )
        for p in range(PARTITIONS):
            self.coordinator.finish_loading(p, self.coordinator.start_loading(p), [])
        self.clients = [
            Client("c0", "alpha", None, True),
            Client("c1", "alpha", None, True),
            Client("c2", "alpha", "static-2", True),
            Client("c3", "alpha", None, False),
            Client("c4", "beta", None, True),
        ]
        #: (group, generation) -> (leader id, protocol) from successful JoinGroup answers
        self.generations: dict[tuple[str, int], tuple[str, str | None]] = {}
        self.max_generation: dict[str, int] = dict.fromkeys(GROUPS, 0)
        #: (group, generation) -> assignments the leader sent
        self.assignments: dict[tuple[str, int], dict[str, bytes]] = {}
        self.last_contact: dict[str, int] = {}
        self.committed: dict[str, dict[tuple[str, int], int]] = {g: {} for g in GROUPS}
        #: bumped when a group is deleted: commits answered later belong to the old group
        self.incarnation: dict[str, int] = dict.fromkeys(GROUPS, 0)
        #: groups whose failed deletion the current failover has already rolled back
        self.restored: set[str] = set()

    # -- helpers ----------------------------------------------------------------------------

    def _touch(self, member_id: str) -> None:
        self.last_contact[member_id] = self.clock.now_ms()

    def _reset(self, c: Client) -> None:
        c.member_id, c.generation, c.leader, c.members = "", -1, False, []

    def _on_join(self, c: Client, r: JoinResult) -> None:
        assert c.outstanding == "join"
        c.outstanding = None
        if r.error == ErrorCode.NONE:
            key = (c.group, r.generation_id)
            seen = self.generations.setdefault(key, (r.leader_id, r.protocol_name))
            assert seen == (r.leader_id, r.protocol_name), (key, seen, r)
            if (c.group, c.generation) in self.generations and c.member_id == r.member_id:
                assert r.generation_id >= c.generation
            self.max_generation[c.group] = max(self.max_generation[c.group], r.generation_id)
            c.member_id, c.generation = r.member_id, r.generation_id
            c.leader, c.members = r.leader_id == r.member_id, r.members
            assert bool(r.members) <= c.leader, "only the leader gets the member list"
            self._touch(r.member_id)
        elif r.error == ErrorCode.MEMBER_ID_REQUIRED:
            assert r.member_id and c.require_known and c.instance_id is None
            c.member_id = r.member_id
        elif r.error in RESET:
            self._reset(c)
        else:
            assert r.error in (
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                ErrorCode.REBALANCE_IN_PROGRESS,
                ErrorCode.NOT_COORDINATOR,
            ), r

    def _on_sync(self, c: Client, r: SyncResult) -> None:
        assert c.outstanding == "sync"
        c.outstanding = None
        self._touch(c.member_id)  # any answer to a waiting SyncGroup restarts the session
        if r.error == ErrorCode.NONE:
            sent = self.assignments[(c.group, c.generation)]
            if c.instance_id is None:
                assert r.assignment == sent[c.member_id]
            else:
                assert r.assignment in sent.values()
            c.assignment = r.assignment
            self._touch(c.member_id)
        elif r.error in RESET:
            self._reset(c)
        else:
            assert r.error in (
                ErrorCode.REBALANCE_IN_PROGRESS,
                ErrorCode.ILLEGAL_GENERATION,
                ErrorCode.NOT_COORDINATOR,
            ), r

    def _forget_generations(self, group: str, above: int) -> None:
        """The group restarts numbering after ``above`` (failover lost them, or deletion)."""
        self.max_generation[group] = above
        for key in [k for k in self.generations if k[0] == group and k[1] > above]:
            del self.generations[key]
            self.assignments.pop(key, None)

    def _group_clients(self, group: str) -> list[Client]:
        return [c for c in self.clients if c.group == group]

    # -- rules ------------------------------------------------------------------------------

    @rule(i=st.integers(0, 4), protocols=st.sampled_from(PROTOCOL_CHOICES))
    def join(self, i: int, protocols) -> None:
        c = self.clients[i]
        if c.outstanding:
            return
        c.outstanding = "join"
        req = JoinRequest(
            c.group,
            c.member_id,
            SESSION_MS,
            REBALANCE_MS,
            "consumer",
            list(protocols),
            group_instance_id=c.instance_id,
            client_id=c.name,
            require_known_member_id=c.require_known,
        )
        self.coordinator.classic.join_group(req, lambda r: self._on_join(c, r))

    @rule(i=st.integers(0, 4))
    def sync(self, i: int) -> None:
        c = self.clients[i]
        if c.outstanding or c.generation < 0:
            return
        assignments: dict[str, bytes] = {}
        if c.leader:
            assignments = {m: f"{m}@{c.generation}".encode() for m, _, _ in c.members}
            if (c.group, c.generation) in self.generations:  # not a forgotten generation
                self.assignments.setdefault((c.group, c.generation), assignments)
        c.outstanding = "sync"
        self.coordinator.classic.sync_group(
            c.group,
            c.generation,
            c.member_id,
            c.instance_id,
            "consumer",
            None,
            assignments,
            lambda r: self._on_sync(c, r),
        )

    @rule(i=st.integers(0, 4))
    def heartbeat(self, i: int) -> None:
        c = self.clients[i]
        if c.outstanding:
            return
        error = self.coordinator.classic.heartbeat(
            c.group, c.generation, c.member_id, c.instance_id
        )
        if error in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS):
            self._touch(c.member_id)
        elif error in RESET:
            self._reset(c)
        else:
            assert error == ErrorCode.ILLEGAL_GENERATION, error

    @rule(i=st.integers(0, 4))
    def leave(self, i: int) -> None:
        c = self.clients[i]
        if c.outstanding or not c.member_id:
            return
        top, errors = self.coordinator.classic.leave_group(c.group, [(c.member_id, c.instance_id)])
        assert top == ErrorCode.NONE
        assert errors[0] in (ErrorCode.NONE, *RESET), errors
        self._reset(c)

    @rule(i=st.integers(0, 4), partition=st.integers(0, 2), offset=st.integers(0, 10**6))
    def commit(self, i: int, partition: int, offset: int) -> None:
        c = self.clients[i]
        if c.outstanding:
            return
        tp = ("topic", partition)
        incarnation = self.incarnation[c.group]

        def done(result: dict) -> None:
            assert c.outstanding == "commit"
            c.outstanding = None
            if result[tp] == ErrorCode.NONE:
                if self.incarnation[c.group] == incarnation:
                    self.committed[c.group][tp] = offset
                if c.member_id:
                    self._touch(c.member_id)
            elif result[tp] in RESET:
                self._reset(c)

        c.outstanding = "commit"
        self.coordinator.offsets.commit_offsets(
            c.group,
            c.member_id,
            c.instance_id,
            c.generation,
            {tp: OffsetAndMetadata(offset, metadata=c.name)},
            done,
        )

    @rule(group=st.sampled_from(GROUPS), offset=st.integers(0, 10**6))
    def admin_commit(self, group: str, offset: int) -> None:
        """A commit from outside group management: accepted only while the group is Empty."""
        existing = self.coordinator.groups.get(group)
        empty = existing is None or existing.state == GroupState.EMPTY
        incarnation = self.incarnation[group]

        def done(result: dict) -> None:
            error = result[("admin", 0)]
            if empty:
                assert error in (ErrorCode.NONE, ErrorCode.NOT_COORDINATOR), error
            else:
                assert error == ErrorCode.UNKNOWN_MEMBER_ID, error
            if error == ErrorCode.NONE and self.incarnation[group] == incarnation:
                self.committed[group][("admin", 0)] = offset

        tp = {("admin", 0): OffsetAndMetadata(offset)}
        self.coordinator.offsets.commit_offsets(group, "", None, -1, tp, done)

    @rule(ms=st.sampled_from([1, 10, 60, 120, 500, SESSION_MS + 1, REBALANCE_MS + 1]))
    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    @rule()
    def hold_appends(self) -> None:
        """Appends to the log stay pending (replication is slow) until released."""
        self.store.hold = True

    @rule()
    def release_appends(self) -> None:
        self.store.hold = False
        self.store.release()

    @rule(group=st.sampled_from(GROUPS))
    def failover(self, group: str) -> None:
        """The partition's leadership moves away and back: pending appends fail unwritten,
        and the state is rebuilt from the log."""
        p = self.coordinator.partition_for(group)
        self.coordinator.unload(p)
        self.restored = set()
        self.store.fail_held(p, ErrorCode.NOT_LEADER_OR_FOLLOWER)
        token = self.coordinator.start_loading(p)
        loading = self.coordinator.classic.heartbeat(group, 0, "x", None)
        assert loading == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        assert self.coordinator.finish_loading(p, token, self.store.read(p))
        for name in GROUPS:
            if self.coordinator.partition_for(name) != p:
                continue
            g = self.coordinator.groups.get(name)
            for member_id in g.members if g else ():
                self._touch(member_id)
            # generations never made durable (no SyncGroup completed) are forgotten, as in Kafka
            self._forget_generations(name, g.generation_id if g else 0)

    def _snapshot(self, group: str) -> tuple:
        return (
            dict(self.committed[group]),
            self.incarnation[group],
            self.max_generation[group],
            {k: v for k, v in self.generations.items() if k[0] == group},
            {k: v for k, v in self.assignments.items() if k[0] == group},
        )

    def _restore(self, group: str, snapshot: tuple) -> None:
        committed, incarnation, max_generation, generations, assignments = snapshot
        self.committed[group], self.incarnation[group] = committed, incarnation
        self.max_generation[group] = max_generation
        for table, saved in ((self.generations, generations), (self.assignments, assignments)):
            for key in [k for k in table if k[0] == group]:
                del table[key]
            table.update(saved)

    @rule(group=st.sampled_from(GROUPS))
    def delete(self, group: str) -> None:
        existing = self.coordinator.groups.get(group)
        state = existing.state if existing is not None else None
        before = self._snapshot(group)
        if state == GroupState.EMPTY:
            # gone at once: numbering restarts, commits still in flight no longer count
            self.committed[group] = {}
            self.incarnation[group] += 1
            self._forget_generations(group, 0)

        def done(results: dict) -> None:
            error = results[group]
            if existing is None:
                assert error == ErrorCode.GROUP_ID_NOT_FOUND
            elif state == GroupState.EMPTY:
                if error != ErrorCode.NONE:
                    # the tombstones were not written (a failover): the log still holds the
                    # group as it was before the first of its deletions that failed
                    assert error == ErrorCode.NOT_COORDINATOR, error
                    if group not in self.restored:
                        self.restored.add(group)
                        self._restore(group, before)
            else:
                assert error == ErrorCode.NON_EMPTY_GROUP

        self.coordinator.delete_groups([group], done)
        if state == GroupState.EMPTY:
            assert group not in self.coordinator.groups

    # -- invariants ---------------------------------------------------------------------------

    @invariant()
    def committed_offsets_read_back(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        for group, expected in self.committed.items():
            error, got = self.coordinator.offsets.fetch_offsets(group, None)
            assert error == ErrorCode.NONE
            assert {tp: om.offset for tp, om in got.items()} == expected

    @invariant()
    def stable_members_hold_the_leaders_assignment(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        for g in self.coordinator.groups.values():
            if g.state != GroupState.STABLE:
                continue
            sent = self.assignments[(g.group_id, g.generation_id)]
            held = Counter(m.assignment for m in g.members.values())
            assert held == Counter(sent.values()), (held, sent)
            assert g.generation_id == self.max_generation[g.group_id]
            assert g.leader_id in g.members

    @invariant()
    def silent_members_are_expired(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        now = self.clock.now_ms()
        for g in self.coordinator.groups.values():
            waiting = sum(1 for c in self._group_clients(g.group_id) if c.outstanding)
            busy = [m for m in g.members.values() if m.awaiting_join or m.awaiting_sync]
            assert len(busy) <= waiting
            for m in g.members.values():
                if m in busy:
                    continue
                assert now < self.last_contact[m.member_id] + m.session_timeout_ms, m.member_id

    @invariant()
    def one_generation_at_a_time(self) -> None:
        if not hasattr(self, "coordinator"):
            return
        for g in self.coordinator.groups.values():
            known = [
                c.generation
                for c in self._group_clients(g.group_id)
                if (g.group_id, c.generation) in self.generations
            ]
            assert g.generation_id >= max(known, default=0)
            if g.state in (GroupState.COMPLETING_REBALANCE, GroupState.STABLE):
                assert (g.group_id, g.generation_id) in self.generations


GroupMachine.TestCase.settings = settings(stateful_step_count=80, deadline=None)
TestGroupStateMachine = GroupMachine.TestCase
