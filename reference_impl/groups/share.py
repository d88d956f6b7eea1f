"""The share group type: KIP-932's membership (ShareGroupHeartbeat), as Kafka 4.4.0 serves it.

Like a KIP-848 consumer group (``consumer.py``; what both share is ``modern.py``) without
revocation: a heartbeat creates or updates the member, advances the group epoch when a member
joins, leaves or changes its subscribed topic names (a name that names no topic counts too),
recomputes the target assignment when the group epoch is past the assignment epoch (at most
every ``share.assignment.interval.ms``, 1 s), and moves the member straight to the assignment
epoch with its target: in a share group several members may hold the same partition, nothing is
given back first.

Measured on Kafka 4.4.0 (``/work/scratch/k/probe*.py``, issue 39):

* a member joining (epoch 0, any member id: v1 members name themselves) gets the group's
  assignment epoch, and at first no partitions: Kafka assigns a share partition only once the
  share coordinator has initialized its state; that initialization then advances the group
  epoch, and a later heartbeat brings the partitions. The reference initializes the subscribed
  partitions right after the heartbeat that saw them (a timer at once), the same shape;
* the first member of a new group gets epoch 2 (one step for the member, one for the
  subscribed topics), each later join, leave or subscription change one step;
* the ``simple`` assignor (``ShareGroupDescribe``'s AssignorName): as many members as
  partitions or fewer, each partition to one member, balanced; more members than partitions,
  each partition to ceil(members / partitions) members, each member at least one; sticky;
* errors: INVALID_REQUEST (an empty member id, with no message; "GroupId can't be empty.",
  "RackId can't be empty.", "SubscribedTopicNames must be set in first request." when joining
  without topics, "MemberEpoch is invalid." below -1), GROUP_ID_NOT_FOUND ("Share group G not
  found." past epoch 0 or leaving; "Group G is not a share group."), UNKNOWN_MEMBER_ID ("Member
  M is not a member of group G."), FENCED_MEMBER_EPOCH (ahead of the member's epoch, or behind
  it and not its previous one), GROUP_MAX_SIZE_REACHED;
* DescribeGroups answers a share group as Dead without error; ListGroups lists it with
  ProtocolType and GroupType ``share``, state Empty or Stable; DeleteGroups refuses it while it
  has members (NON_EMPTY_GROUP).

Epoch -1 leaves (answer: the member id and epoch -1). A member silent for
``share.session.timeout.ms`` (group config, else the broker's 45 s) is removed. The group's whole
state is written to ``__consumer_offsets`` (``records.share_group_key``) before the heartbeat is
answered, and comes back with the partition's log.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from conformance.protocol import ErrorCode
from conformance.protocol.spec import ZERO_UUID
from reference_impl.groups.errors import store_group_error
from reference_impl.groups.group_types import BaseGroup, TopicPartition
from reference_impl.groups.modern import (
    LEAVE_EPOCH,
    HeartbeatResult,
    ModernGroup,
    ModernGroups,
    ModernMember,
    Partitions,
    Refused,
    copy_partitions,
)
from reference_impl.groups.records import ShareGroupKey, share_group_key, share_group_value

ASSIGNOR = "simple"
EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"
TopicPartitionId = tuple[uuid.UUID, int]
#: a share member's heartbeat is answered as a consumer member's
ShareHeartbeatResult = HeartbeatResult


@dataclass(eq=False)
class ShareMember(ModernMember):
    pass


@dataclass(eq=False)
class ShareGroup(ModernGroup[ShareMember]):
    #: share partitions whose state is initialized (only those are assigned, as Kafka's)
    initialized: set[tuple[uuid.UUID, int]] = field(default_factory=set)
    #: share-partition start offsets set by AlterShareGroupOffsets (what the coordinator knows)
    start_offsets: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)

    group_type = "share"
    member_type = ShareMember

    @property
    def state(self) -> str:
        if self.dead:
            return DEAD
        return STABLE if self.members else EMPTY

    def to_json(self) -> dict:
        return {
            **super().to_json(),
            "initialized": sorted([str(t), p] for t, p in self.initialized),
            "start_offsets": sorted([str(t), p, o] for (t, p), o in self.start_offsets.items()),
        }

    def restore(self, state: dict) -> None:
        super().restore(state)
        self.initialized = {(uuid.UUID(t), p) for t, p in state.get("initialized", [])}
        self.start_offsets = {(uuid.UUID(t), p): o for t, p, o in state.get("start_offsets", [])}


def simple_assign(
    members: list[str], partitions: list[TopicPartitionId], previous: dict[str, Partitions]
) -> dict[str, Partitions]:
    """Kafka's ``simple`` share assignor for members subscribing alike: with no more members
    than partitions each partition goes to one member (balanced); with more, each partition to
    ceil(members / partitions) members, each member at least one; previous holdings are kept
    where the balance allows."""
    out: dict[str, Partitions] = {m: {} for m in members}
    if not members or not partitions:
        return out
    members = sorted(members)
    sharing = max(1, math.ceil(len(members) / len(partitions)))
    slots = sharing * len(partitions)
    quota = {
        m: slots // len(members) + (1 if i < slots % len(members) else 0)
        for i, m in enumerate(members)
    }
    holders: dict[TopicPartitionId, list[str]] = {p: [] for p in partitions}
    load = dict.fromkeys(members, 0)
    for m in members:  # sticky: what a member held, while the balance allows
        for t, ps in sorted(previous.get(m, {}).items()):
            for p in sorted(ps):
                tp = (t, p)
                if tp in holders and len(holders[tp]) < sharing and load[m] < quota[m]:
                    holders[tp].append(m)
                    load[m] += 1
    for m in members:
        while load[m] < quota[m]:
            free = [tp for tp in partitions if len(holders[tp]) < sharing and m not in holders[tp]]
            if not free:
                break
            tp = min(free, key=lambda x: (len(holders[x]), x))
            holders[tp].append(m)
            load[m] += 1
    for (t, p), ms in holders.items():
        for m in ms:
            out[m].setdefault(t, set()).add(p)
    return out


class _NoGroup(Refused):
    """The group does not exist (some admin requests go on without it)."""


@dataclass
class ShareOffsets:
    """One topic of a DescribeShareGroupOffsets answer: partition -> start offset (-1: none)."""

    topic: str
    topic_id: uuid.UUID
    start_offsets: dict[int, int]


@dataclass
class ShareHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    client_id: str = ""
    client_host: str = ""


class ShareGroups(ModernGroups[ShareGroup]):
    """The share group type: ShareGroupHeartbeat, ShareGroupDescribe, and what the coordinator
    asks of every type."""

    name = "share"
    group_class = ShareGroup
    record_key_type = ShareGroupKey
    describe_check = "share describe"

    def record_key(self, group_id: str) -> bytes:
        return share_group_key(group_id)

    def record_value(self, state: dict) -> bytes:
        return share_group_value(state)

    # -- ShareGroupHeartbeat --------------------------------------------------------------------

    @staticmethod
    def _validate(req: ShareHeartbeatRequest) -> None:
        if req.member_id == "":
            raise Refused(ErrorCode.INVALID_REQUEST)  # Kafka 4.4.0 gives no message
        if req.group_id == "":
            raise Refused(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if req.rack_id == "":
            raise Refused(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if req.member_epoch == 0:
            if not req.subscribed_topic_names:
                raise Refused(
                    ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
                )
        elif req.member_epoch < LEAVE_EPOCH:
            raise Refused(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")

    def _group(self, group_id: str, create: bool) -> ShareGroup:
        group = self.host.groups.get(group_id)
        if isinstance(group, ShareGroup) and not group.is_dead:
            return group
        if group is None or group.is_dead:
            if not create:
                raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            return self._new(group_id)
        raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")

    @staticmethod
    def _check_epoch(member: ShareMember, epoch: int) -> None:
        if epoch > member.member_epoch:
            raise Refused(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a greater member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must "
                "abandon all its partitions and rejoin.",
            )
        if epoch < member.member_epoch and epoch != member.previous_member_epoch:
            raise Refused(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a smaller member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}), and it does not match "
                f"the previous member epoch ({member.previous_member_epoch}). The member must "
                "abandon all its partitions and rejoin.",
            )

    def _heartbeat(
        self, req: ShareHeartbeatRequest, respond: Callable[[ShareHeartbeatResult], None]
    ) -> None:
        group = self._group(req.group_id, create=req.member_epoch == 0)
        member = group.members.get(req.member_id)
        self._max_size_check(group, joining=member is None)
        if member is None:
            if req.member_epoch != 0:
                raise Refused(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {req.member_id} is not a member of group {group.group_id}.",
                )
            member = ShareMember(req.member_id)
        elif req.member_epoch != 0:
            self._check_epoch(member, req.member_epoch)
        new_member = member.member_id not in group.members
        before = None if new_member else member.to_json()
        assigned_before = copy_partitions(member.assigned)
        changed = False
        if req.rack_id is not None:
            member.rack_id = req.rack_id
        if req.subscribed_topic_names is not None:
            changed = list(req.subscribed_topic_names) != member.subscribed_topic_names
            member.subscribed_topic_names = list(req.subscribed_topic_names)
        member.client_id, member.client_host = req.client_id, req.client_host
        group.add(member)
        self._advance(group, member, new_member or changed)
        self._schedule_session(group, member)
        # Kafka 4.4.0 sends the assignment to a joining member, when it changed, and when the
        # heartbeat names the subscribed topics (measured: a subscription change answered with
        # an unchanged, empty assignment)
        send = (
            req.member_epoch == 0
            or req.subscribed_topic_names is not None
            or member.assigned != assigned_before
        )
        self._maybe_initialize(group)
        self._answer_heartbeat(
            group,
            member,
            respond,
            send=send,
            store=new_member or changed or before != member.to_json(),
        )

    def _subscribed(self, group: ShareGroup) -> dict[str, tuple[uuid.UUID, int]]:
        topics = self.topics()
        names = {n for m in group.members.values() for n in m.subscribed_topic_names}
        return {n: topics.get(n, (ZERO_UUID, 0)) for n in sorted(names)}

    def _advance(self, group: ShareGroup, member: ShareMember, bump: bool) -> None:
        self._advance_group_epoch(group, bump, self._subscribed(group))
        self._maybe_assign(group)
        self._reconcile(group, member)

    def _assign(self, group: ShareGroup) -> None:
        partitions = sorted(
            (tid, p)
            for tid, count in group.subscribed.values()
            for p in range(count)
            if (tid, p) in group.initialized
        )
        group.target = simple_assign(list(group.members), partitions, group.target)
        group.assignment_epoch = group.group_epoch

    @staticmethod
    def _reconcile(group: ShareGroup, member: ShareMember) -> None:
        if member.member_epoch != group.assignment_epoch:
            member.previous_member_epoch = member.member_epoch
            member.member_epoch = group.assignment_epoch
        member.assigned = copy_partitions(group.target.get(member.member_id, {}))

    def _maybe_initialize(self, group: ShareGroup) -> None:
        """Subscribed partitions whose share state is not initialized yet: initialized right
        after this heartbeat (Kafka's share coordinator does it asynchronously), which advances
        the group epoch so that the next target assigns them."""
        if not any(
            (tid, p) not in group.initialized
            for tid, count in group.subscribed.values()
            for p in range(count)
        ):
            return

        def initialize() -> None:
            if not self.host.live(group):
                return
            fresh = {
                (tid, p)
                for tid, count in group.subscribed.values()
                for p in range(count)
                if (tid, p) not in group.initialized
            }
            if fresh:
                group.initialized |= fresh
                group.group_epoch += 1
                self._store(group, lambda error: None)

        self.host.scheduler.call_at(self.host.scheduler.now_ms(), initialize)

    # -- timers ---------------------------------------------------------------------------------

    def _fence(self, group: ShareGroup, member: ModernMember) -> None:
        super()._fence(group, member)
        group.subscribed = self._subscribed(group)

    # -- leaving --------------------------------------------------------------------------------

    def _leave(
        self, req: ShareHeartbeatRequest, respond: Callable[[ShareHeartbeatResult], None]
    ) -> None:
        group = self._group(req.group_id, create=False)
        member = group.members.get(req.member_id)
        if member is None:
            raise Refused(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        self._fence(group, member)
        if not group.members:
            # Kafka 4.4.0 describes a share group its last member left with its target
            # assignment at the new group epoch (diff --models: Empty, GroupEpoch 6,
            # AssignmentEpoch 6), where one left beside others waits for the next heartbeat
            group.target = {}
            group.assignment_epoch = group.group_epoch
        self._answer_leave(group, req.member_id, LEAVE_EPOCH, respond)

    # -- share-group offsets (DescribeShareGroupOffsets, Alter…, Delete…) ----------------------

    def describe_offsets(
        self, group_id: str, asked: list[tuple[str, list[int]]] | None
    ) -> tuple[int, str | None, list[ShareOffsets]]:
        """The start offset of each partition asked (``None``: every partition the group has
        state for), -1 where it has none: a group that does not exist has none (Kafka 4.4.0
        answers it without error)."""
        error = self.host.check(group_id, "share describe")
        if error:
            return error, None, []
        group = self.host.groups.get(group_id)
        if group is not None and not group.is_dead and not isinstance(group, ShareGroup):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.", []
        share = group if isinstance(group, ShareGroup) and not group.is_dead else None
        topics = self.topics()
        if asked is None:
            held = set() if share is None else share.initialized | set(share.start_offsets)
            names = {tid: n for n, (tid, _) in topics.items()}
            by_name: dict[str, list[int]] = {}
            for tid, p in sorted(held):
                if tid in names:
                    by_name.setdefault(names[tid], []).append(p)
            asked = sorted(by_name.items())
        out = []
        for name, partitions in asked:
            tid = topics.get(name, (ZERO_UUID, 0))[0]
            starts = {} if share is None else share.start_offsets
            out.append(ShareOffsets(name, tid, {p: starts.get((tid, p), -1) for p in partitions}))
        return ErrorCode.NONE, None, out

    def _empty_share_group(self, group_id: str) -> ShareGroup:
        """The share group whose offsets an admin request changes: this coordinator's, with no
        member."""
        error = self.host.check(group_id, "share offsets")
        if error:
            raise Refused(error)
        group = self.host.groups.get(group_id)
        if group is None or group.is_dead:
            raise _NoGroup(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.")
        if not isinstance(group, ShareGroup):
            raise Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")
        if group.members:
            raise Refused(ErrorCode.NON_EMPTY_GROUP, "The group is not empty.")
        return group

    def alter_offsets(
        self,
        group_id: str,
        offsets: list[tuple[str, list[tuple[int, int]]]],
        respond: Callable[[int, str | None, dict[str, dict[int, int]]], None],
    ) -> None:
        """AlterShareGroupOffsets: the start offsets of an empty share group's partitions;
        ``respond(error, message, {topic: {partition: error}})`` once they are written. A group
        that does not exist is answered partition by partition, without error, and not created
        (Kafka 4.4.0: a later DeleteShareGroupOffsets of it is GROUP_ID_NOT_FOUND)."""
        try:
            group = self._empty_share_group(group_id)
        except Refused as r:
            if not isinstance(r, _NoGroup):
                respond(r.error, r.message, {})
                return
            group = None
        topics = self.topics()
        results: dict[str, dict[int, int]] = {}
        for name, partitions in offsets:
            tid, count = topics.get(name, (ZERO_UUID, 0))
            for p, offset in partitions:
                if p >= count or p < 0:
                    results.setdefault(name, {})[p] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    continue
                if group is not None:
                    group.start_offsets[(tid, p)] = offset
                    group.initialized.add((tid, p))
                results.setdefault(name, {})[p] = ErrorCode.NONE
        if group is None:
            respond(ErrorCode.NONE, None, results)
            return
        self._store(
            group, lambda error: respond(store_group_error(error) if error else 0, None, results)
        )

    def delete_offsets(
        self,
        group_id: str,
        names: list[str],
        respond: Callable[[int, str | None, dict[str, int]], None],
    ) -> None:
        """DeleteShareGroupOffsets: an empty share group forgets the share state of the topics
        named (their partitions are initialized afresh when next assigned);
        ``respond(error, message, {topic: error})`` once that is written."""
        try:
            group = self._empty_share_group(group_id)
        except Refused as r:
            respond(r.error, r.message, {})
            return
        topics = self.topics()
        results: dict[str, int] = {}
        for name in names:
            if name not in topics:
                results[name] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                continue
            tid = topics[name][0]
            group.start_offsets = {tp: o for tp, o in group.start_offsets.items() if tp[0] != tid}
            group.initialized = {tp for tp in group.initialized if tp[0] != tid}
            results[name] = ErrorCode.NONE
        self._store(
            group, lambda error: respond(store_group_error(error) if error else 0, None, results)
        )

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
        """A share group has no committed offsets of its own (its members acknowledge)."""
        return ErrorCode.GROUP_ID_NOT_FOUND

    def partition_errors(
        self, group: BaseGroup, member_id: str, generation_id: int, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        return {}

    def validate_fetch(self, group: BaseGroup, member_id: str | None, member_epoch: int) -> int:
        return ErrorCode.GROUP_ID_NOT_FOUND

    def accepts_offset_delete(self, group: BaseGroup) -> int:
        return ErrorCode.GROUP_ID_NOT_FOUND
