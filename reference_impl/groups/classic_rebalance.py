"""The classic group's rebalance machinery: Kafka's rebalance and expiry timers, driven by
time rather than by requests.

``ClassicRebalance`` moves a classic group through PreparingRebalance, CompletingRebalance and
Stable: the delayed initial rebalance, completing a join once every member rejoined (or at the
rebalance timeout, without those that did not), the SyncGroup deadline, members' session
expiry, and writing the group's record (its assignment) before answering. ``classic.py`` turns
requests into these steps.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from conformance.protocol import ErrorCode
from reference_impl.groups.errors import store_group_error
from reference_impl.groups.group import Group, GroupState, JoinResult, Member, SyncResult
from reference_impl.groups.group_types import Host, cancel
from reference_impl.groups.records import GroupRecord, MemberRecord, group_key, group_value

log = logging.getLogger(__name__)

EMPTY = GroupState.EMPTY
PREPARING = GroupState.PREPARING_REBALANCE
COMPLETING = GroupState.COMPLETING_REBALANCE
STABLE = GroupState.STABLE


class ClassicRebalance:
    def __init__(self, host: Host) -> None:
        self.host = host

    def _now(self) -> int:
        return self.host.scheduler.now_ms()

    def _wall(self) -> int:
        return self.host.scheduler.wall_ms()

    def generation_result(self, group: Group, member_id: str, *, with_members: bool) -> JoinResult:
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

    # -- rebalance ----------------------------------------------------------------------------

    def maybe_prepare(self, group: Group, reason: str) -> None:
        if group.is_(STABLE, COMPLETING, EMPTY):
            self.prepare(group, reason)

    def prepare(self, group: Group, reason: str) -> None:
        log.debug("group %s: preparing rebalance: %s", group.group_id, reason)
        if group.is_(COMPLETING):
            self.reset_and_propagate_assignment_error(group, ErrorCode.REBALANCE_IN_PROGRESS)
        cancel(group.sync_timer)
        group.sync_timer = None
        cancel(group.join_timer)
        initial = group.is_(EMPTY)
        group.transition(PREPARING, self._wall())
        now = self._now()
        if initial:
            delay = self.host.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms - delay, 0)
            group.initial_join = True
            group.join_timer = self.host.scheduler.call_at(
                now + delay, lambda: self._on_initial_join_expired(group, delay, remaining)
            )
        else:
            group.initial_join = False
            group.join_timer = self.host.scheduler.call_at(
                now + group.rebalance_timeout_ms, lambda: self.complete_join(group)
            )
            self.try_complete_join(group)

    def _on_initial_join_expired(self, group: Group, delay: int, remaining: int) -> None:
        group.join_timer = None
        if not self.host.live(group) or not group.is_(PREPARING):
            return
        if group.new_member_added and remaining != 0:
            group.new_member_added = False
            next_delay = min(self.host.config.initial_rebalance_delay_ms, remaining)
            next_remaining = max(remaining - delay, 0)
            group.join_timer = self.host.scheduler.call_at(
                self._now() + next_delay,
                lambda: self._on_initial_join_expired(group, next_delay, next_remaining),
            )
        else:
            self.complete_join(group)

    def try_complete_join(self, group: Group) -> None:
        if group.is_(PREPARING) and not group.initial_join and group.all_joined():
            self.complete_join(group)

    def complete_join(self, group: Group) -> None:
        cancel(group.join_timer)
        group.join_timer = None
        if not self.host.live(group) or not group.is_(PREPARING):
            return
        for member in group.not_yet_rejoined():
            if member.group_instance_id is None:
                cancel(member.heartbeat_timer)
                group.remove(member.member_id)
        if not group.elect_joined_leader() and group.members:
            # only static members that did not rejoin are left: wait for them (or their expiry)
            group.initial_join = False
            group.join_timer = self.host.scheduler.call_at(
                self._now() + group.rebalance_timeout_ms, lambda: self.complete_join(group)
            )
            return
        group.init_next_generation(self._wall())
        if group.is_(EMPTY):
            self.store_group(group, {}, lambda error: None)
            return
        generation = group.generation_id
        for member in list(group.members.values()):
            result = self.generation_result(group, member.member_id, with_members=True)
            callback, member.join_callback = member.join_callback, None
            self.schedule_heartbeat(group, member)
            member.is_new = False
            group.pending_sync.add(member.member_id)
            if callback is not None:
                callback(result)
        group.sync_timer = self.host.scheduler.call_at(
            self._now() + group.rebalance_timeout_ms,
            lambda: self._on_pending_sync_expired(group, generation),
        )

    def _on_pending_sync_expired(self, group: Group, generation: int) -> None:
        group.sync_timer = None
        if not self.host.live(group) or group.generation_id != generation:
            return
        if not group.is_(COMPLETING, STABLE) or not group.pending_sync:
            return
        for member_id in list(group.pending_sync):
            member = group.remove(member_id)
            if member is not None:
                cancel(member.heartbeat_timer)
        self.prepare(group, "members did not send SyncGroup in time")

    def remove_pending_sync(self, group: Group, member_id: str) -> None:
        group.pending_sync.discard(member_id)
        if not group.pending_sync:
            cancel(group.sync_timer)
            group.sync_timer = None

    def reset_and_propagate_assignment_error(self, group: Group, error: int) -> None:
        for member in group.members.values():
            member.assignment = b""
        self.propagate_assignment(group, error)

    def propagate_assignment(self, group: Group, error: int) -> None:
        ok = error == ErrorCode.NONE
        ptype, pname = (group.protocol_type, group.protocol_name) if ok else (None, None)
        for member in list(group.members.values()):
            if member.sync_callback is not None:
                callback, member.sync_callback = member.sync_callback, None
                self.schedule_heartbeat(group, member)
                callback(SyncResult(error, ptype, pname, member.assignment))

    # -- member expiry ------------------------------------------------------------------------

    def schedule_heartbeat(self, group: Group, member: Member, timeout: int | None = None) -> None:
        cancel(member.heartbeat_timer)
        when = self._now() + (member.session_timeout_ms if timeout is None else timeout)
        member.heartbeat_timer = self.host.scheduler.call_at(
            when, lambda: self._on_heartbeat_expired(group, member)
        )

    def _on_heartbeat_expired(self, group: Group, member: Member) -> None:
        member.heartbeat_timer = None
        if not self.host.live(group) or group.members.get(member.member_id) is not member:
            return
        # members waiting on a rebalance count as alive, except new ones (their join expired)
        if member.is_new or not (member.awaiting_join or member.awaiting_sync):
            log.info("group %s: member %s expired", group.group_id, member.member_id)
            self.remove_member_and_update_group(group, member)

    def on_pending_member_expired(self, group: Group, member_id: str) -> None:
        if member_id in group.pending_members and self.host.live(group):
            self.remove_pending_member(group, member_id)

    def remove_pending_member(self, group: Group, member_id: str) -> None:
        cancel(group.pending_members.pop(member_id, None))
        if group.is_(PREPARING):
            self.try_complete_join(group)

    def remove_member_and_update_group(self, group: Group, member: Member) -> None:
        if member.join_callback is not None:
            callback, member.join_callback = member.join_callback, None
            callback(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, ""))
        if member.sync_callback is not None:
            callback, member.sync_callback = member.sync_callback, None
            callback(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        cancel(member.heartbeat_timer)
        member.heartbeat_timer = None
        group.remove(member.member_id)
        if group.is_(STABLE, COMPLETING):
            self.maybe_prepare(group, f"member {member.member_id} left")
        elif group.is_(PREPARING):
            self.try_complete_join(group)

    # -- persistence --------------------------------------------------------------------------

    def store_group(
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
        self.host.store.append(
            group.partition,
            [(group_key(group.group_id), group_value(record))],
            lambda error, _base: done(store_group_error(error)),
        )

    def cancel_timers(self, group: Group) -> None:
        cancel(group.join_timer)
        cancel(group.sync_timer)
        group.join_timer = group.sync_timer = None
        for timer in group.pending_members.values():
            cancel(timer)
        for member in group.members.values():
            cancel(member.heartbeat_timer)
            member.heartbeat_timer = None
