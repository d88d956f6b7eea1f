"""Committed offsets, for every group type: Kafka's ``OffsetMetadataManager``.

OffsetCommit, OffsetFetch, OffsetDelete, TxnOffsetCommit and the transaction markers that end
transactional commits, and the offsets' part of a partition's replay. Offsets live on each group
(``BaseGroup``: committed, not yet durable, pending a transaction's marker); this module is the
only one that changes them. What depends on the group's type (whether a commit's member fields
are valid, which topics the members subscribe to) it asks the type (``GroupType``).

* a commit is answered, and becomes visible, once its record is durable; a later record of a
  partition is never overwritten by an earlier append finishing late;
* a commit from outside group management (generation below 0, no member id) to a group that
  does not exist creates an Empty classic group, as Kafka's coordinator does;
* TxnOffsetCommit appends the offsets as a transactional batch of the producer; they stay
  pending (invisible to OffsetFetch, UNSTABLE_OFFSET_COMMIT to one requiring stable offsets)
  until that producer's marker on the group's partition: COMMIT makes them the committed ones,
  ABORT drops them. A replay applies the markers it reads the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from conformance.protocol import ErrorCode
from reference_impl.groups.errors import store_offsets_error
from reference_impl.groups.group_types import BaseGroup, OffsetAndMetadata, TopicPartition
from reference_impl.groups.records import OffsetKey, decode_offset_value, offset_key, offset_value
from reference_impl.groups.store import KeyValue

if TYPE_CHECKING:
    from reference_impl.groups.coordinator import GroupCoordinator


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


#: an offset read back and the log position of its record
Positioned = tuple[OffsetAndMetadata, int]


@dataclass
class OffsetReplay:
    """The offsets of one ``__consumer_offsets`` partition as its log is read back in order."""

    #: group -> partition -> the last committed offset and its position
    offsets: dict[str, dict[TopicPartition, Positioned]] = field(default_factory=dict)
    #: producer id -> group -> its transactional offsets not yet ended by a marker
    txns: dict[int, dict[str, dict[TopicPartition, Positioned]]] = field(default_factory=dict)

    def record(
        self, key: OffsetKey, value: bytes | None, position: int, producer_id: int | None
    ) -> None:
        """An offset record (of a transaction when ``producer_id`` is given)."""
        tp = (key.topic, key.partition)
        if producer_id is not None:
            mine = self.txns.setdefault(producer_id, {}).setdefault(key.group, {})
            if value is None:
                mine.pop(tp, None)
            else:
                mine[tp] = (decode_offset_value(value), position)
        elif value is None:
            self.offsets.get(key.group, {}).pop(tp, None)
        else:
            self.offsets.setdefault(key.group, {})[tp] = (decode_offset_value(value), position)

    def marker(self, producer_id: int, commit: bool) -> None:
        """A transaction marker: that producer's offsets end here."""
        ended = self.txns.pop(producer_id, {})
        if commit:
            for g, pending in ended.items():
                got = self.offsets.setdefault(g, {})
                for tp, (om, pos) in pending.items():
                    if tp not in got or got[tp][1] < pos:
                        got[tp] = (om, pos)

    def group_ids(self) -> set[str]:
        """Groups holding offsets, committed or pending."""
        names = {g for g, o in self.offsets.items() if o}
        return names | {g for by_group in self.txns.values() for g, o in by_group.items() if o}


class OffsetManager:
    def __init__(self, host: GroupCoordinator) -> None:
        self.host = host
        #: producer id -> groups holding its pending transactional offsets
        self.producer_groups: dict[int, set[str]] = {}

    def _validate(
        self,
        group: BaseGroup,
        member_id: str,
        instance_id: str | None,
        generation_id: int,
        *,
        transactional: bool = False,
        api_version: int = 9,
    ) -> int:
        if group.is_dead:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        return self.host.types.of(group).validate_commit(
            group,
            member_id,
            instance_id,
            generation_id,
            transactional=transactional,
            api_version=api_version,
        )

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        respond: Callable[[dict[TopicPartition, int]], None],
        api_version: int = 9,
    ) -> None:
        """Store offsets; ``respond`` gets an error code per partition once they are durable.

        A generation below 0 with no member id is a commit from outside group management
        (an admin or a consumer using assign): allowed while the group has no members.
        """
        error = self.host.check(group_id, "commit")
        group = self.host.groups.get(group_id)
        if not error and group is None:
            if generation_id >= 0:
                error = ErrorCode.ILLEGAL_GENERATION
            else:
                group = self.host.new_simple_group(group_id)
        if not error:
            assert group is not None
            error = self._validate(
                group, member_id, group_instance_id, generation_id, api_version=api_version
            )
        if error:
            respond(dict.fromkeys(offsets, int(error)))
            return
        assert group is not None
        group_type = self.host.types.of(group)
        group_type.committed_by(group, member_id)
        refused = group_type.partition_errors(group, member_id, generation_id, list(offsets))
        results, accepted = self._acceptable(
            {tp: om for tp, om in offsets.items() if tp not in refused}
        )
        results.update(refused)
        if not accepted:
            respond(results)
            return
        records = _offset_records(group_id, accepted)

        group.pending_offsets.update(list(accepted))

        def done(error: int, base: int) -> None:
            group.pending_offsets.subtract(list(accepted))
            if not error and self.host.live(group):
                for i, (tp, om) in enumerate(accepted.items()):
                    if group.offset_positions.get(tp, -1) < base + i:
                        group.offsets[tp] = om
                        group.offset_positions[tp] = base + i
            code = store_offsets_error(error)
            results.update(dict.fromkeys(accepted, code))
            respond(results)

        self.host.store.append(group.partition, records, done)

    def _acceptable(
        self, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, OffsetAndMetadata]]:
        """(errors of the offsets refused: metadata too large, the offsets accepted, stamped
        with the commit time when they carry none)."""
        results: dict[TopicPartition, int] = {}
        accepted: dict[TopicPartition, OffsetAndMetadata] = {}
        now = self.host.scheduler.wall_ms()
        for tp, om in offsets.items():
            if len(om.metadata.encode()) > self.host.config.offset_metadata_max_bytes:
                results[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
            else:
                accepted[tp] = om if om.commit_timestamp >= 0 else replace(om, commit_timestamp=now)
        return results, accepted

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
        error = self.host.check(group_id, "txn commit")
        group = None
        if not error:
            group = self.host.groups.get(group_id) or self.host.new_simple_group(group_id)
            error = self._validate(
                group, req.member_id, req.group_instance_id, req.generation_id, transactional=True
            )
        if error or group is None:
            respond(dict.fromkeys(offsets, int(error)))
            return
        refused = self.host.types.of(group).partition_errors(
            group, req.member_id, req.generation_id, list(offsets)
        )
        results, accepted = self._acceptable(
            {tp: om for tp, om in offsets.items() if tp not in refused}
        )
        results.update(refused)
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

        self.host.store.append(group.partition, _offset_records(group_id, accepted), done, producer)

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
            group = self.host.groups.get(group_id)
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

    def has_pending_offset(self, group_id: str, tp: TopicPartition) -> bool:
        """OffsetFetch's RequireStable: a commit of ``tp`` not yet durable or not yet ended."""
        group = self.host.groups.get(group_id)
        return group is not None and not group.is_dead and group.has_pending_offset(tp)

    def fetch_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartition] | None,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> tuple[int, dict[TopicPartition, OffsetAndMetadata | None]]:
        """Committed offsets (None where nothing is committed); ``partitions=None``: all.
        OffsetFetch v9+ names the member (id and epoch): a consumer group checks it
        (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH), as Kafka's validateOffsetFetch."""
        error = self.host.check(group_id, "fetch")
        if error:
            return error, {}
        group = self.host.groups.get(group_id)
        if group is not None and not group.is_dead and (member_id is not None or member_epoch >= 0):
            error = self.host.types.of(group).validate_fetch(group, member_id, member_epoch)
            if error:
                return error, {}
        stored = group.offsets if group is not None and not group.is_dead else {}
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
        error = self.host.check(group_id, "delete offsets")
        group = self.host.groups.get(group_id)
        if not error and (group is None or group.is_dead):
            error = ErrorCode.GROUP_ID_NOT_FOUND
        group_type = None if group is None else self.host.types.of(group)
        if not error and group is not None and group_type is not None and not group.is_empty:
            error = group_type.accepts_offset_delete(group)
        if error:
            respond(int(error), {})
            return
        assert group is not None and group_type is not None
        subscribed = None if group.is_empty else group_type.subscribed_topics(group)
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
            elif self.host.live(group):
                for i, tp in enumerate(removed):
                    if group.offset_positions.get(tp, -1) < base + i:
                        group.offsets.pop(tp, None)
                        group.offset_positions[tp] = base + i
            respond(ErrorCode.NONE, results)

        tombstones: list[KeyValue] = [(offset_key(group_id, t, p), None) for t, p in removed]
        self.host.store.append(group.partition, tombstones, done)

    def group_status(self, group_id: str | None) -> int:
        """Kafka's validateGroupStatus for a transactional commit, before the transaction
        coordinator is asked (INVALID_GROUP_ID, NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS …)."""
        return int(self.host.check(group_id, "txn commit"))

    # -- groups deleted, partitions loaded ----------------------------------------------------

    @staticmethod
    def tombstones(group: BaseGroup) -> list[KeyValue]:
        """The tombstones of every offset of a group being deleted (durable or pending)."""
        pending = {tp for tp, n in group.pending_offsets.items() if n > 0}
        return [
            (offset_key(group.group_id, t, p), None)
            for t, p in sorted(set(group.offsets) | pending)
        ]

    def finish_replay(self, replay: OffsetReplay) -> None:
        """Give the groups of a partition read back their offsets (a group holding only offsets
        comes back as an Empty classic group) and their transactions still open."""
        for group_id in replay.group_ids():
            group = self.host.groups.get(group_id) or self.host.new_simple_group(group_id)
            offsets = replay.offsets.get(group_id, {})
            group.offsets = {tp: om for tp, (om, _) in offsets.items()}
            group.offset_positions = {tp: pos for tp, (_, pos) in offsets.items()}
        for producer_id, by_group in replay.txns.items():
            for group_id, pending in by_group.items():
                if pending and group_id in self.host.groups:
                    self.host.groups[group_id].pending_txn_offsets[producer_id] = dict(pending)
                    self.producer_groups.setdefault(producer_id, set()).add(group_id)


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
