"""What KIP-848 consumer groups (``consumer.py``) and KIP-932 share groups (``share.py``) share.

Both are groups of Kafka's heartbeat protocols: a member joins with epoch 0 and heartbeats with
its member epoch; the group epoch advances when a member joins, leaves or changes its
subscription, or the subscribed topics change; a target assignment is computed for a group
epoch (the assignment epoch, at most every ``<type>.assignment.interval.ms``); each member
moves to the assignment epoch as it reconciles. The two types differ in how a member
reconciles (a consumer group revokes before it assigns, a share group hands partitions to
several members at once), in their request checks and in what they answer to offset commits.

* ``ModernMember`` / ``ModernGroup``: the bookkeeping both keep (ids, epochs, subscription,
  assignment, the session timer), written as one JSON state per group;
* ``ModernGroups``: a group type's common machinery: its configs by group (the group config
  ``<type>.session.timeout.ms``, else the broker's), the heartbeat's frame (coordinator active,
  request checks, leave or heartbeat, refusals answered), new groups, the group epoch's steps,
  the target's timing, session timeouts, the group's state written to ``__consumer_offsets``
  before a heartbeat that changed it is answered, describing a group, and what the coordinator
  asks of every type (``group_types.GroupType``): listing, deleting, replaying, unloading.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Generic, TypeVar

from conformance.protocol import ErrorCode
from reference_impl.groups.errors import store_group_error
from reference_impl.groups.group_types import (
    DEAD_SUMMARY,
    BaseGroup,
    GroupSummary,
    Host,
    ListedGroup,
    cancel,
)
from reference_impl.groups.records import decode_consumer_group_value
from reference_impl.groups.store import KeyValue

log = logging.getLogger(__name__)

#: topic id -> partitions
Partitions = dict[uuid.UUID, set[int]]
#: topic name -> (topic id, partition count): the cluster's topics as the coordinator sees them
TopicsView = Callable[[], dict[str, tuple[uuid.UUID, int]]]
#: group id -> its configs (IncrementalAlterConfigs on the GROUP resource)
GroupConfigsView = Callable[[str], dict[str, str]]

#: the member epoch of a leaving member
LEAVE_EPOCH = -1


def copy_partitions(p: Partitions) -> Partitions:
    return {t: set(ps) for t, ps in p.items() if ps}


def partitions_json(p: Partitions) -> dict[str, list[int]]:
    return {str(t): sorted(ps) for t, ps in p.items() if ps}


def partitions_from_json(d: dict[str, list[int]]) -> Partitions:
    return {uuid.UUID(t): set(ps) for t, ps in d.items()}


@dataclass(eq=False)
class ModernMember:
    member_id: str
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: list[str] = field(default_factory=list)
    member_epoch: int = 0
    previous_member_epoch: int = -1
    assigned: Partitions = field(default_factory=dict)
    session_timer: object | None = None

    #: to_json keys that from_json does not pass as they are
    STRUCTURED: ClassVar[tuple[str, ...]] = ("assigned",)

    def cancel_timers(self) -> None:
        cancel(self.session_timer)
        self.session_timer = None

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
    def from_json(cls, d: dict):
        plain = {k: v for k, v in d.items() if k not in cls.STRUCTURED}
        return cls(**plain, **cls.structured_from_json(d))

    @classmethod
    def structured_from_json(cls, d: dict) -> dict:
        return {"assigned": partitions_from_json(d.get("assigned", {}))}


M = TypeVar("M", bound=ModernMember)


@dataclass(eq=False)
class ModernGroup(BaseGroup, Generic[M]):
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, M] = field(default_factory=dict)
    #: member id -> its partitions in the target assignment
    target: dict[str, Partitions] = field(default_factory=dict)
    #: topic name -> (topic id, partition count) of every subscribed name, as last seen
    subscribed: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    dead: bool = False
    #: when the target was last computed (scheduler ms; not stored: a reload computes at once)
    assigned_at_ms: int = -(2**62)

    member_type: ClassVar[type[ModernMember]] = ModernMember

    @property
    def is_dead(self) -> bool:
        return self.dead

    @property
    def is_empty(self) -> bool:
        return not self.members

    @property
    def state(self) -> str:
        raise NotImplementedError

    def add(self, member: M) -> None:
        self.members[member.member_id] = member

    def remove(self, member_id: str) -> M | None:
        self.target.pop(member_id, None)
        return self.members.pop(member_id, None)

    def to_json(self) -> dict:
        return {
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "members": [m.to_json() for m in self.members.values()],
            "target": {m: partitions_json(p) for m, p in self.target.items()},
            "subscribed": {n: [str(t), c] for n, (t, c) in self.subscribed.items()},
        }

    def restore(self, d: dict) -> None:
        self.group_epoch = int(d.get("group_epoch", 0))
        self.assignment_epoch = int(d.get("assignment_epoch", 0))
        for m in d.get("members", []):
            self.add(self.member_type.from_json(m))
        self.target = {m: partitions_from_json(p) for m, p in d.get("target", {}).items()}
        self.subscribed = {
            n: (uuid.UUID(t), int(c)) for n, (t, c) in d.get("subscribed", {}).items()
        }


@dataclass
class HeartbeatResult:
    error: int
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    #: the member's assigned partitions; None when not sent
    assignment: Partitions | None = None


@dataclass
class Refused(Exception):
    """A heartbeat refused with this error (and message)."""

    error: int
    message: str | None = None


G = TypeVar("G", bound=ModernGroup)


class ModernGroups(Generic[G]):
    """The machinery a consumer or share group type shares; ``name`` ("consumer", "share") is
    Kafka's group type name, the prefix of its group configs (``<name>.session.timeout.ms``)
    and of the coordinator's settings (``<name>_session_timeout_ms`` …)."""

    name: str
    group_class: ClassVar[type[ModernGroup]]
    #: the member epochs that leave the group
    leave_epochs: ClassVar[tuple[int, ...]] = (LEAVE_EPOCH,)
    #: the type of the group's record's key when decoded (``record_key`` writes it)
    record_key_type: ClassVar[type]
    #: what ``describe_group`` tells the coordinator's checks (whether an empty id may pass)
    describe_check: ClassVar[str] = "describe"

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

    def _setting(self, what: str) -> int:
        return int(getattr(self.host.config, f"{self.name}_{what}"))

    def _group_config(self, group_id: str, what: str) -> int:
        value = self.group_configs(group_id).get(f"{self.name}.{what.replace('_', '.')}")
        return int(value) if value else self._setting(what)

    def session_timeout_ms(self, group_id: str) -> int:
        return self._group_config(group_id, "session_timeout_ms")

    def heartbeat_interval_ms(self, group_id: str) -> int:
        return self._group_config(group_id, "heartbeat_interval_ms")

    # -- the heartbeat --------------------------------------------------------------------------

    def heartbeat(self, req, respond: Callable[[HeartbeatResult], None]) -> None:
        if not self.host.active:
            respond(HeartbeatResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
            return
        try:
            self._validate(req)
            error = self.host.check(req.group_id, f"{self.name} heartbeat")
            if error:
                raise Refused(error)
            if req.member_epoch in self.leave_epochs:
                self._leave(req, respond)
            else:
                self._heartbeat(req, respond)
        except Refused as r:
            respond(HeartbeatResult(r.error, r.message))

    def _validate(self, req) -> None:
        raise NotImplementedError

    def _heartbeat(self, req, respond: Callable[[HeartbeatResult], None]) -> None:
        raise NotImplementedError

    def _leave(self, req, respond: Callable[[HeartbeatResult], None]) -> None:
        raise NotImplementedError

    def record_key(self, group_id: str) -> bytes:
        """The key of the group's record in ``__consumer_offsets``."""
        raise NotImplementedError

    def record_value(self, state: dict) -> bytes:
        """The value of the group's record: its state."""
        raise NotImplementedError

    def _new(self, group_id: str) -> G:
        group = self.group_class(
            group_id,
            self.host.partition_for(group_id),
            state_timestamp=self.host.scheduler.wall_ms(),
        )
        self.host.groups[group_id] = group
        return group  # type: ignore[return-value]

    def _max_size_check(self, group: G, joining: bool) -> None:
        max_size = self._setting("max_size")
        if joining and len(group.members) >= max_size:
            raise Refused(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The {self.name} group has reached its maximum capacity of {max_size} members.",
            )

    def _advance_group_epoch(
        self, group: G, bump: bool, subscribed: dict[str, tuple[uuid.UUID, int]]
    ) -> int:
        """The group epoch after a heartbeat (``bump``: the member joined or changed its
        subscription; ``subscribed``: the subscribed topics now); how many steps it moved.

        Kafka 4.4.0 advances a new group's epoch once for the member and once more for the
        subscribed topics' metadata (its first member subscribing to a topic gets epoch 2, one
        subscribing to nothing epoch 1); later, once per heartbeat that changed either (a
        member subscribing to a second topic: one more, not two; measured by diff --models)."""
        changed = subscribed != group.subscribed
        steps = int(bump) + int(changed) if group.group_epoch == 0 else int(bump or changed)
        group.subscribed = subscribed
        if steps:
            group.group_epoch += steps
            log.info("%s group %s: group epoch %d", self.name, group.group_id, group.group_epoch)
        return steps

    def _maybe_assign(self, group: G) -> None:
        """The target assignment again when the group epoch is past it, at most every
        ``<name>.assignment.interval.ms`` (the group's config, else the broker's; the first at
        once); meanwhile members reconcile to the previous one."""
        now = self.host.scheduler.now_ms()
        if group.group_epoch > group.assignment_epoch and (
            group.assignment_epoch == 0
            or now - group.assigned_at_ms
            >= self._group_config(group.group_id, "assignment_interval_ms")
        ):
            self._assign(group)
            group.assigned_at_ms = now

    def _assign(self, group: G) -> None:
        """Compute the target assignment and move the assignment epoch to the group epoch."""
        raise NotImplementedError

    def _answer_heartbeat(
        self,
        group: G,
        member: ModernMember,
        respond: Callable[[HeartbeatResult], None],
        *,
        send: bool,
        store: bool,
        records: Sequence[KeyValue] = (),
    ) -> None:
        """Answer a heartbeat with the member's epoch (and assignment when ``send``), once the
        group's state is written when ``store``."""

        def answer(error: int = 0) -> None:
            if error:
                respond(HeartbeatResult(store_group_error(error)))
                return
            respond(
                HeartbeatResult(
                    ErrorCode.NONE,
                    member_id=member.member_id,
                    member_epoch=member.member_epoch,
                    heartbeat_interval_ms=self.heartbeat_interval_ms(group.group_id),
                    assignment=copy_partitions(member.assigned) if send else None,
                )
            )

        if store:
            self._store(group, answer, records)
        else:
            answer()

    def _answer_leave(
        self, group: G, member_id: str, epoch: int, respond: Callable[[HeartbeatResult], None]
    ) -> None:
        """Answer a leaving heartbeat (its member id and epoch) once the group is written."""

        def answer(error: int) -> None:
            if error:
                respond(HeartbeatResult(store_group_error(error)))
            else:
                respond(HeartbeatResult(ErrorCode.NONE, member_id=member_id, member_epoch=epoch))

        self._store(group, answer)

    # -- timers ---------------------------------------------------------------------------------

    def _schedule_session(self, group: G, member: ModernMember) -> None:
        cancel(member.session_timer)
        when = self.host.scheduler.now_ms() + self.session_timeout_ms(group.group_id)
        member.session_timer = self.host.scheduler.call_at(
            when, lambda: self._expired(group, member, "session timeout")
        )

    def _expired(self, group: G, member: ModernMember, why: str) -> None:
        if not self.host.live(group) or group.members.get(member.member_id) is not member:
            return
        log.info(
            "%s group %s: member %s removed (%s)", self.name, group.group_id, member.member_id, why
        )
        self._fence(group, member)
        self._store(group, lambda error: None)

    def _fence(self, group: G, member: ModernMember) -> None:
        """Remove the member; its partitions are free, the group epoch advances."""
        member.cancel_timers()
        group.remove(member.member_id)
        group.group_epoch += 1

    # -- persistence ----------------------------------------------------------------------------

    def _store(
        self, group: G, done: Callable[[int], None], records: Sequence[KeyValue] = ()
    ) -> None:
        """The group's whole state as one record (after ``records``), then ``done(error)``."""
        value = self.record_value(group.to_json())
        appended = [*records, (self.record_key(group.group_id), value)]
        self.host.store.append(group.partition, appended, lambda error, _base: done(error))

    # -- describing (ConsumerGroupDescribe, ShareGroupDescribe) --------------------------------

    def describe_group(self, group_id: str) -> tuple[int, str | None, G | None]:
        error = self.host.check(group_id, self.describe_check)
        if error:
            return error, None, None
        group = self.host.groups.get(group_id)
        if group is None or group.is_dead:
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} not found.", None
        if not isinstance(group, self.group_class):
            return (
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Group {group_id} is not a {self.name} group.",
                None,
            )
        return ErrorCode.NONE, None, group  # type: ignore[return-value]

    # -- what the coordinator asks of every group type ----------------------------------------

    def describe(self, group: BaseGroup) -> GroupSummary:
        """DescribeGroups (the classic API): Kafka answers a group it does not hold as a classic
        group as Dead, without error."""
        return DEAD_SUMMARY

    def listed(self, group: BaseGroup) -> ListedGroup:
        assert isinstance(group, self.group_class)
        return ListedGroup(group.group_id, self.name, group.state, self.name)

    def delete_error(self, group: BaseGroup) -> int:
        assert isinstance(group, self.group_class)
        return ErrorCode.NONE if group.is_empty else ErrorCode.NON_EMPTY_GROUP

    def deleted(self, group: BaseGroup) -> list[KeyValue]:
        self.unload(group)
        return [(self.record_key(group.group_id), None)]

    def committed_by(self, group: BaseGroup, member_id: str) -> None:
        return None

    def subscribed_topics(self, group: BaseGroup) -> set[str] | None:
        assert isinstance(group, self.group_class)
        return set(group.subscribed)

    def owns_record(self, key: object) -> bool:
        return isinstance(key, self.record_key_type)

    def replay(self, partition: int, key: object, value: bytes | None) -> None:
        assert isinstance(key, self.record_key_type)
        state = None if value is None else decode_consumer_group_value(value)
        self._replaying.setdefault(partition, {})[key.group] = state  # type: ignore[attr-defined]

    def finish_replay(self, partition: int) -> None:
        """Groups come back with their members, epochs and assignments, each member with a new
        session deadline."""
        for group_id, state in self._replaying.pop(partition, {}).items():
            if state is None:
                continue
            group = self._new(group_id)
            group.partition = partition
            group.restore(state)
            for member in group.members.values():
                self._schedule_session(group, member)

    def unload(self, group: BaseGroup) -> None:
        assert isinstance(group, self.group_class)
        group.dead = True
        for m in group.members.values():
            m.cancel_timers()
