"""The classic group type: Kafka's classic group protocol (JoinGroup, SyncGroup, Heartbeat,
LeaveGroup), as Kafka 3.x's ``GroupCoordinator`` serves it.

Requests come in as method calls; answers that must wait for a rebalance or for a durable
append leave through callbacks (exactly one call per request). The timer-driven part (the
rebalance and the members' expiry) is ``classic_rebalance.ClassicRebalance``; offsets are the
offsets manager's (``offsets.py``), which asks this type only to judge a commit's member fields.

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
  is durable.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from conformance.protocol import ErrorCode
from reference_impl.groups.classic_rebalance import ClassicRebalance
from reference_impl.groups.group import (
    Group,
    GroupState,
    JoinRequest,
    JoinResult,
    Member,
    SyncResult,
)
from reference_impl.groups.group_types import (
    BaseGroup,
    GroupSummary,
    Host,
    ListedGroup,
    MemberSummary,
    TopicPartition,
    cancel,
)
from reference_impl.groups.records import GroupKey, GroupRecord, decode_group_value, group_key
from reference_impl.groups.store import KeyValue

if TYPE_CHECKING:
    from reference_impl.groups.migration import ClassicMembers

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE
DEAD = GroupState.DEAD

#: the protocol type of Kafka's consumer groups, whose member metadata names their topics
CONSUMER_PROTOCOL = "consumer"


class ClassicGroups:
    """The classic group type: its requests, and what the coordinator asks of every type."""

    name = "classic"

    def __init__(self, host: Host, member_id_factory: Callable[[str], str] | None = None) -> None:
        self.host = host
        self.rebalance = ClassicRebalance(host)
        self._member_id_factory = member_id_factory or (lambda prefix: f"{prefix}-{uuid.uuid4()}")
        #: partition being loaded -> group id -> its last group record (None: a tombstone)
        self._replaying: dict[int, dict[str, GroupRecord | None]] = {}

    def _mixed(self, group: BaseGroup | None) -> ClassicMembers | None:
        """What answers the classic APIs for a consumer group (None: another type)."""
        if group is None or group.is_dead or group.group_type != "consumer":
            return None
        return getattr(self.host.types.named("consumer"), "classic_members", None)

    def _now(self) -> int:
        return self.host.scheduler.now_ms()

    def _wall(self) -> int:
        return self.host.scheduler.wall_ms()

    def _group(self, group_id: str) -> Group | None:
        group = self.host.groups.get(group_id)
        return group if isinstance(group, Group) else None

    def new_group(self, group_id: str) -> Group:
        """An Empty classic group (also what an offset commit outside group management makes)."""
        group = Group(group_id, self.host.partition_for(group_id), state_timestamp=self._wall())
        self.host.groups[group_id] = group
        return group

    def _replace(self, other: BaseGroup) -> Group:
        """An empty group of another type becomes a classic group, keeping its offsets (its own
        records are tombstoned)."""
        tombstones = self.host.types.of(other).deleted(other)
        group = self.new_group(other.group_id)
        for name in ("offsets", "offset_positions", "pending_offsets", "pending_txn_offsets"):
            setattr(group, name, getattr(other, name))
        self.host.store.append(group.partition, tombstones, lambda error, base: None)
        return group

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
        error = self.host.check(req.group_id, "join")
        if error:
            respond(JoinResult(error, req.member_id))
            return
        cfg = self.host.config
        if not cfg.min_session_timeout_ms <= req.session_timeout_ms <= cfg.max_session_timeout_ms:
            respond(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, req.member_id))
            return
        unknown = req.member_id == ""
        other = self.host.groups.get(req.group_id)
        if other is not None and not isinstance(other, Group) and not other.is_dead:
            if not other.is_empty:
                mixed = self._mixed(other)
                if mixed is None:
                    respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, req.member_id))
                else:
                    # classic members join a consumer group (online migration, migration.py)
                    mixed.join(other, req, respond)
                return
            self._replace(other)
        group = self._group(req.group_id)
        if group is None:
            if not unknown:
                respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, req.member_id))
                return
            group = self.new_group(req.group_id)
        if not group.has(req.member_id) and group.size >= cfg.max_size:
            cancel(group.pending_members.pop(req.member_id, None))
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, ""))
            return
        if unknown:
            self._join_new_member(group, req, respond)
        else:
            self._join_current_member(group, req, respond)
        if group.is_(PREPARING):
            self.rebalance.try_complete_join(group)

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
            timer = self.host.scheduler.call_at(
                when, lambda: self.rebalance.on_pending_member_expired(group, new_id)
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
            cancel(group.pending_members.get(member_id))
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
                respond(self.rebalance.generation_result(group, member_id, with_members=True))
            else:
                self._update_member_and_rebalance(group, member, req, respond)
        elif group.is_(STABLE):
            if group.is_leader(member_id) or not member.matches(req.protocols):
                # a leader's JoinGroup always rebalances (it may have seen metadata change)
                self._update_member_and_rebalance(group, member, req, respond)
            else:
                respond(self.rebalance.generation_result(group, member_id, with_members=False))
        else:
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

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
        self.rebalance.schedule_heartbeat(
            group, member, self.host.config.new_member_join_timeout_ms
        )
        self.rebalance.maybe_prepare(group, f"adding new member {member_id}")

    def _update_member_and_rebalance(
        self, group: Group, member: Member, req: JoinRequest, respond: Callable[[JoinResult], None]
    ) -> None:
        previous = member.join_callback
        group.update_member(
            member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, respond
        )
        if previous is not None and previous is not respond:
            previous(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, member.member_id))
        self.rebalance.maybe_prepare(group, f"member {member.member_id} rejoining")

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
        self.rebalance.schedule_heartbeat(group, member)
        group.update_member(
            member, req.protocols, req.rebalance_timeout_ms, req.session_timeout_ms, respond
        )
        if group.is_(STABLE):
            if group.protocol_name != group.select_protocol():
                self.rebalance.maybe_prepare(group, f"static member {instance} changed protocol")
                return
            self._store_static_rejoin(group, req, member, old_id, new_id, old, respond)
        elif group.is_(COMPLETING):
            # the leader may be assigning the old member id: start over
            self.rebalance.prepare(group, f"static member {instance} rejoined while syncing")

    def _store_static_rejoin(
        self,
        group: Group,
        req: JoinRequest,
        member: Member,
        old_id: str,
        new_id: str,
        old: tuple[list[tuple[str, bytes]], int, int],
        respond: Callable[[JoinResult], None],
    ) -> None:
        """A static member replaced in a Stable group: answered once the group record with its
        new member id is durable (on failure the old member id is restored)."""
        instance = req.group_instance_id
        assert instance is not None
        current_leader = group.leader_id or ""
        generation = group.generation_id
        assignment = {m.member_id: m.assignment for m in group.members.values()}

        def stored(error: int) -> None:
            still = (
                self.host.live(group)
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
                self.rebalance.schedule_heartbeat(group, member)
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

        self.rebalance.store_group(group, assignment, stored)

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
        other = self.host.groups.get(group_id)
        mixed = self._mixed(other)
        if mixed is not None and not self.host.check(group_id, "sync"):
            error, data, name = mixed.sync(
                other, generation_id, member_id, group_instance_id, protocol_type, protocol_name
            )
            ok = SyncResult(error, CONSUMER_PROTOCOL, name, data)
            respond(SyncResult(error) if error else ok)
            return
        group = self._group(group_id)
        error = self._sync_error(group_id, group, generation_id, member_id, group_instance_id)
        if not error and group is not None:
            if (protocol_type is not None and protocol_type != group.protocol_type) or (
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
        self.rebalance.remove_pending_sync(group, member_id)
        if group.is_(STABLE):
            self.rebalance.schedule_heartbeat(group, member)
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
            if not self.host.live(group) or not group.is_(COMPLETING):
                return
            if group.generation_id != generation:
                return
            if error:
                self.rebalance.reset_and_propagate_assignment_error(group, error)
                self.rebalance.maybe_prepare(group, "storing the assignment failed")
                return
            for mid, m in group.members.items():
                m.assignment = full.get(mid, b"")
            group.transition(STABLE, self._wall())
            self.rebalance.propagate_assignment(group, ErrorCode.NONE)

        self.rebalance.store_group(group, full, stored)

    def _sync_error(
        self,
        group_id: str,
        group: Group | None,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
    ) -> int:
        """SyncGroup's first checks: the coordinator, the group, the member, the generation."""
        error = self.host.check(group_id, "sync")
        if error:
            return error
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(group, member_id, group_instance_id)
        if error:
            return error
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE

    def heartbeat(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None
    ) -> int:
        error = self.host.check(group_id, "heartbeat")
        if error:
            return error
        mixed = self._mixed(self.host.groups.get(group_id))
        if mixed is not None:
            return mixed.heartbeat(
                self.host.groups[group_id], generation_id, member_id, group_instance_id
            )
        group = self._group(group_id)
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
        self.rebalance.schedule_heartbeat(group, group.members[member_id])
        if group.is_(PREPARING):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(
        self, group_id: str, members: list[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """Remove members ((member id, group instance id) each; the member id may be empty
        when the instance id names a static member): top-level error and one error each."""
        error = self.host.check(group_id, "leave")
        if error:
            return error, []
        mixed = self._mixed(self.host.groups.get(group_id))
        if mixed is not None:
            return ErrorCode.NONE, mixed.leave(self.host.groups[group_id], members)
        group = self._group(group_id)
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
                self.rebalance.remove_member_and_update_group(group, group.members[current])
            elif member_id in group.pending_members:
                self.rebalance.remove_pending_member(group, member_id)
            else:
                error = self._validate_member(group, member_id, instance)
                if error:
                    errors.append(error)
                    continue
                self.rebalance.remove_member_and_update_group(group, group.members[member_id])
            errors.append(ErrorCode.NONE)
        return ErrorCode.NONE, errors

    # -- what the coordinator asks of every group type ----------------------------------------

    def describe(self, group: BaseGroup) -> GroupSummary:
        assert isinstance(group, Group)
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
        return GroupSummary(group.state.value, group.protocol_type or "", protocol or "", members)

    def listed(self, group: BaseGroup) -> ListedGroup:
        assert isinstance(group, Group)
        return ListedGroup(group.group_id, group.protocol_type or "", group.state.value, self.name)

    def delete_error(self, group: BaseGroup) -> int:
        assert isinstance(group, Group)
        return ErrorCode.NONE if group.is_(EMPTY) else ErrorCode.NON_EMPTY_GROUP

    def deleted(self, group: BaseGroup) -> list[KeyValue]:
        assert isinstance(group, Group)
        group.transition(DEAD, self._wall())
        self.rebalance.cancel_timers(group)
        return [(group_key(group.group_id), None)]

    def validate_commit(
        self,
        group: BaseGroup,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        *,
        transactional: bool,
        api_version: int = 9,
    ) -> int:
        """Kafka's validateOffsetCommit for a classic group: a commit with member fields comes
        from a member of this generation; one without (generation below 0, no member id) from
        outside group management, allowed while the group has no members (whatever its state
        for a transactional commit); none while the group completes a rebalance."""
        assert isinstance(group, Group)
        if generation_id >= 0 or member_id != "" or instance_id is not None:
            error = self._validate_member(group, member_id, instance_id)
            if error:
                return error
            if generation_id != group.generation_id:
                return ErrorCode.ILLEGAL_GENERATION
        elif not transactional and not group.is_(EMPTY):
            # a group with members takes commits from its members only
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and group.is_(COMPLETING):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def partition_errors(
        self, group: BaseGroup, member_id: str, generation_id: int, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        return {}

    def validate_fetch(self, group: BaseGroup, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch's member fields are not checked on a classic group."""
        return ErrorCode.NONE

    def committed_by(self, group: BaseGroup, member_id: str) -> None:
        assert isinstance(group, Group)
        if member_id in group.members:
            self.rebalance.schedule_heartbeat(group, group.members[member_id])

    def accepts_offset_delete(self, group: BaseGroup) -> int:
        assert isinstance(group, Group)
        if group.protocol_type != CONSUMER_PROTOCOL:
            return ErrorCode.NON_EMPTY_GROUP
        return ErrorCode.NONE

    def subscribed_topics(self, group: BaseGroup) -> set[str] | None:
        assert isinstance(group, Group)
        return subscribed_topics(group)

    # -- its records in the log ---------------------------------------------------------------

    def owns_record(self, key: object) -> bool:
        return isinstance(key, GroupKey)

    def replay(self, partition: int, key: object, value: bytes | None) -> None:
        assert isinstance(key, GroupKey)
        record = None if value is None else decode_group_value(value)
        self._replaying.setdefault(partition, {})[key.group] = record

    def finish_replay(self, partition: int) -> None:
        """Groups with members come back Stable with fresh session deadlines; groups with no
        member Empty (groups with only offsets are the offsets manager's to bring back)."""
        for group_id, meta in self._replaying.pop(partition, {}).items():
            if meta is not None:
                self._restore_group(group_id, partition, meta)

    def _restore_group(self, group_id: str, partition: int, meta: GroupRecord) -> None:
        group = Group(group_id, partition, state_timestamp=self._wall())
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
        self.host.groups[group_id] = group
        for member in group.members.values():
            self.rebalance.schedule_heartbeat(group, member)

    def unload(self, group: BaseGroup) -> None:
        """Answer whoever waits on the group with NOT_COORDINATOR (they will find the new
        coordinator)."""
        assert isinstance(group, Group)
        self.rebalance.cancel_timers(group)
        group.transition(DEAD, self._wall())
        for member in group.members.values():
            if member.join_callback is not None:
                callback, member.join_callback = member.join_callback, None
                callback(JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
            if member.sync_callback is not None:
                callback, member.sync_callback = member.sync_callback, None
                callback(SyncResult(ErrorCode.NOT_COORDINATOR))


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
