"""The group coordinator: the groups of the ``__consumer_offsets`` partitions this broker leads.

As Kafka's (``GroupCoordinatorShard`` routing to ``GroupMetadataManager`` and
``OffsetMetadataManager``), it is split by concern:

* membership and rebalancing per group type, behind one interface (``group_types.GroupType``),
  the types in a registry keyed by Kafka's group type name: ``classic`` (``classic.py``, the
  JoinGroup/SyncGroup protocol; ``coordinator.classic``) and ``consumer`` (``consumer.py``,
  KIP-848's ConsumerGroupHeartbeat; ``coordinator.consumer``) and ``share`` (``share.py``,
  KIP-932's ShareGroupHeartbeat; ``coordinator.share``);
* offsets (commit, fetch, delete, transactional commits and their markers) in ``offsets.py``
  (``coordinator.offsets``), the same for every group type;
* here: which partitions it holds (loading them from the log, unloading them when leadership
  moves), the checks every group request starts with (INVALID_GROUP_ID, NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS …), and DescribeGroups, ListGroups and DeleteGroups, which ask
  each group's type.

It is a single-threaded library: requests come in as method calls; answers that must wait leave
through callbacks (exactly one call per request). Time comes from a Scheduler, records go to an
OffsetsStore, so the same code runs under asyncio on a broker and under a manual clock with an
in-memory log in tests.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from conformance.protocol import ErrorCode
from conformance.protocol.records.control import ControlType
from conformance.protocol.records.errors import CorruptRecordError
from reference_impl.groups.classic import ClassicGroups
from reference_impl.groups.consumer import ConsumerGroups, GroupConfigsView, TopicsView
from reference_impl.groups.errors import store_group_error
from reference_impl.groups.group_types import (
    DEAD_SUMMARY,
    NO_SUMMARY,
    BaseGroup,
    GroupSummary,
    GroupTypes,
    ListedGroup,
)
from reference_impl.groups.offsets import OffsetManager, OffsetReplay
from reference_impl.groups.placement import DEFAULT_OFFSETS_PARTITIONS, partition_for
from reference_impl.groups.records import OffsetKey, decode_key
from reference_impl.groups.scheduler import Scheduler
from reference_impl.groups.share import ShareGroups
from reference_impl.groups.store import KeyValue, LoadedRecord, OffsetsStore

log = logging.getLogger(__name__)

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
    #: KIP-848 consumer groups (Kafka's group.consumer.* broker configs and their bounds)
    consumer_session_timeout_ms: int = 45_000
    consumer_min_session_timeout_ms: int = 45_000
    consumer_max_session_timeout_ms: int = 60_000
    consumer_heartbeat_interval_ms: int = 5_000
    consumer_min_heartbeat_interval_ms: int = 5_000
    consumer_max_heartbeat_interval_ms: int = 15_000
    consumer_max_size: int = 2**31 - 1
    #: Kafka 4.4.0's consumer.assignment.interval.ms: a target assignment at most this often
    consumer_assignment_interval_ms: int = 1_000
    #: KIP-932 share groups (Kafka 4.4.0's group.share.* broker configs)
    share_session_timeout_ms: int = 45_000
    share_heartbeat_interval_ms: int = 5_000
    share_max_size: int = 200
    #: share.assignment.interval.ms: a target assignment at most this often
    share_assignment_interval_ms: int = 1_000


@dataclass
class _Owned:
    token: int
    loading: bool = True


class GroupCoordinator:
    def __init__(
        self,
        scheduler: Scheduler,
        store: OffsetsStore,
        config: GroupConfig | None = None,
        *,
        member_id_factory: Callable[[str], str] | None = None,
        topics: TopicsView | None = None,
        group_configs: GroupConfigsView | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.store = store
        self.config = config or GroupConfig()
        self.partition_count = self.config.offsets_topic_partitions
        #: every group held, of any type, by group id (ids are unique across types)
        self.groups: dict[str, BaseGroup] = {}
        self.partitions: dict[int, _Owned] = {}
        self.active = True
        self._tokens = itertools.count(1)
        self.classic = ClassicGroups(self, member_id_factory)
        self.consumer = ConsumerGroups(self, topics, group_configs)
        self.share = ShareGroups(self, topics, group_configs)
        self.types = GroupTypes([self.classic, self.consumer, self.share])
        self.offsets = OffsetManager(self)

    # -- what group types and the offsets manager share ---------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.partition_count)

    def check(self, group_id: str | None, api: str) -> int:
        """The checks a group request starts with: the id, and whether this coordinator holds
        the group's partition now."""
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

    def live(self, group: BaseGroup) -> bool:
        return self.groups.get(group.group_id) is group and not group.is_dead

    def new_simple_group(self, group_id: str) -> BaseGroup:
        """The group an offset commit outside group management makes: an Empty classic group."""
        return self.classic.new_group(group_id)

    # -- DescribeGroups, ListGroups, DeleteGroups ---------------------------------------------

    def describe_group(self, group_id: str) -> tuple[int, GroupSummary]:
        error = self.check(group_id, "describe")
        if error:
            return error, NO_SUMMARY
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.NONE, DEAD_SUMMARY
        return ErrorCode.NONE, self.types.of(group).describe(group)

    def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> tuple[int, list[ListedGroup]]:
        """Groups this coordinator holds; COORDINATOR_LOAD_IN_PROGRESS while any partition
        loads (with the groups already loaded). ``states`` and ``types`` (group type names)
        filter, case-insensitively."""
        wanted = {s.lower() for s in states}
        kinds = {t.lower() for t in types}
        error = ErrorCode.NONE
        if any(p.loading for p in self.partitions.values()):
            error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        listed = [self.types.of(g).listed(g) for g in self.groups.values()]
        listed = [
            g
            for g in listed
            if (not wanted or g.state.lower() in wanted)
            and (not kinds or g.group_type.lower() in kinds)
        ]
        return error, listed

    def delete_groups(
        self, group_ids: list[str], respond: Callable[[dict[str, int]], None]
    ) -> None:
        """Delete groups their type lets go (a classic group: Empty) and their offsets
        (tombstones), answering once written.

        A failed append answers that group with the error (mapped as for SyncGroup), where
        Kafka would still say NONE: the group is back once the partition is loaded again.
        """
        results: dict[str, int] = {}
        doomed: list[BaseGroup] = []
        by_partition: dict[int, list[KeyValue]] = {}
        for group_id in group_ids:
            if group_id in results:
                continue
            error = self.check(group_id, "delete")
            group = self.groups.get(group_id)
            if error:
                results[group_id] = error
                continue
            if group is None or group.is_dead:
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
                continue
            group_type = self.types.of(group)
            results[group_id] = error = group_type.delete_error(group)
            if error:
                continue
            del self.groups[group_id]
            records = self.offsets.tombstones(group) + group_type.deleted(group)
            by_partition.setdefault(group.partition, []).extend(records)
            doomed.append(group)
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
        """Rebuild the partition's groups from its log ((offset, key, value) in log order):
        offset records and transaction markers go to the offsets manager, the rest to the group
        type whose records they are. False when the load was superseded (leadership changed).
        """
        owned = self.partitions.get(partition)
        if owned is None or owned.token != token:
            return False
        replay = OffsetReplay()
        for item in records:
            position, raw_key, raw_value = item[:3]
            if len(item) >= 5:  # a transaction marker: its producer's offsets end here
                replay.marker(item[3], item[4] == ControlType.COMMIT)
                continue
            try:
                key = decode_key(raw_key)
                if isinstance(key, OffsetKey):
                    producer = item[3] if len(item) == 4 else None
                    replay.record(key, raw_value, position, producer)
                elif (group_type := self.types.for_record(key)) is not None:
                    group_type.replay(partition, key, raw_value)
            except CorruptRecordError as e:
                log.warning("__consumer_offsets-%d offset %d: skipped: %s", partition, position, e)
        for group_type in self.types:
            group_type.finish_replay(partition)
        self.offsets.finish_replay(replay)
        owned.loading = False
        return True

    def unload(self, partition: int) -> None:
        """Leadership of ``partition`` moved away: drop its groups (their types answer whoever
        waits on them with NOT_COORDINATOR; they will find the new coordinator)."""
        self.partitions.pop(partition, None)
        for group_id, group in list(self.groups.items()):
            if group.partition == partition:
                del self.groups[group_id]
                self.types.of(group).unload(group)

    def loaded(self, partition: int) -> bool:
        """Whether this coordinator holds ``partition``'s groups now (led here, replay done):
        a transaction marker for it may be applied (else the sender retries)."""
        owned = self.partitions.get(partition)
        return owned is not None and not owned.loading
