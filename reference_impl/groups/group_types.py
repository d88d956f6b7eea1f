"""What every group type has in common, and the one interface each type implements.

Kafka's coordinator (``GroupMetadataManager`` / ``OffsetMetadataManager``) keeps a group's
membership, which depends on its type, apart from its committed offsets, which every type
shares. Here the same split:

* ``BaseGroup`` is what every group holds whatever its type: its id, its ``__consumer_offsets``
  partition and its offsets (committed, pending, transactional), which only ``offsets.py``
  changes;
* ``GroupType`` is what the coordinator asks a type about its groups: describing, listing and
  deleting them, judging an offset commit's member fields, its records in the log (replay,
  unload). The classic group (``classic.py``) is one; Kafka's KIP-848 consumer groups and
  KIP-932 share groups are others. A ``GroupTypes`` registry maps Kafka's group type names
  (``Group.GroupType``: "classic", "consumer", "share"; what ListGroups v5 filters on) to them.
  It is keyed by the group type, not the JoinGroup ProtocolType, since a classic group of
  consumers has the ProtocolType "consumer" too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from reference_impl.groups.scheduler import Scheduler

if TYPE_CHECKING:
    from reference_impl.groups.coordinator import GroupConfig
    from reference_impl.groups.store import KeyValue, OffsetsStore

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1


@dataclass(eq=False)
class BaseGroup:
    """A group of any type: where it lives and its offsets (``offsets.py`` changes them)."""

    group_id: str
    #: the ``__consumer_offsets`` partition holding this group
    partition: int
    state_timestamp: int = -1
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    #: log offset of the record each cached offset came from (older appends never overwrite)
    offset_positions: dict[TopicPartition, int] = field(default_factory=dict)
    #: commits appended but not yet durable, per partition (a deletion tombstones them too)
    pending_offsets: Counter = field(default_factory=Counter)
    #: TxnOffsetCommit offsets waiting for their transaction's marker: producer id ->
    #: partition -> (offset, log position of its record; None while it is being appended)
    pending_txn_offsets: dict[int, dict[TopicPartition, tuple[OffsetAndMetadata, int | None]]] = (
        field(default_factory=dict)
    )

    #: Kafka's group type name ("classic", "consumer", "share"); a subclass sets it
    group_type = ""

    def has_pending_offset(self, tp: TopicPartition) -> bool:
        """A commit of ``tp`` not yet durable, or one waiting for its transaction to end
        (Kafka's hasPendingOffsetCommitsForTopicPartition)."""
        return self.pending_offsets[tp] > 0 or any(
            tp in offsets for offsets in self.pending_txn_offsets.values()
        )

    @property
    def is_dead(self) -> bool:
        raise NotImplementedError

    @property
    def is_empty(self) -> bool:
        raise NotImplementedError


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
    """A group as DescribeGroups answers it."""

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
    group_type: str = "classic"


class Host(Protocol):
    """What a group type and the offsets manager use of the coordinator that holds them."""

    scheduler: Scheduler
    store: OffsetsStore
    config: GroupConfig
    groups: dict[str, BaseGroup]
    active: bool

    def check(self, group_id: str | None, api: str) -> int: ...

    def live(self, group: BaseGroup) -> bool: ...

    @property
    def types(self) -> GroupTypes: ...

    def partition_for(self, group_id: str) -> int: ...

    def new_simple_group(self, group_id: str) -> BaseGroup: ...


class GroupType(Protocol):
    """One kind of group, as the coordinator sees it.

    ``name`` is Kafka's group type name. Requests specific to the type (JoinGroup,
    ConsumerGroupHeartbeat …) go to the type's own methods; these are what the coordinator and
    the offsets manager ask of every type.
    """

    name: str

    def describe(self, group: BaseGroup) -> GroupSummary:
        """The group as DescribeGroups answers it."""
        ...

    def listed(self, group: BaseGroup) -> ListedGroup:
        """The group as ListGroups answers it."""
        ...

    def delete_error(self, group: BaseGroup) -> int:
        """DeleteGroups: NONE when the group may go (then ``deleted`` follows), else the error
        (NON_EMPTY_GROUP …)."""
        ...

    def deleted(self, group: BaseGroup) -> list[KeyValue]:
        """The group was removed: stop its timers; the tombstones of its own records."""
        ...

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
        """An offset commit's member fields judged against the group (NONE: accepted);
        ``api_version``: the OffsetCommit's."""
        ...

    def partition_errors(
        self, group: BaseGroup, member_id: str, generation_id: int, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """After ``validate_commit``: the partitions of the commit refused one by one (a KIP-848
        member committing with an older epoch, KIP-1251), with their error."""
        ...

    def validate_fetch(self, group: BaseGroup, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch v9+'s member fields judged against the group (NONE: accepted)."""
        ...

    def committed_by(self, group: BaseGroup, member_id: str) -> None:
        """A commit of this member was accepted (a classic member's session restarts)."""
        ...

    def accepts_offset_delete(self, group: BaseGroup) -> int:
        """OffsetDelete on a group with members: NONE, or NON_EMPTY_GROUP."""
        ...

    def subscribed_topics(self, group: BaseGroup) -> set[str] | None:
        """Topics the members subscribe to (OffsetDelete keeps their offsets); None: all."""
        ...

    def owns_record(self, key: object) -> bool:
        """Whether a decoded ``__consumer_offsets`` key (not an offset's) is this type's."""
        ...

    def replay(self, partition: int, key: object, value: bytes | None) -> None:
        """One of its records read back from the log (in log order) while loading."""
        ...

    def finish_replay(self, partition: int) -> None:
        """The partition's log is read: build its groups from what ``replay`` collected."""
        ...

    def unload(self, group: BaseGroup) -> None:
        """Its partition moved away: stop timers, answer whoever waits (NOT_COORDINATOR)."""
        ...


class GroupTypes:
    """The group types a coordinator serves, by Kafka's group type name."""

    def __init__(self, types: Iterable[GroupType] = ()) -> None:
        self._types: dict[str, GroupType] = {}
        for t in types:
            self.register(t)

    def register(self, group_type: GroupType) -> None:
        if group_type.name in self._types:
            raise ValueError(f"group type {group_type.name!r} registered twice")
        self._types[group_type.name] = group_type

    def of(self, group: BaseGroup) -> GroupType:
        return self._types[group.group_type]

    def named(self, name: str) -> GroupType | None:
        return self._types.get(name)

    def for_record(self, key: object) -> GroupType | None:
        return next((t for t in self._types.values() if t.owns_record(key)), None)

    def __iter__(self) -> Iterator[GroupType]:
        return iter(self._types.values())


def cancel(timer: object | None) -> None:
    if timer is not None:
        timer.cancel()  # type: ignore[attr-defined]
