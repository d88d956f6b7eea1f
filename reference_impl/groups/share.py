"""The share group type: KIP-932's membership (ShareGroupHeartbeat), as Kafka 4.4.0 serves it.

Like a KIP-848 consumer group (``consumer.py``) without revocation: a heartbeat creates or
updates the member, advances the group epoch when a member joins, leaves or changes its
subscribed topic names (a name that names no topic counts too), recomputes the target
assignment when the group epoch is past the assignment epoch (at most every
``share.assignment.interval.ms``, 1 s), and moves the member straight to the assignment epoch
with its target: in a share group several members may hold the same partition, nothing is
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

import logging
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from conformance.protocol import ErrorCode
from conformance.protocol.spec import ZERO_UUID
from reference_impl.groups.consumer import GroupConfigsView, TopicsView
from reference_impl.groups.consumer_group import (
    LEAVE_EPOCH,
    Partitions,
    copy_partitions,
    partitions_from_json,
    partitions_json,
)
from reference_impl.groups.errors import store_group_error
from reference_impl.groups.group_types import (
    BaseGroup,
    GroupSummary,
    Host,
    ListedGroup,
    TopicPartition,
    cancel,
)
from reference_impl.groups.records import (
    ShareGroupKey,
    decode_consumer_group_value,
    share_group_key,
    share_group_value,
)
from reference_impl.groups.store import KeyValue

log = logging.getLogger(__name__)

SESSION_TIMEOUT_CONFIG = "share.session.timeout.ms"
HEARTBEAT_INTERVAL_CONFIG = "share.heartbeat.interval.ms"
ASSIGNOR = "simple"
EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"
TopicPartitionId = tuple[uuid.UUID, int]


@dataclass(eq=False)
class ShareMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: Partitions = field(default_factory=dict)
    session_timer: object | None = None

    def to_json(self) -> dict:
        return {
            "member_id": self.member_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "subscribed_topic_names": list(self.subscribed_topic_names),
            "member_epoch": self.member_epoch,
            "previous_member_epoch": self.previous_member_epoch,
            "assigned": partitions_json(self.assigned),
        }

    @classmethod
    def from_json(cls, d: dict) -> ShareMember:
        return cls(
            d["member_id"],
            d.get("rack_id"),
            d.get("client_id", ""),
            d.get("client_host", ""),
            list(d.get("subscribed_topic_names", [])),
            d.get("member_epoch", 0),
            d.get("previous_member_epoch", -1),
            partitions_from_json(d.get("assigned", {})),
        )


@dataclass(eq=False)
class ShareGroup(BaseGroup):
    members: dict[str, ShareMember] = field(default_factory=dict)
    group_epoch: int = 0
    assignment_epoch: int = 0
    assigned_at_ms: int = -(2**62)
    #: topic name -> (topic id, partition count) of every subscribed name ((nil, 0): no topic)
    subscribed: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    #: member id -> its target partitions
    target: dict[str, Partitions] = field(default_factory=dict)
    #: share partitions whose state is initialized (only those are assigned, as Kafka's)
    initialized: set[tuple[uuid.UUID, int]] = field(default_factory=set)
    dead: bool = False

    group_type = "share"

    @property
    def is_dead(self) -> bool:
        return self.dead

    @property
    def is_empty(self) -> bool:
        return not self.members

    @property
    def state(self) -> str:
        if self.dead:
            return DEAD
        return STABLE if self.members else EMPTY

    def to_json(self) -> dict:
        return {
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "members": [m.to_json() for m in self.members.values()],
            "subscribed": {n: [str(t), c] for n, (t, c) in self.subscribed.items()},
            "target": {m: partitions_json(p) for m, p in self.target.items()},
            "initialized": sorted([str(t), p] for t, p in self.initialized),
        }

    def restore(self, state: dict) -> None:
        self.group_epoch = state.get("group_epoch", 0)
        self.assignment_epoch = state.get("assignment_epoch", 0)
        self.members = {m["member_id"]: ShareMember.from_json(m) for m in state.get("members", [])}
        self.subscribed = {
            n: (uuid.UUID(t), c) for n, (t, c) in state.get("subscribed", {}).items()
        }
        self.target = {m: partitions_from_json(p) for m, p in state.get("target", {}).items()}
        self.initialized = {(uuid.UUID(t), p) for t, p in state.get("initialized", [])}


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


@dataclass
class ShareHeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: list[str] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass
class ShareHeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: the member's assigned partitions; None when not sent
    assignment: Partitions | None = None


@dataclass
class _Refused(Exception):
    error: int
    message: str | None = None


class ShareGroups:
    """The share group type: ShareGroupHeartbeat, ShareGroupDescribe, and what the coordinator
    asks of every type."""

    name = "share"

    def __init__(
        self,
        host: Host,
        topics: TopicsView | None = None,
        group_configs: GroupConfigsView | None = None,
    ) -> None:
        self.host = host
        self.topics = topics or (lambda: {})
        self.group_configs = group_configs or (lambda group_id: {})
        self._replaying: dict[int, dict[str, dict | None]] = {}

    # -- configs --------------------------------------------------------------------------------

    def _config(self, group_id: str, name: str, default: int) -> int:
        value = self.group_configs(group_id).get(name)
        return int(value) if value else default

    def session_timeout_ms(self, group_id: str) -> int:
        return self._config(
            group_id, SESSION_TIMEOUT_CONFIG, self.host.config.share_session_timeout_ms
        )

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._config(
            group_id, HEARTBEAT_INTERVAL_CONFIG, self.host.config.share_heartbeat_interval_ms
        )

    # -- ShareGroupHeartbeat --------------------------------------------------------------------

    def heartbeat(
        self, req: ShareHeartbeatRequest, respond: Callable[[ShareHeartbeatResult], None]
    ) -> None:
        if not self.host.active:
            respond(ShareHeartbeatResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        try:
            self._validate(req)
            error = self.host.check(req.group_id, "share heartbeat")
            if error:
                raise _Refused(error)
            if req.member_epoch == LEAVE_EPOCH:
                self._leave(req, respond)
            else:
                self._heartbeat(req, respond)
        except _Refused as r:
            respond(ShareHeartbeatResult(r.error, r.message))

    @staticmethod
    def _validate(req: ShareHeartbeatRequest) -> None:
        if req.member_id == "":
            raise _Refused(ErrorCode.INVALID_REQUEST)  # Kafka 4.4.0 gives no message
        if req.group_id == "":
            raise _Refused(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if req.rack_id == "":
            raise _Refused(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        if req.member_epoch == 0:
            if not req.subscribed_topic_names:
                raise _Refused(
                    ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request."
                )
        elif req.member_epoch < LEAVE_EPOCH:
            raise _Refused(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")

    def _group(self, group_id: str, create: bool) -> ShareGroup:
        group = self.host.groups.get(group_id)
        if isinstance(group, ShareGroup) and not group.is_dead:
            return group
        if group is None or group.is_dead:
            if not create:
                raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Share group {group_id} not found.")
            return self._new(group_id)
        raise _Refused(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.")

    def _new(self, group_id: str) -> ShareGroup:
        group = ShareGroup(
            group_id,
            self.host.partition_for(group_id),
            state_timestamp=self.host.scheduler.wall_ms(),
        )
        self.host.groups[group_id] = group
        return group

    @staticmethod
    def _check_epoch(member: ShareMember, epoch: int) -> None:
        if epoch > member.member_epoch:
            raise _Refused(
                ErrorCode.FENCED_MEMBER_EPOCH,
                f"The share group member has a greater member epoch ({epoch}) than the one "
                f"known by the group coordinator ({member.member_epoch}). The member must "
                "abandon all its partitions and rejoin.",
            )
        if epoch < member.member_epoch and epoch != member.previous_member_epoch:
            raise _Refused(
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
        max_size = self.host.config.share_max_size
        if member is None and len(group.members) >= max_size:
            raise _Refused(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The share group has reached its maximum capacity of {max_size} members.",
            )
        if member is None:
            if req.member_epoch != 0:
                raise _Refused(
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
        group.members[member.member_id] = member
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

        def answer(error: int = 0) -> None:
            if error:
                respond(ShareHeartbeatResult(store_group_error(error)))
                return
            respond(
                ShareHeartbeatResult(
                    ErrorCode.NONE,
                    member_id=member.member_id,
                    member_epoch=member.member_epoch,
                    heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
                    assignment=copy_partitions(member.assigned) if send else None,
                )
            )

        if new_member or before != member.to_json() or changed:
            self._store(group, answer)
        else:
            answer()

    def _subscribed(self, group: ShareGroup) -> dict[str, tuple[uuid.UUID, int]]:
        topics = self.topics()
        names = {n for m in group.members.values() for n in m.subscribed_topic_names}
        return {n: topics.get(n, (ZERO_UUID, 0)) for n in sorted(names)}

    def _advance(self, group: ShareGroup, member: ShareMember, bump: bool) -> None:
        subscribed = self._subscribed(group)
        changed = subscribed != group.subscribed
        steps = int(bump) + int(changed) if group.group_epoch == 0 else int(bump or changed)
        group.subscribed = subscribed
        group.group_epoch += steps
        self._maybe_assign(group)
        self._reconcile(group, member)

    def _maybe_assign(self, group: ShareGroup) -> None:
        now = self.host.scheduler.now_ms()
        interval = self.host.config.share_assignment_interval_ms
        if group.group_epoch > group.assignment_epoch and (
            group.assignment_epoch == 0 or now - group.assigned_at_ms >= interval
        ):
            partitions = sorted(
                (tid, p)
                for tid, count in group.subscribed.values()
                for p in range(count)
                if (tid, p) in group.initialized
            )
            group.target = simple_assign(list(group.members), partitions, group.target)
            group.assignment_epoch = group.group_epoch
            group.assigned_at_ms = now

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

    def _schedule_session(self, group: ShareGroup, member: ShareMember) -> None:
        cancel(member.session_timer)
        when = self.host.scheduler.now_ms() + self.session_timeout_ms(group.group_id)
        member.session_timer = self.host.scheduler.call_at(
            when, lambda: self._expired(group, member)
        )

    def _expired(self, group: ShareGroup, member: ShareMember) -> None:
        if not self.host.live(group) or group.members.get(member.member_id) is not member:
            return
        log.info(
            "share group %s: member %s removed (session timeout)", group.group_id, member.member_id
        )
        self._fence(group, member)
        self._store(group, lambda error: None)

    def _fence(self, group: ShareGroup, member: ShareMember) -> None:
        cancel(member.session_timer)
        member.session_timer = None
        del group.members[member.member_id]
        group.target.pop(member.member_id, None)
        group.subscribed = self._subscribed(group)
        group.group_epoch += 1

    # -- leaving --------------------------------------------------------------------------------

    def _leave(
        self, req: ShareHeartbeatRequest, respond: Callable[[ShareHeartbeatResult], None]
    ) -> None:
        group = self._group(req.group_id, create=False)
        member = group.members.get(req.member_id)
        if member is None:
            raise _Refused(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"Member {req.member_id} is not a member of group {req.group_id}.",
            )
        self._fence(group, member)

        def answer(error: int) -> None:
            if error:
                respond(ShareHeartbeatResult(store_group_error(error)))
            else:
                respond(
                    ShareHeartbeatResult(
                        ErrorCode.NONE, member_id=req.member_id, member_epoch=LEAVE_EPOCH
                    )
                )

        self._store(group, answer)

    # -- persistence ----------------------------------------------------------------------------

    def _store(self, group: ShareGroup, done: Callable[[int], None]) -> None:
        records: list[KeyValue] = [
            (share_group_key(group.group_id), share_group_value(group.to_json()))
        ]
        self.host.store.append(group.partition, records, lambda error, _base: done(error))

    # -- ShareGroupDescribe ---------------------------------------------------------------------

    def describe_share_group(self, group_id: str) -> tuple[int, str | None, ShareGroup | None]:
        error = self.host.check(group_id, "share describe")
        if error:
            return error, None, None
        group = self.host.groups.get(group_id)
        if group is None or group.is_dead:
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        if not isinstance(group, ShareGroup):
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a share group.", None
        return ErrorCode.NONE, None, group

    # -- what the coordinator asks of every group type ----------------------------------------

    def describe(self, group: BaseGroup) -> GroupSummary:
        """DescribeGroups on a share group: Dead, no error (Kafka 4.4.0)."""
        return GroupSummary(DEAD, "", "", [])

    def listed(self, group: BaseGroup) -> ListedGroup:
        assert isinstance(group, ShareGroup)
        return ListedGroup(group.group_id, "share", group.state, self.name)

    def delete_error(self, group: BaseGroup) -> int:
        assert isinstance(group, ShareGroup)
        return ErrorCode.NONE if group.is_empty else ErrorCode.NON_EMPTY_GROUP

    def deleted(self, group: BaseGroup) -> list[KeyValue]:
        assert isinstance(group, ShareGroup)
        self.unload(group)
        return [(share_group_key(group.group_id), None)]

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

    def committed_by(self, group: BaseGroup, member_id: str) -> None:
        return None

    def accepts_offset_delete(self, group: BaseGroup) -> int:
        return ErrorCode.GROUP_ID_NOT_FOUND

    def subscribed_topics(self, group: BaseGroup) -> set[str] | None:
        assert isinstance(group, ShareGroup)
        return set(group.subscribed)

    def owns_record(self, key: object) -> bool:
        return isinstance(key, ShareGroupKey)

    def replay(self, partition: int, key: object, value: bytes | None) -> None:
        assert isinstance(key, ShareGroupKey)
        state = None if value is None else decode_consumer_group_value(value)
        self._replaying.setdefault(partition, {})[key.group] = state

    def finish_replay(self, partition: int) -> None:
        for group_id, state in self._replaying.pop(partition, {}).items():
            if state is None:
                continue
            group = self._new(group_id)
            group.partition = partition
            group.restore(state)
            for member in group.members.values():
                self._schedule_session(group, member)

    def unload(self, group: BaseGroup) -> None:
        assert isinstance(group, ShareGroup)
        group.dead = True
        for m in group.members.values():
            cancel(m.session_timer)
            m.session_timer = None
