"""The consumer group type: KIP-848's protocol (ConsumerGroupHeartbeat), as Kafka 4.x serves it.

A heartbeat does three things (Kafka's ``GroupMetadataManager.consumerGroupHeartbeat``):

1. the member is created or updated; the group epoch advances when a member joins, leaves or
   changes its subscription, or the subscribed topics change (a new matching topic, new
   partitions: looked at on every heartbeat);
2. when the group epoch is past the assignment epoch, the target assignment is computed again
   by the server-side assignor (``assignors.py``; the one most members name in ServerAssignor,
   else ``uniform``);
3. the member is reconciled towards its target, incrementally: partitions it must give up are
   first left out of its assignment and kept pending revocation, its epoch unchanged, until a
   heartbeat's owned partitions (TopicPartitions) no longer hold them; then it moves to the
   assignment epoch and receives the partitions no other member owns any more (the others once
   they are released).

Errors as Kafka's: INVALID_REQUEST for a malformed heartbeat (empty group or member id, no
rebalance timeout or subscription on joining, owned partitions on joining, an epoch below -2,
a static leave without instance id), UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION (v1),
GROUP_ID_NOT_FOUND (a heartbeat past epoch 0 for a group that does not exist, or a group that is
a classic group with members: the online migration of a classic group is refused, as Kafka does
with its migration policy disabled; an Empty classic group is replaced, keeping its offsets),
UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (an epoch ahead of the member's, or behind it unless it
is the previous one and the owned partitions are within the assignment: a lost answer),
UNRELEASED_INSTANCE_ID (a static member joining while its instance id is still in use),
FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED.

Epoch -1 leaves (the member goes, the group epoch advances); -2 is a static member leaving for
now: it keeps its partitions and epoch -2 until it rejoins with its instance id (any member id,
epoch 0: it takes the old member's place and assignment) or its session times out. A member not
heartbeating within the session timeout is removed; one that keeps partitions pending
revocation past its rebalance timeout too. Changes are written to ``__consumer_offsets`` (the
group's whole state, ``records.consumer_group_value``) before the heartbeat is answered.
"""

from __future__ import annotations

import base64
import logging
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

from conformance.protocol import ErrorCode
from conformance.protocol.spec import ZERO_UUID
from reference_impl.groups.assignors import ASSIGNORS
from reference_impl.groups.consumer_assignment import (
    RECONCILED,
    REVOKING,
    compute_target,
    preferred_assignor,
    reconcile,
    subscribed_metadata,
)
from reference_impl.groups.consumer_group import (
    STATIC_LEAVE_EPOCH,
    UNREVOKED,
    ConsumerGroup,
    ConsumerMember,
)
from reference_impl.groups.group import Group
from reference_impl.groups.group_types import BaseGroup, TopicPartition, cancel
from reference_impl.groups.migration import ClassicMembers
from reference_impl.groups.modern import (
    LEAVE_EPOCH,
    GroupConfigsView,
    HeartbeatResult,
    ModernGroups,
    ModernMember,
    Partitions,
    Refused,
    TopicsView,
    copy_partitions,
)
from reference_impl.groups.records import (
    ConsumerGroupKey,
    consumer_group_key,
    consumer_group_value,
    group_key,
)
from reference_impl.groups.store import KeyValue

log = logging.getLogger(__name__)

__all__ = [
    "ConsumerGroups",
    "GroupConfigsView",
    "HeartbeatRequest",
    "HeartbeatResult",
    "TopicsView",
]


@dataclass
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    #: the partitions the member owns (None: not sent)
    topic_partitions: list[tuple[uuid.UUID, list[int]]] | None = None
    client_id: str = ""
    client_host: str = ""
    version: int = 1


def _owned(req: HeartbeatRequest) -> Partitions | None:
    if req.topic_partitions is None:
        return None
    return {t: set(ps) for t, ps in req.topic_partitions if ps}


def _kafka_uuid() -> str:
    """A random id as Kafka's Uuid.toString writes one (URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def _is_subset(owned: Partitions | None, assigned: Partitions) -> bool:
    if owned is None:
        return False
    return all(ps <= assigned.get(t, set()) for t, ps in owned.items())


class ConsumerGroups(ModernGroups[ConsumerGroup]):
    """The consumer group type: ConsumerGroupHeartbeat, and what the coordinator asks."""

    name = "consumer"
    group_class = ConsumerGroup
    leave_epochs = (LEAVE_EPOCH, STATIC_LEAVE_EPOCH)
    record_key_type = ConsumerGroupKey

    @cached_property
    def classic_members(self) -> ClassicMembers:
        """The classic members of consumer groups, and the migration both ways."""
        return ClassicMembers(self)

    def record_key(self, group_id: str) -> bytes:
        return consumer_group_key(group_id)

    def record_value(self, state: dict) -> bytes:
        return consumer_group_value(state)

    # -- ConsumerGroupHeartbeat -----------------------------------------------------------------

    def _validate(self, req: HeartbeatRequest) -> None:
        def invalid(message: str) -> Refused:
            return Refused(ErrorCode.INVALID_REQUEST, message)

        if (req.version >= 1 or req.member_epoch > 0 or req.member_epoch == LEAVE_EPOCH) and (
            req.member_id == ""
        ):
            raise invalid("MemberId can't be empty.")
        if req.group_id == "":
            raise invalid("GroupId can't be empty.")
        if req.instance_id == "":
            raise invalid("InstanceId can't be empty.")
        if req.rack_id == "":
            raise invalid("RackId can't be empty.")
        if req.member_epoch == 0:
            if req.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if req.topic_partitions is None or req.topic_partitions:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_topic_names is None and req.subscribed_topic_regex is None:
                raise invalid(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
                    "(re-)joining."
                )
        elif req.member_epoch == STATIC_LEAVE_EPOCH:
            if req.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif req.member_epoch < STATIC_LEAVE_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in ASSIGNORS:
            raise Refused(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {req.server_assignor} is not supported. Supported assignors: "
                f"{', '.join(ASSIGNORS)}.",
            )
        if req.subscribed_topic_regex is not None:
            try:
                re.compile(req.subscribed_topic_regex)
            except re.error as e:
                raise Refused(
                    ErrorCode.INVALID_REGULAR_EXPRESSION,
                    f"SubscribedTopicRegex {req.subscribed_topic_regex} is invalid: {e}",
                ) from None

    def _group(self, group_id: str, create: bool) -> tuple[ConsumerGroup, list[KeyValue]]:
        """The consumer group (new when ``create`` and there is none; an Empty classic group is
        replaced, keeping its offsets), and the records that replacing it writes."""
        group = self.host.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and not group.is_dead:
            return group, []
        if group is None:
            if not create:
                raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {group_id} not found.")
            return self._new(group_id), []
        if create and isinstance(group, Group) and group.is_empty:
            replacing = self._new(group_id)
            for name in ("offsets", "offset_positions", "pending_offsets", "pending_txn_offsets"):
                setattr(replacing, name, getattr(group, name))
            self.host.types.of(group).deleted(group)
            return replacing, [(group_key(group_id), None)]
        if create and isinstance(group, Group) and not group.is_dead:
            return self.classic_members.upgrade(group)
        raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _member(self, group: ConsumerGroup, req: HeartbeatRequest, owned: Partitions | None):
        """The member the heartbeat is from (new, or a static member taking an old one's place),
        after Kafka's checks."""
        epoch = req.member_epoch
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                if epoch != 0:
                    raise Refused(
                        ErrorCode.UNKNOWN_MEMBER_ID,
                        f"Member {req.member_id} is not a member of group {group.group_id}.",
                    )
                return ConsumerMember(req.member_id)
            if epoch != 0:
                self._check_epoch(member, epoch, owned)
            return member
        existing = group.static_member(req.instance_id)
        if epoch == 0:
            if existing is None:
                member = group.members.get(req.member_id)
                return member or ConsumerMember(req.member_id, instance_id=req.instance_id)
            if existing.member_epoch != STATIC_LEAVE_EPOCH:
                raise Refused(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} cannot "
                    f"join the group because the instance id is owned by {existing.member_id} "
                    "member.",
                )
            # the static member is back: a new member id takes the old one's place (and its
            # target), so the group epoch does not move
            target = group.target.get(existing.member_id, {})
            group.remove(existing.member_id)
            existing.cancel_timers()
            member = ConsumerMember.from_json({**existing.to_json(), "member_id": req.member_id})
            member.member_epoch = 0
            group.add(member)
            group.target[member.member_id] = target
            return member
        if existing is None:
            raise Refused(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown.")
        if existing.member_id != req.member_id:
            raise Refused(
                ErrorCode.FENCED_INSTANCE_ID,
                f"Static member {req.member_id} with instance id {req.instance_id} was fenced by "
                f"member {existing.member_id}.",
            )
        self._check_epoch(existing, epoch, owned)
        return existing

    @staticmethod
    def _check_epoch(member: ConsumerMember, epoch: int, owned: Partitions | None) -> None:
        if epoch > member.member_epoch or (
            epoch < member.member_epoch
            and (epoch != member.previous_member_epoch or not _is_subset(owned, member.assigned))
        ):
            which = "greater" if epoch > member.member_epoch else "smaller"
            raise Refused(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The consumer group member has a {which} "
                f"member epoch ({epoch}) than the one known by the group coordinator "
                f"({member.member_epoch}). The member must abandon all its partitions and rejoin.",
            )

    def _heartbeat(self, req: HeartbeatRequest, respond: Callable[[HeartbeatResult], None]) -> None:
        owned = _owned(req)
        if req.member_id == "":  # v0: the coordinator names a joining member
            req.member_id = _kafka_uuid()
        group, records = self._group(req.group_id, create=req.member_epoch == 0)
        known = req.member_id in group.members or group.static_member(req.instance_id) is not None
        self._max_size_check(group, joining=not known)
        member = self._member(group, req, owned)
        new_member = member.member_id not in group.members
        before = None if new_member else member.to_json()
        assigned_before = copy_partitions(member.assigned)
        changed = self._update(member, req)
        group.add(member)
        bump = self._advance(
            group, member, owned, group.group_epoch == 0 or new_member or changed, changed=changed
        )
        self._schedule_session(group, member)
        full = req.member_epoch == 0 or (
            req.rebalance_timeout_ms != -1
            and req.subscribed_topic_names is not None
            and req.topic_partitions is not None
        )
        self._answer_heartbeat(
            group,
            member,
            respond,
            send=full or member.assigned != assigned_before,
            store=bool(bump or records or before != member.to_json()),
            records=records,
        )

    def _advance(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        owned: Partitions | None,
        bump: bool,
        changed: bool = False,
    ) -> bool:
        """The group epoch (``bump``: the member joined or changed its subscription), the target
        assignment when it is stale, and one reconciliation step of the member (``changed``: its
        subscription changed in this heartbeat); whether the group epoch moved."""
        steps = self._advance_group_epoch(group, bump, subscribed_metadata(group, self.topics()))
        # Kafka 4.4.0 computes a group's target at most every consumer.assignment.interval.ms
        # (1 s): meanwhile members reconcile to the previous one (the group is Assigning)
        self._maybe_assign(group)
        step = reconcile(group, member, owned, changed)
        if step == REVOKING:
            self._schedule_rebalance_timeout(group, member)
        elif step == RECONCILED:
            cancel(member.rebalance_timer)
            member.rebalance_timer = None
        return steps > 0

    def _assign(self, group: ConsumerGroup) -> None:
        compute_target(group)

    @staticmethod
    def _update(member: ConsumerMember, req: HeartbeatRequest) -> bool:
        """The request's fields that are set replace the member's; whether its subscription
        (topic names, regex, assignor) changed."""
        subscription = (
            list(member.subscribed_topic_names),
            member.subscribed_topic_regex,
            member.server_assignor,
        )
        if req.instance_id is not None:
            member.instance_id = req.instance_id
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = req.rebalance_timeout_ms
        if req.server_assignor is not None:
            member.server_assignor = req.server_assignor
        if req.subscribed_topic_names is not None:
            member.subscribed_topic_names = list(req.subscribed_topic_names)
        if req.subscribed_topic_regex is not None:
            member.subscribed_topic_regex = req.subscribed_topic_regex or None
        member.client_id, member.client_host = req.client_id, req.client_host
        return subscription != (
            member.subscribed_topic_names,
            member.subscribed_topic_regex,
            member.server_assignor,
        )

    # -- timers ---------------------------------------------------------------------------------

    def _schedule_rebalance_timeout(self, group: ConsumerGroup, member: ConsumerMember) -> None:
        cancel(member.rebalance_timer)
        epoch = member.member_epoch
        when = self.host.scheduler.now_ms() + max(member.rebalance_timeout_ms, 0)

        def expired() -> None:
            if member.state == UNREVOKED and member.member_epoch == epoch:
                self._expired(group, member, "rebalance timeout: partitions not revoked")

        member.rebalance_timer = self.host.scheduler.call_at(when, expired)

    def _schedule_session(self, group: ConsumerGroup, member: ModernMember) -> None:
        """A classic member's session is its own JoinGroup's session timeout."""
        timeout = getattr(member, "classic_session_timeout_ms", None)
        if timeout is None:
            super()._schedule_session(group, member)
            return
        cancel(member.session_timer)
        member.session_timer = self.host.scheduler.call_at(
            self.host.scheduler.now_ms() + timeout,
            lambda: self._expired(group, member, "session timeout"),
        )

    def _fence(self, group: ConsumerGroup, member: ModernMember) -> None:
        """Removing the last member of the consumer protocol when classic members stay makes
        the group classic again (``migration.py``); removing the very last one empties the
        target."""
        if self.classic_members.downgrades(group, member.member_id):
            self.classic_members.to_classic(group, member.member_id)
            return
        super()._fence(group, member)
        if not group.members:
            # Kafka 4.4.0 (consumerGroupFenceMembers, from its bytecode): the last member gone,
            # the target is the empty one at the new group epoch, its timestamp 0, so the next
            # member's target is computed at once, whatever the assignment interval
            group.target = {}
            group.assignment_epoch = group.group_epoch
            group.assigned_at_ms = -(2**62)

    def _store(
        self, group: ConsumerGroup, done: Callable[[int], None], records: Sequence[KeyValue] = ()
    ) -> None:
        """As every type's, except for a group no longer held (downgraded): nothing to write."""
        if group.dead and not records:
            done(ErrorCode.NONE)
            return
        super()._store(group, done, records)

    # -- leaving --------------------------------------------------------------------------------

    def _leave(self, req: HeartbeatRequest, respond: Callable[[HeartbeatResult], None]) -> None:
        group = self.host.groups.get(req.group_id)
        if not isinstance(group, ConsumerGroup) or group.is_dead:
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {req.group_id} not found.")
        if req.instance_id is None:
            member = group.members.get(req.member_id)
            if member is None:
                raise Refused(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {req.group_id}.",
                )
        else:
            member = group.static_member(req.instance_id)
            if member is None:
                raise Refused(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {req.instance_id} is unknown."
                )
            if member.member_id != req.member_id:
                raise Refused(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"Static member {req.member_id} with instance id {req.instance_id} was "
                    f"fenced by member {member.member_id}.",
                )
        if req.member_epoch == STATIC_LEAVE_EPOCH:
            # it keeps its partitions until it is back or its session times out
            member.member_epoch = STATIC_LEAVE_EPOCH
            cancel(member.rebalance_timer)
            member.rebalance_timer = None
        else:
            self._fence(group, member)
        self._answer_leave(group, req.member_id, req.member_epoch, respond)

    # -- ConsumerGroupDescribe ----------------------------------------------------------------

    def preferred_assignor(self, group: ConsumerGroup) -> str:
        return preferred_assignor(group)

    # -- offsets of a consumer group (OffsetCommit v9+, OffsetFetch v9+) ----------------------

    def validate_member_epoch(self, group: ConsumerGroup, member_id: str | None, epoch: int) -> int:
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch != member.member_epoch:
            # a classic member's epoch is its generation (Kafka's validateMemberEpoch)
            if member.uses_classic:
                return ErrorCode.ILLEGAL_GENERATION
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    # -- what the coordinator asks of every group type ----------------------------------------

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
        """Kafka's ConsumerGroup.validateOffsetCommit: an epoch below 0 commits to a group
        without members; otherwise the member must exist and its epoch be the one given
        (STALE_MEMBER_EPOCH)."""
        assert isinstance(group, ConsumerGroup)
        if generation_id < 0 and not group.members:
            return ErrorCode.NONE
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member.uses_classic:
            # a classic member commits with its generation, its member epoch
            if generation_id != member.member_epoch:
                return ErrorCode.ILLEGAL_GENERATION
            return ErrorCode.NONE
        if not transactional and api_version < 9:
            # a member of the consumer protocol commits with OffsetCommit v9+ (Kafka 4.4.0)
            return ErrorCode.UNSUPPORTED_VERSION
        if generation_id > member.member_epoch:
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def partition_errors(
        self, group: BaseGroup, member_id: str, generation_id: int, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """KIP-1251 (Kafka 4.3+): a commit with an epoch older than the member's is accepted for
        the partitions it owns (assigned or pending revocation) since that epoch or before; the
        others are STALE_MEMBER_EPOCH."""
        assert isinstance(group, ConsumerGroup)
        member = group.members.get(member_id)
        if member is None or generation_id < 0 or generation_id >= member.member_epoch:
            return {}
        if member.uses_classic:
            return {}
        ids = {name: tid for name, (tid, _) in self.topics().items()}
        refused: dict[TopicPartition, int] = {}
        for topic, p in partitions:
            since = member.epochs.get(ids.get(topic, ZERO_UUID), {}).get(p)
            if since is None or since > generation_id:
                refused[(topic, p)] = int(ErrorCode.STALE_MEMBER_EPOCH)
        return refused

    def validate_fetch(self, group: BaseGroup, member_id: str | None, member_epoch: int) -> int:
        assert isinstance(group, ConsumerGroup)
        return self.validate_member_epoch(group, member_id, member_epoch)

    def accepts_offset_delete(self, group: BaseGroup) -> int:
        return ErrorCode.NONE
