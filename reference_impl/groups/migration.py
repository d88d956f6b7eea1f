"""The online migration between a classic group and a KIP-848 consumer group (Kafka 4.x's
``group.consumer.migration.policy``, BIDIRECTIONAL by default in 4.0 to 4.4.0).

* Upgrade: a ConsumerGroupHeartbeat joining a classic group that has members and whose
  protocol type is "consumer" turns it into a consumer group: each classic member becomes a
  member of it that keeps using the classic protocol, its epoch the classic generation and its
  assignment the one its SyncGroup gave (the target too), the group epoch the generation. A
  classic group of another protocol type stays and the heartbeat is GROUP_ID_NOT_FOUND.
* Classic members in a consumer group (Kafka's ``classicGroup*ToConsumerGroup``): JoinGroup
  (an unknown member of a v4+ client first gets MEMBER_ID_REQUIRED) creates or updates the
  member from its ConsumerProtocolSubscription, moves the group epoch and the target as a
  heartbeat would, reconciles it with the partitions it says it owns, and answers at once with
  the member epoch as generation, protocol type "consumer", its first protocol, no leader and no
  member list. SyncGroup (generation = member epoch) answers its assigned partitions as a
  ConsumerProtocolAssignment, REBALANCE_IN_PROGRESS when the target moved past it (unless it is
  revoking). Heartbeat answers REBALANCE_IN_PROGRESS when the group epoch is past the member's,
  or it must revoke, or partitions it waits for are free. LeaveGroup removes members; a classic
  member's own session timeout applies; its SyncGroup must follow its JoinGroup within the
  rebalance timeout.
* Downgrade: when the last member of the consumer protocol leaves (epoch -1, or its session or
  rebalance timeout) and classic members remain, the group becomes a classic group again of
  generation = group epoch and protocol "consumer", its members keep their assignments, and a
  rebalance starts (``to_classic``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING

from conformance.protocol import ErrorCode
from reference_impl.groups.consumer_group import (
    UNRELEASED,
    UNREVOKED,
    ConsumerGroup,
    ConsumerMember,
)
from reference_impl.groups.consumer_protocol import (
    Malformed,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    version_of,
)
from reference_impl.groups.group import Group, GroupState, JoinRequest, JoinResult, SyncResult
from reference_impl.groups.group import Member as ClassicMember
from reference_impl.groups.group_types import BaseGroup, cancel
from reference_impl.groups.modern import Partitions, Refused, copy_partitions
from reference_impl.groups.records import group_key
from reference_impl.groups.store import KeyValue

if TYPE_CHECKING:
    from reference_impl.groups.consumer import ConsumerGroups

#: the protocol type of a consumer's classic group (the only one a consumer group takes in)
CONSUMER_PROTOCOL = "consumer"


def _by_id(names: dict[str, set[int]], topics: dict[str, tuple[uuid.UUID, int]]) -> Partitions:
    return {topics[n][0]: set(ps) for n, ps in names.items() if n in topics and ps}


def _by_name(parts: Partitions, topics: dict[str, tuple[uuid.UUID, int]]) -> dict[str, set[int]]:
    names = {tid: n for n, (tid, _) in topics.items()}
    return {names[t]: set(ps) for t, ps in parts.items() if t in names and ps}


def _consumer(group: BaseGroup | None) -> ConsumerGroup:
    assert isinstance(group, ConsumerGroup)
    return group


class ClassicMembers:
    """What a consumer group answers to the classic APIs, and the conversions both ways."""

    def __init__(self, groups: ConsumerGroups) -> None:
        self.groups = groups
        self.host = groups.host

    # -- upgrade --------------------------------------------------------------------------------

    def upgrade(self, classic: Group) -> tuple[ConsumerGroup, list[KeyValue]]:
        """The consumer group a classic group with members becomes (Kafka's
        ConsumerGroup.fromClassicGroup), and the classic group's tombstone."""
        gid = classic.group_id
        if classic.protocol_type != CONSUMER_PROTOCOL:
            raise Refused(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {gid} to consumer group because the group does "
                "not use the consumer embedded protocol.",
            )
        if len(classic.members) > self.groups._setting("max_size"):
            raise Refused(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {gid} to consumer group because the group size "
                "exceeds the consumer group maximum size.",
            )
        topics = self.groups.topics()
        members = []
        try:
            for m in classic.members.values():
                sub = decode_subscription(m.metadata(classic.protocol_name or ""))
                assigned = _by_id(decode_assignment(m.assignment), topics)
                members.append((m, sub, assigned))
        except (Malformed, KeyError):
            raise Refused(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade the classic group {gid} to consumer group because the "
                "embedded consumer protocol is malformed.",
            ) from None
        for m in classic.members.values():
            # members waiting on a classic rebalance are told to join the new one
            join, sync = m.join_callback, m.sync_callback
            m.join_callback = m.sync_callback = None
            if join is not None:
                join(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, m.member_id))
            if sync is not None:
                sync(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        self.host.types.of(classic).deleted(classic)
        group = self.groups._new(gid)
        for name in ("offsets", "offset_positions", "pending_offsets", "pending_txn_offsets"):
            setattr(group, name, getattr(classic, name))
        group.group_epoch = group.assignment_epoch = classic.generation_id
        for m, sub, assigned in members:
            member = ConsumerMember(
                m.member_id,
                rack_id=sub.rack_id,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(sub.topics),
                member_epoch=classic.generation_id,
                previous_member_epoch=classic.generation_id,
                assigned=assigned,
                instance_id=m.group_instance_id,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                classic_session_timeout_ms=m.session_timeout_ms,
                classic_protocols=list(m.protocols),
            )
            member.note_epochs()
            group.add(member)
            group.target[member.member_id] = copy_partitions(assigned)
            self.groups._schedule_session(group, member)
        return group, [(group_key(gid), None)]

    # -- JoinGroup ------------------------------------------------------------------------------

    def join(self, group: BaseGroup, req: JoinRequest, respond: Callable[[JoinResult], None]):
        try:
            self._join(_consumer(group), req, respond)
        except Refused as r:
            respond(JoinResult(r.error, req.member_id))

    def _join(self, group: ConsumerGroup, req: JoinRequest, respond: Callable[[JoinResult], None]):
        names = [n for n, _ in req.protocols]
        common = [
            set(n for n, _ in m.classic_protocols or ())
            for m in group.members.values()
            if m.uses_classic and m.member_id != req.member_id
        ]
        if (
            req.protocol_type != CONSUMER_PROTOCOL
            or not names
            or any(not c & set(names) for c in common)
        ):
            raise Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        unknown = req.member_id == ""
        member_id = str(uuid.uuid4()) if unknown else req.member_id
        joining = (
            member_id not in group.members and group.static_member(req.group_instance_id) is None
        )
        try:
            self.groups._max_size_check(group, joining=joining)
        except Refused:
            raise Refused(ErrorCode.GROUP_MAX_SIZE_REACHED) from None
        if unknown and req.group_instance_id is None and req.require_known_member_id:
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id))
            return
        try:
            sub = decode_subscription(req.protocols[0][1])
        except Malformed:
            raise Refused(ErrorCode.INCONSISTENT_GROUP_PROTOCOL) from None
        member = self._member(group, req, member_id, unknown)
        new = member.member_id not in group.members
        before = (list(member.subscribed_topic_names), member.server_assignor)
        member.subscribed_topic_names = list(sub.topics)
        member.server_assignor = None
        member.rack_id = sub.rack_id or member.rack_id
        member.instance_id = req.group_instance_id
        member.rebalance_timeout_ms = req.rebalance_timeout_ms
        member.client_id, member.client_host = req.client_id, req.client_host
        member.classic_session_timeout_ms = req.session_timeout_ms
        member.classic_protocols = list(req.protocols)
        group.add(member)
        changed = new or before != (member.subscribed_topic_names, member.server_assignor)
        owned = _by_id(sub.owned, self.groups.topics())
        self.groups._advance(group, member, owned, group.group_epoch == 0 or changed)
        result = JoinResult(
            ErrorCode.NONE,
            member.member_id,
            member.member_epoch,
            CONSUMER_PROTOCOL,
            names[0],
            "",
        )

        def stored(error: int) -> None:
            if error:
                respond(JoinResult(error, member.member_id))
                return
            self.groups._schedule_session(group, member)
            self._expect(group, member, "SyncGroup")
            respond(result)

        self.groups._store(group, stored)

    def _member(
        self, group: ConsumerGroup, req: JoinRequest, member_id: str, unknown: bool
    ) -> ConsumerMember:
        existing = group.static_member(req.group_instance_id)
        if existing is not None and existing.member_id != member_id:
            if not unknown:
                raise Refused(ErrorCode.FENCED_INSTANCE_ID)
            # a static member back with a new member id takes the old one's place
            target = group.target.get(existing.member_id, {})
            group.remove(existing.member_id)
            existing.cancel_timers()
            member = ConsumerMember.from_json({**existing.to_json(), "member_id": member_id})
            group.add(member)
            group.target[member_id] = target
            return member
        member = group.members.get(member_id)
        if member is None:
            return ConsumerMember(member_id)
        if not member.uses_classic:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID)
        return member

    def _expect(self, group: ConsumerGroup, member: ConsumerMember, what: str) -> None:
        """The member must send ``what`` within its rebalance timeout, else it is removed."""
        cancel(member.classic_timer)
        when = self.host.scheduler.now_ms() + max(member.rebalance_timeout_ms, 0)
        member.classic_timer = self.host.scheduler.call_at(
            when, lambda: self.groups._expired(group, member, f"no {what} in time")
        )

    # -- SyncGroup, Heartbeat, LeaveGroup -------------------------------------------------------

    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None
    ) -> ConsumerMember:
        if instance_id is not None:
            member = group.static_member(instance_id)
            if member is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID)
            if member.member_id != member_id:
                raise Refused(ErrorCode.FENCED_INSTANCE_ID)
        else:
            found = group.members.get(member_id)
            if found is None:
                raise Refused(ErrorCode.UNKNOWN_MEMBER_ID)
            member = found
        if not member.uses_classic:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID)
        return member

    def sync(
        self,
        group: BaseGroup | None,
        generation_id: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> tuple[int, bytes, str | None]:
        """(error, assignment, protocol name) of a classic member's SyncGroup."""
        group = _consumer(group)
        try:
            member = self._classic_member(group, member_id, instance_id)
        except Refused as r:
            return r.error, b"", None
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION, b"", None
        assert member.classic_protocols is not None
        first, metadata = member.classic_protocols[0]
        if (protocol_type is not None and protocol_type != CONSUMER_PROTOCOL) or (
            protocol_name is not None and protocol_name != first
        ):
            return ErrorCode.INCONSISTENT_GROUP_PROTOCOL, b"", None
        if group.assignment_epoch > member.member_epoch and member.state != UNREVOKED:
            self._expect(group, member, "JoinGroup")
            return ErrorCode.REBALANCE_IN_PROGRESS, b"", None
        cancel(member.classic_timer)
        member.classic_timer = None
        self.groups._schedule_session(group, member)
        try:
            version = version_of(metadata)
        except Malformed:
            version = 0
        names = _by_name(member.assigned, self.groups.topics())
        return ErrorCode.NONE, encode_assignment(names, version), first

    def heartbeat(
        self, group: BaseGroup, generation_id: int, member_id: str, instance_id: str | None
    ) -> int:
        group = _consumer(group)
        try:
            member = self._classic_member(group, member_id, instance_id)
        except Refused as r:
            return r.error
        if generation_id != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION
        self.groups._schedule_session(group, member)
        if (
            member.member_epoch < group.group_epoch
            or member.state == UNREVOKED
            or (member.state == UNRELEASED and self._released(group, member))
        ):
            if member.classic_timer is None:
                self._expect(group, member, "JoinGroup")
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    @staticmethod
    def _released(group: ConsumerGroup, member: ConsumerMember) -> bool:
        """Whether a partition of its target it does not have yet is free now."""
        target = group.target.get(member.member_id, {})
        return any(
            group.owner(t, p, member.member_id) is None
            for t, ps in target.items()
            for p in ps - member.assigned.get(t, set())
        )

    def leave(self, group: BaseGroup, members: list[tuple[str, str | None]]) -> list[int]:
        group = _consumer(group)
        errors: list[int] = []
        for member_id, instance_id in members:
            if group.dead:  # an earlier one's leaving made it a classic group again
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            if member_id == "" and instance_id is not None:
                found = group.static_member(instance_id)
                member_id = found.member_id if found else "\0"
            member = group.members.get(member_id)
            if member is None or (
                instance_id is not None and member.instance_id not in (None, instance_id)
            ):
                errors.append(
                    ErrorCode.UNKNOWN_MEMBER_ID if member is None else ErrorCode.FENCED_INSTANCE_ID
                )
                continue
            self.groups._fence(group, member)
            errors.append(ErrorCode.NONE)
        if any(e == ErrorCode.NONE for e in errors):
            self.groups._store(group, lambda error: None)
        return errors

    # -- downgrade ------------------------------------------------------------------------------

    def downgrades(self, group: ConsumerGroup, leaving: str) -> bool:
        """Whether ``leaving`` going makes the group classic again: it is the last member of the
        consumer protocol and classic members stay (within the classic group's maximum size)."""
        left = [m for m in group.members.values() if m.member_id != leaving]
        if group.dead or not left or not group.uses_classic_only(but=leaving):
            return False
        # a classic group needs a protocol every member supports
        common = set.intersection(*({n for n, _ in m.classic_protocols or ()} for m in left))
        return bool(common) and len(left) <= self.host.config.max_size

    def to_classic(self, group: ConsumerGroup, leaving: str) -> Group:
        """The classic group the consumer group becomes without ``leaving`` (Kafka's
        ClassicGroup.fromConsumerGroup), preparing a rebalance; the consumer group's record is
        tombstoned and the classic one written by the rebalance."""
        topics = self.groups.topics()
        leaver = group.members.get(leaving)
        if leaver is not None:
            leaver.cancel_timers()
        self.groups.unload(group)
        self.host.store.append(
            group.partition, [(self.groups.record_key(group.group_id), None)], lambda e, b: None
        )
        classic_types = self.host.types.named("classic")
        classic = classic_types.new_group(group.group_id)  # type: ignore[union-attr]
        for name in ("offsets", "offset_positions", "pending_offsets", "pending_txn_offsets"):
            setattr(classic, name, getattr(group, name))
        classic.generation_id = group.group_epoch
        classic.protocol_type = CONSUMER_PROTOCOL
        for m in group.members.values():
            if m.member_id == leaving:
                continue
            protocols = list(m.classic_protocols or ())
            version = version_of(protocols[0][1]) if protocols else 0
            member = ClassicMember(
                m.member_id,
                m.instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.classic_session_timeout_ms or self.host.config.min_session_timeout_ms,
                CONSUMER_PROTOCOL,
                protocols,
                assignment=encode_assignment(_by_name(m.owns(), topics), version),
            )
            classic.add(member)
        classic.protocol_name = classic.select_protocol()
        classic.leader_id = next(iter(classic.members), None)
        # made Stable at the consumer group's epoch, as Kafka's, then rebalanced
        classic.state, classic.state_timestamp = GroupState.STABLE, self.host.scheduler.wall_ms()
        rebalance = classic_types.rebalance  # type: ignore[union-attr]
        for member in classic.members.values():
            rebalance.schedule_heartbeat(classic, member)
        assignment = {m.member_id: m.assignment for m in classic.members.values()}
        rebalance.store_group(classic, assignment, lambda error: None)
        rebalance.prepare(classic, f"Downgrade group {group.group_id} from consumer to classic.")
        return classic


__all__ = ["ClassicMembers"]
