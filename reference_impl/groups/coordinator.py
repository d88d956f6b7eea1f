"""The classic group coordinator: Kafka's GroupCoordinator as a single-threaded library.

It owns the groups of the ``__consumer_offsets`` partitions this broker leads. Requests come in
as method calls; answers that must wait for a rebalance or for a durable append leave through
callbacks (exactly one call per request). Time comes from a Scheduler, records go to an
OffsetsStore, so the same code runs under asyncio on a broker and under a manual clock with an
in-memory log in tests.

Behaviour follows Kafka 3.x (``kafka.coordinator.group.GroupCoordinator``):

* a JoinGroup from an unknown member of a v4+ client gets MEMBER_ID_REQUIRED and a member id
  (KIP-394), and is a pending member until it joins with it or its session timeout passes;
* the first rebalance of an Empty group waits ``initial_rebalance_delay_ms`` and again while
  new members keep arriving, bounded by the rebalance timeout;
* later rebalances complete as soon as every member rejoined, or at the rebalance timeout,
  when members that did not rejoin are removed (static members stay);
* after the JoinGroup answers, members that do not send SyncGroup within the rebalance timeout
  are removed and the group rebalances again;
* a member whose session times out (not while it waits on a rebalance) is removed;
* static members (``group.instance.id``) rejoining with a new member id replace the old one
  (FENCED_INSTANCE_ID for the old id) without a rebalance when nothing else changes;
* SyncGroup from the leader is answered, and the assignment propagated, once the group record
  is durable; offsets become visible once their commit record is durable.
"""

from __future__ import annotations

import itertools
import logging
import struct
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from conformance.protocol import ErrorCode
from conformance.protocol.records.control import ControlType
from conformance.protocol.records.errors import CorruptRecordError
from reference_impl.groups.errors import store_group_error, store_offsets_error
from reference_impl.groups.group import Group, GroupState, Member, OffsetAndMetadata
from reference_impl.groups.placement import DEFAULT_OFFSETS_PARTITIONS, partition_for
from reference_impl.groups.records import (
    GroupKey,
    GroupRecord,
    MemberRecord,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
    group_key,
    group_value,
    offset_key,
    offset_value,
)
from reference_impl.groups.scheduler import Scheduler, Timer
from reference_impl.groups.store import KeyValue, LoadedRecord, OffsetsStore

log = logging.getLogger(__name__)

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

TopicPartition = tuple[str, int]
#: the protocol type of Kafka's consumer groups, whose member metadata names their topics
CONSUMER_PROTOCOL = "consumer"

#: APIs for which an empty group id is accepted (Kafka keeps that for old clients).
_EMPTY_ID_OK = frozenset({"commit", "fetch", "describe", "delete"})


@dataclass
class GroupConfig:
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    max_size: int = 2**31 - 1
    new_member_join_timeout_ms: int = 300_000
    offset_metadata_max_bytes: int = 4096
    offsets_topic_partitions: int = DEFAULT_OFFSETS_PARTITIONS


@dataclass
class JoinRequest:
    group_id: str
    member_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    #: JoinGroup v4+: an unknown dynamic member first gets MEMBER_ID_REQUIRED
    require_known_member_id: bool = True
    #: JoinGroup v9+: a rejoining static leader may be told to skip the assignment
    supports_skip_assignment: bool = False
    reason: str | None = None


@dataclass
class JoinResult:
    error: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    #: (member id, group instance id, metadata): only in the leader's answer
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass
class GroupSummary:
    state: str
    protocol_type: str
    protocol_data: str
    members: list[MemberSummary]


#: a group this coordinator does not know: Kafka describes it as Dead, without error
DEAD_SUMMARY = GroupSummary("Dead", "", "", [])
#: what accompanies an error (not the coordinator, loading …): no state at all
NO_SUMMARY = GroupSummary("", "", "", [])


@dataclass
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str


@dataclass
class _Owned:
    token: int
    loading: bool = True


def _cancel(timer: Timer | None) -> None:
    if timer is not None:
        timer.cancel()


@dataclass(frozen=True)
class TxnCommit:
    """A TxnOffsetCommit for the coordinator: the group, the producer (id, epoch), KIP-447's
    group metadata and the offsets."""

    group_id: str
    producer: tuple[int, int]
    member_id: str
    group_instance_id: str | None
    generation_id: int
    offsets: dict[TopicPartition, OffsetAndMetadata]


class GroupCoordinator:
    def __init__(
        self,
        scheduler: Scheduler,
        store: OffsetsStore,
        config: GroupConfig | None = None,
        *,
        member_id_factory: Callable[[str], str] | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.store = store
        self.config = config or GroupConfig()
        self.partition_count = self.config.offsets_topic_partitions
        self.groups: dict[str, Group] = {}
        self.partitions: dict[int, _Owned] = {}
        self.active = True
        #: producer id -> groups holding its pending transactional offsets
        self.producer_groups: dict[int, set[str]] = {}
        self._tokens = itertools.count(1)
        self._member_id_factory = member_id_factory or (lambda prefix: f"{prefix}-{uuid.uuid4()}")

    # -- placement and validation -------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.partition_count)

    def _check(self, group_id: str | None, api: str) -> int:
        if group_id is None or (group_id == "" and api not in _EMPTY_ID_OK):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        owned = self.partitions.get(self.partition_for(group_id))
        if owned is None:
            return ErrorCode.NOT_COORDINATOR
        if owned.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def _now(self) -> int:
        return self.scheduler.now_ms()

    def _new_group(self, group_id: str) -> Group:
        group = Group(group_id, self.partition_for(group_id), state_timestamp=self._wall())
        self.groups[group_id] = group
        return group

    def _wall(self) -> int:
        return self.scheduler.wall_ms()

    def _live(self, group: Group) -> bool:
        return self.groups.get(group.group_id) is group and not group.is_(DEAD)

    @staticmethod
    def _validate_member(group: Group, member_id: str, instance_id: str | None) -> int:
        """Kafka's validateCurrentMember: the instance id (if any) maps to this member id,
        and the member id is in the group."""
        if instance_id is not None:
            current = group.static_members.get(instance_id)
            if current is None:
                return ErrorCode.UNKNOWN_MEMBER_ID
            if current != member_id:
                return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    # -- JoinGroup ----------------------------------------------------------------------------

    def join_group(self, req: JoinRequest, respond: Callable[[JoinResult], None]) -> None:
        error = self._check(req.group_id, "join")
        if error:
            respond(JoinResult(error, req.member_id))
            return
        cfg = self.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            respond(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id))
            return
        unknown = req.member_id == ""
        group = self.groups.get(req.group_id)
        if group is None:
            if not unknown:
                respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id))
                return
            group = self._new_group(req.group_id)
        if not group.has(req.member_id) and group.size >= cfg.max_size:
            _cancel(group.pending_members.pop(req.member_id, None))
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
            return
        if unknown:
            self._join_new_member(group, req, respond)
        else:
            self._join_current_member(group, req, respond)
        if group.is_(PREPARING):
            self._try_complete_join(group)

    def _join_new_member(
        self, group: Group, req: JoinRequest, respond: Callable[[JoinResult], None]
    ) -> None:
        if group.is_(DEAD):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        prefix = req.group_instance_id if req.group_instance_id is not None else req.client_id
        new_id = self._member_id_factory(prefix)
        if req.group_instance_id is not None:
            old_id = group.static_member_id(req.group_instance_id)
            if old_id is not None:
                self._static_member_rejoin(group, req, old_id, new_id, respond)
            else:
                self._add_member_and_rebalance(group, req, new_id, respond)
        elif req.require_known_member_id:
            when = self._now() + req.session_timeout_ms
            timer = self.scheduler.call_at(
                when, lambda: self._on_pending_member_expired(group, new_id)
            )
            group.pending_members[new_id] = timer
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(group, req, new_id, respond)

    def _join_current_member(
        self, group: Group, req: JoinRequest, respond: Callable[[JoinResult], None]
    ) -> None:
        member_id = req.member_id
        if group.is_(DEAD):
            respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(req.protocol_type, [n for n, _ in req.protocols]):
            respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        if member_id in group.pending_members:
            if req.group_instance_id is not None:
                # Kafka: a pending member id is never a static member's (IllegalStateException)
                respond(JoinResult(ErrorCode.UNKNOWN_SERVER_ERROR, member_id))
                return
            _cancel(group.pending_members.get(member_id))
            self._add_member_and_rebalance(group, req, member_id, respond)
            return
        instance = req.group_instance_id
        current = group.static_member_id(instance)
        if instance is not None and current is not None and current != member_id:
            respond(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
            return
        if not group.has(member_id) or (instance is not None and current is None):
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        member = group.members[member_id]
        if group.is_(PREPARING):
            self._update_member_and_rebalance(group, member, req, respond)
        elif group.is_(COMPLETING):
            if member.matches(req.protocols):
                # it lost the JoinGroup answer: give it again
                respond(self._generation_result(group, member_id, with_members=True))
            else:
                self._update_member_and_rebalance(group, member, req, respond)
        elif group.is_(STABLE):
            if group.is_leader(member_id) or not member.matches(req.protocols):
                # a leader's JoinGroup always rebalances (it may have seen metadata change)
                self._update_member_and_rebalance(group, member, req, respond)
            else:
                respond(self._generation_result(group, member_id, with_members=False))
        else:
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _generation_result(self, group: Group, member_id: str, *, with_members: bool) -> JoinResult:
        leader = group.is_leader(member_id)
        return JoinResult(
            ErrorCode.NONE,
            member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            members=group.current_member_metadata() if with_members and leader else [],
        )

    def _add_member_and_rebalance(
        self, group: Group, req: JoinRequest, member_id: str, respond: Callable[[JoinResult], None]
    ) -> None:
        member = Member(
            member_id,
            req.group_instance_id,
            req.client_id,
            req.client_host,
            req.rebalance_timeout_ms,
            req.session_timeout_ms,
            req.protocol_type,
            list(req.protocols),
            join_callback=respond,
            is_new=True,
        )
        if group.is_(PREPARING) and group.generation_id == 0:
            group.new_member_added = True
        group.add(member)
        # a new member cannot heartbeat yet; its JoinGroup expires after the new-member timeout
        self._schedule_heartbeat(group, member, self.config.new_member_join_timeout_ms)
        self._maybe_prepare_rebalance(group, f"adding new member {member_id}")

    def _update_member_and_rebalance(
        self, group: Group, member: Member, req: JoinRequest, respond: Callable[[JoinResult], None]
    ) -> None:
        previous = member.join_callback
        group.update_member(
            member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, respond
        )
        if previous is not None and previous is not respond:
            previous(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        self._maybe_prepare_rebalance(group, f"member {member.member_id} rejoining")

    def _static_member_rejoin(
        self,
        group: Group,
        req: JoinRequest,
        old_id: str,
        new_id: str,
        respond: Callable[[JoinResult], None],
    ) -> None:
        """A known group.instance.id joined without a member id: it replaces the old one."""
        instance = req.group_instance_id
        assert instance is not None
        member = group.members[old_id]
        if member.join_callback is not None:
            callback, member.join_callback = member.join_callback, None
            callback(JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        if member.sync_callback is not None:
            callback, member.sync_callback = member.sync_callback, None
            callback(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        old = (list(member.protocols), member.rebalance_timeout_ms, member.session_timeout_ms)
        group.replace_static_member(instance, old_id, new_id)
        self._schedule_heartbeat(group, member)
        current_leader = group.leader_id or ""
        group.update_member(
            member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, respond
        )
        if group.is_(STABLE):
            if group.protocol_name != group.select_protocol():
                self._maybe_prepare_rebalance(group, f"static member {instance} changed protocol")
                return
            generation = group.generation_id
            assignment = {m.member_id: m.assignment for m in group.members.values()}

            def stored(error: int) -> None:
                still = (
                    self._live(group)
                    and group.is_(STABLE)
                    and group.generation_id == generation
                    and member.join_callback is respond
                    and member.member_id == new_id
                )
                if not still:
                    return  # a rebalance started meanwhile; it answers the JoinGroup
                member.join_callback = None
                if error:
                    group.update_member(member, old[0], old[1], old[2], None)
                    group.replace_static_member(instance, new_id, old_id)
                    self._schedule_heartbeat(group, member)
                    respond(JoinResult(error, old_id))
                    return
                leader = group.is_leader(new_id) and req.supports_skip_assignment
                respond(
                    JoinResult(
                        ErrorCode.NONE,
                        new_id,
                        group.generation_id,
                        group.protocol_type,
                        group.protocol_name,
                        current_leader,
                        skip_assignment=leader,
                        members=group.current_member_metadata() if leader else [],
                    )
                )

            self._store_group(group, assignment, stored)
        elif group.is_(COMPLETING):
            # the leader may be assigning the old member id: start over
            self._prepare_rebalance(group, f"static member {instance} rejoined while syncing")

    # -- rebalance machinery ------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_(STABLE, COMPLETING, EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        log.debug("group %s: preparing rebalance: %s", group.group_id, reason)
        if group.is_(COMPLETING):
            self._reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        _cancel(group.sync_timer)
        group.sync_timer = None
        _cancel(group.join_timer)
        initial = group.is_(EMPTY)
        group.transition(PREPARING, self._wall())
        now = self._now()
        if initial:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            group.initial_join = True
            group.join_timer = self.scheduler.call_at(
                now + delay, lambda: self._on_initial_join_expired(group, delay, remaining)
            )
        else:
            group.initial_join = False
            group.join_timer = self.scheduler.call_at(
                now + group.rebalance_timeout_ms, lambda: self._complete_join(group)
            )
            self._try_complete_join(group)

    def _on_initial_join_expired(self, group: Group, delay: int, remaining: int) -> None:
        group.join_timer = None
        if not self._live(group) or not group.is_(PREPARING):
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            next_delay = min(self.config.initial_rebalance_delay_ms, remaining)
            next_remaining = max(remaining - delay, 0)
            group.join_timer = self.scheduler.call_at(
                self._now() + next_delay,
                lambda: self._on_initial_join_expired(group, next_delay, next_remaining),
            )
        else:
            self._complete_join(group)

    def _try_complete_join(self, group: Group) -> None:
        if group.is_(PREPARING) and not group.initial_join and group.all_joined():
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        _cancel(group.join_timer)
        group.join_timer = None
        if not self._live(group) or not group.is_(PREPARING):
            return
        for member in group.not_yet_rejoined():
            if member.group_instance_id is None:
                _cancel(member.heartbeat_timer)
                group.remove(member.member_id)
        if not group.elect_joined_leader() and group.members:
            # only static members that did not rejoin are left: wait for them (or their expiry)
            group.initial_join = False
            group.join_timer = self.scheduler.call_at(
                self._now() + group.rebalance_timeout_ms, lambda: self._complete_join(group)
            )
            return
        group.init_next_generation(self._wall())
        if group.is_(EMPTY):
            self._store_group(group, {}, lambda error: None)
            return
        generation = group.generation_id
        for member in list(group.members.values()):
            result = self._generation_result(group, member.member_id, with_members=True)
            callback, member.join_callback = member.join_callback, None
            self._schedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync.add(member.member_id)
            if callback is not None:
                callback(result)
        group.sync_timer = self.scheduler.call_at(
            self._now() + group.rebalance_timeout_ms,
            lambda: self._on_pending_sync_expired(group, generation),
        )

    def _on_pending_sync_expired(self, group: Group, generation: int) -> None:
        group.sync_timer = None
        if not self._live(group) or group.generation_id != generation:
            return
        if not group.is_(COMPLETING, STABLE) or not group.pending_sync:
            return
        for member_id in list(group.pending_sync):
            member = group.remove(member_id)
            if member is not None:
                _cancel(member.heartbeat_timer)
        self._prepare_rebalance(group, "members did not send SyncGroup in time")

    def _remove_pending_sync(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            _cancel(group.sync_timer)
            group.sync_timer = None

    def _reset_and_propagate_assignment_error(self, group: Group, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self._propagate_assignment(group, error)

    def _propagate_assignment(self, group: Group, error: int) -> None:
        ok = error == ErrorCode.NONE
        ptype, pname = (group.protocol_type, group.protocol_name) if ok else (None, None)
        for member in list(group.members.values()):
            if member.sync_callback is not None:
                callback, member.sync_callback = member.sync_callback, None
                self._schedule_heartbeat(group, member)
                callback(SyncResult(error, ptype, pname, member.assignment))

    # -- member expiry ------------------------------------------------------------------------

    def _schedule_heartbeat(self, group: Group, member: Member, timeout: int | None = None) -> None:
        _cancel(member.heartbeat_timer)
        when = self._now() + (member.session_timeout_ms if timeout is None else timeout)
        member.heartbeat_timer = self.scheduler.call_at(
            when, lambda: self._on_heartbeat_expired(group, member)
        )

    def _on_heartbeat_expired(self, group: Group, member: Member) -> None:
        member.heartbeat_timer = None
        if not self._live(group) or group.members.get(member.member_id) is not member:
            return
        # members waiting on a rebalance count as alive, except new ones (their join expired)
        if member.is_new or not (member.awaiting_join or member.awaiting_sync):
            log.info("group %s: member %s expired", group.group_id, member.member_id)
            self._remove_member_and_update_group(group, member)

    def _on_pending_member_expired(self, group: Group, member_id: str) -> None:
        if member_id in group.pending_members and self._live(group):
            self._remove_pending_member(group, member_id)

    def _remove_pending_member(self, group: Group, member_id: str) -> None:
        _cancel(group.pending_members.pop(member_id, None))
        if group.is_(PREPARING):
            self._try_complete_join(group)

    def _remove_member_and_update_group(self, group: Group, member: Member) -> None:
        if member.join_callback is not None:
            callback, member.join_callback = member.join_callback, None
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        if member.sync_callback is not None:
            callback, member.sync_callback = member.sync_callback, None
            callback(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        _cancel(member.heartbeat_timer)
        member.heartbeat_timer = None
        group.remove(member.member_id)
        if group.is_(STABLE, COMPLETING):
            self._maybe_prepare_rebalance(group, f"member {member.member_id} left")
        elif group.is_(PREPARING):
            self._try_complete_join(group)

    # -- SyncGroup, Heartbeat, LeaveGroup -----------------------------------------------------

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
        respond: Callable[[SyncResult], None],
    ) -> None:
        error = self._check(group_id, "sync")
        group = self.groups.get(group_id)
        if not error:
            if group is None:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            elif group.is_(DEAD):
                error = ErrorCode.COORDINATOR_NOT_AVAILABLE
            else:
                error = self._validate_member(group, member_id, group_instance_id)
        if not error:
            assert group is not None
            if generation_id != group.generation_id:
                error = ErrorCode.ILLEGAL_GENERATION
            elif (protocol_type is not None and protocol_type != group.protocol_type) or (
                protocol_name is not None and protocol_name != group.protocol_name
            ):
                error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
            elif group.is_(EMPTY):
                error = ErrorCode.UNKNOWN_MEMBER_ID
            elif group.is_(PREPARING):
                error = ErrorCode.REBALANCE_IN_PROGRESS
        if error:
            respond(SyncResult(error))
            return
        assert group is not None
        member = group.members[member_id]
        self._remove_pending_sync(group, member_id)
        if group.is_(STABLE):
            self._schedule_heartbeat(group, member)
            ptype, pname = group.protocol_type, group.protocol_name
            respond(SyncResult(ErrorCode.NONE, ptype, pname, member.assignment))
            return
        previous, member.sync_callback = member.sync_callback, respond
        if previous is not None:
            previous(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        if not group.is_leader(member_id):
            return
        full = {mid: assignments.get(mid, b"") for mid in group.members}
        generation = group.generation_id

        def stored(error: int) -> None:
            if not self._live(group) or not group.is_(COMPLETING):
                return
            if group.generation_id != generation:
                return
            if error:
                self._reset_and_propagate_assignment_error(group, error)
                self._maybe_prepare_rebalance(group, "storing the assignment failed")
                return
            for mid, m in group.members.items():
                m.assignment = full.get(mid, b"")
            group.transition(STABLE, self._wall())
            self._propagate_assignment(group, ErrorCode.NONE)

        self._store_group(group, full, stored)

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        error = self._check(group_id, "heartbeat")
        if error:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(group, member_id, group_instance_id)
        if error:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.is_(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(group, group.members[member_id])
        if group.is_(PREPARING):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """Remove members ((member id, group instance id) each; the member id may be empty
        when the instance id names a static member): top-level error and one error each."""
        error = self._check(group_id, "leave")
        if error:
            return error, []
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID] * len(members)
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        errors: list[int] = []
        for member_id, instance in members:
            if member_id == "":
                current = group.static_member_id(instance)
                if current is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                self._remove_member_and_update_group(group, group.members[current])
            elif member_id in group.pending_members:
                self._remove_pending_member(group, member_id)
            else:
                error = self._validate_member(group, member_id, instance)
                if error:
                    errors.append(error)
                    continue
                self._remove_member_and_update_group(group, group.members[member_id])
            errors.append(ErrorCode.NONE)
        return ErrorCode.NONE, errors

    # -- offsets ------------------------------------------------------------------------------

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        respond: Callable[[dict[TopicPartition, int]], None],
    ) -> None:
        """Store offsets; ``respond`` gets an error code per partition once they are durable.

        A generation below 0 with no member id is a commit from outside group management
        (an admin or a consumer using assign): allowed while the group has no members.
        """
        error = self._check(group_id, "commit")
        group = self.groups.get(group_id)
        if not error and group is None:
            if generation_id >= 0:
                error = ErrorCode.ILLEGAL_GENERATION
            else:
                group = self._new_group(group_id)
        if not error:
            assert group is not None
            error = self._validate_commit(group, member_id, group_instance_id, generation_id)
            if not error and group.is_(COMPLETING):
                error = ErrorCode.REBALANCE_IN_PROGRESS
        if error:
            respond(dict.fromkeys(offsets, int(error)))
            return
        assert group is not None
        if member_id in group.members:
            self._schedule_heartbeat(group, group.members[member_id])
        results, accepted = self._acceptable(offsets)
        if not accepted:
            respond(results)
            return
        records = _offset_records(group_id, accepted)

        group.pending_offsets.update(list(accepted))

        def done(error: int, base: int) -> None:
            group.pending_offsets.subtract(list(accepted))
            if not error and self._live(group):
                for i, (tp, om) in enumerate(accepted.items()):
                    if group.offset_positions.get(tp, -1) < base + i:
                        group.offsets[tp] = om
                        group.offset_positions[tp] = base + i
            code = store_offsets_error(error)
            results.update(dict.fromkeys(accepted, code))
            respond(results)

        self.store.append(group.partition, records, done)

    def _acceptable(
        self, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, OffsetAndMetadata]]:
        """(errors of the offsets refused: metadata too large, the offsets accepted, stamped
        with the commit time when they carry none)."""
        results: dict[TopicPartition, int] = {}
        accepted: dict[TopicPartition, OffsetAndMetadata] = {}
        now = self._wall()
        for tp, om in offsets.items():
            if len(om.metadata.encode()) > self.config.offset_metadata_max_bytes:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = om if om.commit_timestamp >= 0 else replace(om, commit_timestamp=now)
        return results, accepted

    # -- transactional offsets (KIP-98, KIP-447) ----------------------------------------------

    def txn_commit_offsets(
        self, req: TxnCommit, respond: Callable[[dict[TopicPartition, int]], None]
    ) -> None:
        """TxnOffsetCommit: append the offsets as a transactional batch of the producer (id,
        epoch); they stay pending (invisible to OffsetFetch, UNSTABLE_OFFSET_COMMIT to one that
        requires stable offsets) until the transaction's marker on the group's partition
        (``transaction_completed``). KIP-447's group metadata is checked as an OffsetCommit's
        (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION), except that a commit with
        none (generation -1, no member) is accepted whatever the group's state, as Kafka's
        validateOffsetCommit does for transactional commits; an unknown group is created."""
        group_id, producer, offsets = req.group_id, req.producer, req.offsets
        error = self._check(group_id, "txn commit")
        group = None if error else self.groups.get(group_id) or self._new_group(group_id)
        if group is not None:
            error = self._validate_commit(
                group, req.member_id, req.group_instance_id, req.generation_id, transactional=True
            )
        if error or group is None:
            respond(dict.fromkeys(offsets, int(error)))
            return
        results, accepted = self._acceptable(offsets)
        if not accepted:
            respond(results)
            return
        producer_id = producer[0]
        pending = group.pending_txn_offsets.setdefault(producer_id, {})
        for tp, om in accepted.items():
            pending[tp] = (om, None)
        self.producer_groups.setdefault(producer_id, set()).add(group_id)

        def done(error: int, base: int) -> None:
            mine = group.pending_txn_offsets.get(producer_id)
            for i, (tp, om) in enumerate(accepted.items()):
                if mine is None or tp not in mine or mine[tp][0] is not om:
                    continue  # completed or replaced meanwhile
                if error:
                    del mine[tp]
                else:
                    mine[tp] = (om, base + i)
            if mine is not None and not mine:
                group.pending_txn_offsets.pop(producer_id, None)
            results.update(dict.fromkeys(accepted, store_offsets_error(error)))
            respond(results)

        self.store.append(group.partition, _offset_records(group_id, accepted), done, producer)

    def transaction_completed(
        self, producer_id: int, partitions: Iterable[int], commit: bool
    ) -> None:
        """A marker of ``producer_id`` was written on these ``__consumer_offsets`` partitions:
        its pending offsets in their groups become the committed ones (COMMIT, each unless a
        later record already replaced it) or are dropped (ABORT), as Kafka's
        onTransactionCompleted."""
        where = set(partitions)
        names = self.producer_groups.get(producer_id, set())
        for group_id in list(names):
            group = self.groups.get(group_id)
            if group is not None and group.partition not in where:
                continue
            names.discard(group_id)
            if group is None:
                continue
            pending = group.pending_txn_offsets.pop(producer_id, None) or {}
            if commit:
                _materialise(group.offsets, group.offset_positions, pending)
        if not names:
            self.producer_groups.pop(producer_id, None)

    def group_status(self, group_id: str | None) -> int:
        """Kafka's validateGroupStatus for a transactional commit, before the transaction
        coordinator is asked (INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
        return int(self._check(group_id, "txn commit"))

    def loaded(self, partition: int) -> bool:
        """Whether this coordinator holds ``partition``'s groups now (led here, replay done):
        a transaction marker for it may be applied (else the sender retries)."""
        owned = self.partitions.get(partition)
        return owned is not None and not owned.loading

    def has_pending_offset(self, group_id: str, tp: TopicPartition) -> bool:
        """OffsetFetch's RequireStable: a commit of ``tp`` not yet durable or not yet ended."""
        group = self.groups.get(group_id)
        return group is not None and not group.is_(DEAD) and group.has_pending_offset(tp)

    def _validate_commit(
        self,
        group: Group,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        *,
        transactional: bool = False,
    ) -> int:
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if generation_id >= 0 or member_id != "" or instance_id is not None:
            error = self._validate_member(group, member_id, instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
            return ErrorCode.NONE
        if not transactional and not group.is_(EMPTY):
            # a group with members takes commits from its members only
            return ErrorCode.UNKNOWN_MEMBER_ID
        return ErrorCode.NONE

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> tuple[int, dict[TopicPartition, OffsetAndMetadata | None]]:
        """Committed offsets (None where nothing is committed); ``partitions=None``: all."""
        error = self._check(group_id, "fetch")
        if error:
            return error, {}
        group = self.groups.get(group_id)
        stored = group.offsets if group is not None and not group.is_(DEAD) else {}
        if partitions is None:
            return ErrorCode.NONE, dict(stored)
        return ErrorCode.NONE, {tp: stored.get(tp) for tp in partitions}

    def delete_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartition],
        respond: Callable[[int, dict[TopicPartition, int]], None],
    ) -> None:
        """OffsetDelete: remove committed offsets (tombstones), answering once written.

        GROUP_ID_NOT_FOUND for a group that does not exist; NON_EMPTY_GROUP for a group of
        another protocol type that has members; a partition of a topic the members of a consumer
        group are subscribed to is GROUP_SUBSCRIBED_TO_TOPIC (kept); the rest are removed (a
        partition with nothing committed answers NONE too), as Kafka does (KIP-496).
        """
        error = self._check(group_id, "delete offsets")
        group = self.groups.get(group_id)
        if not error and (group is None or group.is_(DEAD)):
            error = ErrorCode.GROUP_ID_NOT_FOUND
        if not error and group is not None and not group.is_(EMPTY):
            if group.protocol_type != CONSUMER_PROTOCOL:
                error = ErrorCode.NON_EMPTY_GROUP
        if error:
            respond(int(error), {})
            return
        assert group is not None
        subscribed = None if group.is_(EMPTY) else subscribed_topics(group)
        results: dict[TopicPartition, int] = {}
        doomed: list[TopicPartition] = []
        for tp in dict.fromkeys(partitions):
            if subscribed is not None and (not subscribed or tp[0] in subscribed):
                results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[tp] = ErrorCode.NONE
                doomed.append(tp)
        removed = [tp for tp in doomed if tp in group.offsets or group.pending_offsets[tp] > 0]
        if not removed:
            respond(ErrorCode.NONE, results)
            return

        def done(error: int, base: int) -> None:
            if error:
                results.update(dict.fromkeys(removed, store_offsets_error(error)))
            elif self._live(group):
                for i, tp in enumerate(removed):
                    if group.offset_positions.get(tp, -1) < base + i:
                        group.offsets.pop(tp, None)
                        group.offset_positions[tp] = base + i
            respond(ErrorCode.NONE, results)

        tombstones: list[KeyValue] = [(offset_key(group_id, t, p), None) for t, p in removed]
        self.store.append(group.partition, tombstones, done)

    # -- DescribeGroups, ListGroups, DeleteGroups ---------------------------------------------

    def describe_group(self, group_id: str) -> tuple[int, GroupSummary]:
        error = self._check(group_id, "describe")
        if error:
            return error, NO_SUMMARY
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, DEAD_SUMMARY
        stable = group.is_(STABLE) and group.protocol_name is not None
        members = [
            MemberSummary(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.metadata(group.protocol_name) if stable else b"",  # type: ignore[arg-type]
                m.assignment if stable else b"",
            )
            for m in group.members.values()
        ]
        protocol = group.protocol_name if stable else ""
        return ErrorCode.NONE, GroupSummary(
            group.state.value, group.protocol_type or "", protocol or "", members
        )

    def list_groups(self, states: Iterable[str] = ()) -> tuple[int, list[ListedGroup]]:
        """Groups this coordinator holds; COORDINATOR_LOAD_IN_PROGRESS while any partition
        loads (with the groups already loaded). ``states`` filters, case-insensitively."""
        wanted = {s.lower() for s in states}
        error = ErrorCode.NONE
        if any(p.loading for p in self.partitions.values()):
            error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        listed = [
            ListedGroup(g.group_id, g.protocol_type or "", g.state.value)
            for g in self.groups.values()
            if not wanted or g.state.value.lower() in wanted
        ]
        return error, listed

    def delete_groups(
        self, group_ids: list[str], respond: Callable[[dict[str, int]], None]
    ) -> None:
        """Delete Empty groups and their offsets (tombstones), answering once written.

        A failed append answers that group with the error (mapped as for SyncGroup), where
        Kafka would still say NONE: the group is back once the partition is loaded again.
        """
        results: dict[str, int] = {}
        doomed: list[Group] = []
        for group_id in group_ids:
            if group_id in results:
                continue
            error = self._check(group_id, "delete")
            group = self.groups.get(group_id)
            if error:
                results[group_id] = error
            elif group is None or group.is_(DEAD):
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif group.is_(EMPTY):
                group.transition(DEAD, self._wall())
                del self.groups[group_id]
                self._cancel_timers(group)
                doomed.append(group)
                results[group_id] = ErrorCode.NONE
            else:
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
        by_partition: dict[int, list[KeyValue]] = {}
        for group in doomed:
            records = by_partition.setdefault(group.partition, [])
            pending = {tp for tp, n in group.pending_offsets.items() if n > 0}
            for t, p in sorted(set(group.offsets) | pending):
                records.append((offset_key(group.group_id, t, p), None))
            records.append((group_key(group.group_id), None))
        if not by_partition:
            respond(results)
            return
        waiting = [len(by_partition)]

        def written(partition: int) -> Callable[[int, int], None]:
            def done(error: int, _base: int) -> None:
                if error:
                    # not durable: the groups come back with the log (Kafka answers NONE here)
                    log.warning("writing group tombstones failed with error %d", error)
                    for group in doomed:
                        if group.partition == partition:
                            results[group.group_id] = store_group_error(error)
                waiting[0] -= 1
                if waiting[0] == 0:
                    respond(results)

            return done

        for partition, records in by_partition.items():
            self.store.append(partition, records, written(partition))

    # -- persistence --------------------------------------------------------------------------

    def _store_group(
        self, group: Group, assignment: dict[str, bytes], done: Callable[[int], None]
    ) -> None:
        protocol = group.protocol_name
        record = GroupRecord(
            group.protocol_type or "",
            group.generation_id,
            protocol,
            group.leader_id,
            group.state_timestamp,
            tuple(
                MemberRecord(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(protocol) if protocol is not None else b"",
                    assignment.get(m.member_id, b""),
                )
                for m in group.members.values()
            ),
        )
        self.store.append(
            group.partition,
            [(group_key(group.group_id), group_value(record))],
            lambda error, _base: done(store_group_error(error)),
        )

    # -- partition ownership ------------------------------------------------------------------

    def start_loading(self, partition: int) -> int:
        """This broker became leader of ``partition``: refuse its groups with
        COORDINATOR_LOAD_IN_PROGRESS until ``finish_loading`` with the returned token."""
        if partition in self.partitions:
            self.unload(partition)
        token = next(self._tokens)
        self.partitions[partition] = _Owned(token)
        return token

    def finish_loading(self, partition: int, token: int, records: Iterable[LoadedRecord]) -> bool:
        """Rebuild the partition's groups from its log ((offset, key, value) in log order).

        Groups with members come back Stable with fresh session deadlines; groups with only
        offsets come back Empty. False when the load was superseded (leadership changed).
        """
        owned = self.partitions.get(partition)
        if owned is None or owned.token != token:
            return False
        offsets: dict[str, dict[TopicPartition, tuple[OffsetAndMetadata, int]]] = {}
        metas: dict[str, GroupRecord | None] = {}
        #: producer id -> group -> its transactional offsets not yet ended by a marker
        txns: dict[int, dict[str, dict[TopicPartition, tuple[OffsetAndMetadata, int]]]] = {}
        for item in records:
            position, raw_key, raw_value = item[:3]
            if len(item) >= 5:  # a transaction marker: its producer's offsets end here
                ended = txns.pop(item[3], {})
                if item[4] == ControlType.COMMIT:
                    for g, pending in ended.items():
                        got = offsets.setdefault(g, {})
                        for tp, (om, pos) in pending.items():
                            if tp not in got or got[tp][1] < pos:
                                got[tp] = (om, pos)
                continue
            try:
                key = decode_key(raw_key)
                if isinstance(key, OffsetKey) and len(item) == 4:
                    tp = (key.topic, key.partition)
                    mine = txns.setdefault(item[3], {}).setdefault(key.group, {})
                    if raw_value is None:
                        mine.pop(tp, None)
                    else:
                        mine[tp] = (decode_offset_value(raw_value), position)
                elif isinstance(key, OffsetKey):
                    tp = (key.topic, key.partition)
                    if raw_value is None:
                        offsets.get(key.group, {}).pop(tp, None)
                    else:
                        om = decode_offset_value(raw_value)
                        offsets.setdefault(key.group, {})[tp] = (om, position)
                elif isinstance(key, GroupKey):
                    metas[key.group] = None if raw_value is None else decode_group_value(raw_value)
            except CorruptRecordError as e:
                log.warning("__consumer_offsets-%d offset %d: skipped: %s", partition, position, e)
        names = {g for g, o in offsets.items() if o} | {g for g, m in metas.items() if m}
        names |= {g for by_group in txns.values() for g, o in by_group.items() if o}
        for group_id in names:
            self._restore_group(group_id, partition, metas.get(group_id), offsets.get(group_id, {}))
        for producer_id, by_group in txns.items():
            for group_id, pending in by_group.items():
                if pending and group_id in self.groups:
                    self.groups[group_id].pending_txn_offsets[producer_id] = dict(pending)
                    self.producer_groups.setdefault(producer_id, set()).add(group_id)
        owned.loading = False
        return True

    def _restore_group(
        self,
        group_id: str,
        partition: int,
        meta: GroupRecord | None,
        offsets: dict[TopicPartition, tuple[OffsetAndMetadata, int]],
    ) -> None:
        group = Group(group_id, partition, state_timestamp=self._wall())
        if meta is not None:
            group.generation_id = meta.generation
            group.protocol_name = meta.protocol
            group.protocol_type = meta.protocol_type or None
            for m in meta.members:
                protocols = [(meta.protocol, m.subscription)] if meta.protocol is not None else []
                group.add(
                    Member(
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.client_host,
                        m.rebalance_timeout_ms,
                        m.session_timeout_ms,
                        meta.protocol_type,
                        protocols,
                        assignment=m.assignment,
                    )
                )
            if meta.leader in group.members:
                group.leader_id = meta.leader
            group.state = STABLE if group.members else EMPTY
            if meta.current_state_timestamp >= 0:
                group.state_timestamp = meta.current_state_timestamp
        group.offsets = {tp: om for tp, (om, _) in offsets.items()}
        group.offset_positions = {tp: pos for tp, (_, pos) in offsets.items()}
        self.groups[group_id] = group
        for member in group.members.values():
            self._schedule_heartbeat(group, member)

    def unload(self, partition: int) -> None:
        """Leadership of ``partition`` moved away: drop its groups, answer whoever waits on
        them with NOT_COORDINATOR (they will find the new coordinator)."""
        self.partitions.pop(partition, None)
        for group_id, group in list(self.groups.items()):
            if group.partition != partition:
                continue
            del self.groups[group_id]
            self._cancel_timers(group)
            group.transition(DEAD, self._wall())
            for member in group.members.values():
                if member.join_callback is not None:
                    callback, member.join_callback = member.join_callback, None
                    callback(JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
                if member.sync_callback is not None:
                    callback, member.sync_callback = member.sync_callback, None
                    callback(SyncResult(ErrorCode.NOT_COORDINATOR))

    def _cancel_timers(self, group: Group) -> None:
        _cancel(group.join_timer)
        _cancel(group.sync_timer)
        group.join_timer = group.sync_timer = None
        for timer in group.pending_members.values():
            _cancel(timer)
        for member in group.members.values():
            _cancel(member.heartbeat_timer)
            member.heartbeat_timer = None


def subscribed_topics(group: Group) -> set[str] | None:
    """The topics a consumer group's members subscribe to, read from their metadata for the
    chosen protocol (ConsumerProtocolSubscription: int16 version, then an array of topic
    names). None where it cannot be told (no protocol chosen, metadata that does not parse):
    then every topic counts as subscribed, as in Kafka; an empty set means none."""
    if group.protocol_name is None:
        return None
    topics: set[str] = set()
    for member in group.members.values():
        names = _subscription_topics(member.metadata(group.protocol_name))
        if names is None:
            return None
        topics |= names
    return topics


def _subscription_topics(data: bytes) -> set[str] | None:
    try:
        (version,) = struct.unpack_from(">h", data, 0)
        (count,) = struct.unpack_from(">i", data, 2)
        if version < 0 or count < 0:
            return None
        at, names = 6, set()
        for _ in range(count):
            (size,) = struct.unpack_from(">h", data, at)
            if size < 0:
                return None
            names.add(data[at + 2 : at + 2 + size].decode("utf-8"))
            at += 2 + size
        return names
    except (struct.error, UnicodeDecodeError):
        return None


def _offset_records(
    group_id: str, offsets: dict[TopicPartition, OffsetAndMetadata]
) -> list[KeyValue]:
    return [(offset_key(group_id, t, p), offset_value(om)) for (t, p), om in offsets.items()]


def _materialise(
    offsets: dict[TopicPartition, OffsetAndMetadata],
    positions: dict[TopicPartition, int],
    pending: dict[TopicPartition, tuple[OffsetAndMetadata, int | None]],
) -> None:
    """Committed transactional offsets replace the cached ones written before them."""
    for tp, (om, pos) in pending.items():
        if pos is not None and positions.get(tp, -1) < pos:
            offsets[tp] = om
            positions[tp] = pos
