"""Idempotent-producer state of one partition: per producer id, its epoch and last batches.

The leader checks every batch carrying a producer id against it (Kafka's rules): an older
epoch is fenced (INVALID_PRODUCER_EPOCH); a new epoch must start at sequence 0; within an
epoch a batch must continue the last sequence, except that a batch equal to one of the last
five is a retry and is answered with the offsets it was first written at. Followers apply the
same batches without checks, and recovery rebuilds the state from the stored batch headers,
so any replica that becomes leader knows every producer the log knows.

Transactions (KIP-98, as Kafka's ProducerAppendInfo keeps them): a producer's first
transactional batch opens its ongoing transaction at that batch's offset; a non-transactional
batch while one is open is INVALID_TXN_STATE. A COMMIT or ABORT marker (a control batch written
for the coordinator) is refused with INVALID_PRODUCER_EPOCH when its epoch is older than the
producer's and TRANSACTION_COORDINATOR_FENCED when its coordinator epoch is older than the last
one seen; otherwise it completes the ongoing transaction (a marker with none open, such as a
repeated one, changes nothing but the epochs). An aborted transaction is kept as a range
(producer id, first offset, marker offset): the aborted-transaction index that read_committed
fetches list. A completed transaction keeps the last stable offset at its first offset until
the high watermark passes its marker (Kafka's "unreplicated" transactions). Like the rest, all
of it is rebuilt from the log on recovery, so it survives restarts and segment rolls.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from dataclasses import dataclass, field

from conformance.protocol import ErrorCode, KafkaError
from conformance.protocol.records.control import ControlType
from conformance.protocol.records.header import BatchHeader

NO_EPOCH = -1
NO_SEQUENCE = -1
CACHED_BATCHES = 5
_INT32_MAX = (1 << 31) - 1
ABORT, COMMIT = int(ControlType.ABORT), int(ControlType.COMMIT)


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int  # the ABORT marker's offset


#: the highest producer epoch (a v2 marker at it may repeat the producer's epoch)
MAX_EPOCH = 32767


@dataclass(slots=True)
class ProducerEntry:
    epoch: int = NO_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))
    coordinator_epoch: int = -1
    #: first offset of the producer's ongoing transaction in this partition (None: none open)
    txn_first_offset: int | None = None
    last_timestamp: int = -1

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def duplicate_of(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for b in self.batches:
            if b.first_seq == first_seq and b.last_seq == last_seq:
                return b
        return None


def in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerStateManager:
    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}
        #: aborted transactions in marker-offset order (the aborted-transaction index)
        self.aborted: list[AbortedTxn] = []
        #: completed transactions whose marker the high watermark has not passed: (first, marker)
        self.unreplicated: list[tuple[int, int]] = []
        #: producer id -> first offset of its open transaction (what the entries say, indexed)
        self._open: dict[int, int] = {}
        #: producer id -> transaction markers written for it (a verification's guard)
        self.markers: dict[int, int] = {}

    def check(self, h: BatchHeader, *, sequence: bool = True) -> BatchMetadata | None:
        """Validate a producer's batch before the leader appends it.

        Returns the original batch when ``h`` repeats one of the last five (a retry), None when
        the batch may be appended; raises OutOfOrderSequence / InvalidProducerEpoch otherwise.
        ``sequence=False``: a batch the broker writes itself for a producer (the group
        coordinator's transactional offsets), whose epoch and transaction are checked but not
        its sequence (Kafka's COORDINATOR origin).
        """
        if h.producer_id < 0:
            return None
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return None  # unknown producer (or its state expired): any sequence is accepted
        _check_epoch(h.producer_id, h.producer_epoch, entry)
        dup = entry.duplicate_of(h.producer_epoch, h.base_sequence, h.last_sequence)
        if dup is not None and sequence:
            return dup
        if entry.txn_first_offset is not None and not h.is_transactional:
            raise KafkaError(
                ErrorCode.INVALID_TXN_STATE,
                f"producer {h.producer_id} has a transaction open: a non-transactional batch "
                "is refused",
            )
        if not sequence:
            return None
        if h.producer_epoch != entry.epoch:
            if h.base_sequence != 0 and entry.epoch != NO_EPOCH:
                raise KafkaError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"a new epoch {h.producer_epoch} of producer {h.producer_id} must start at "
                    f"sequence 0, not {h.base_sequence}",
                )
        elif not in_sequence(entry.last_seq, h.base_sequence):
            raise KafkaError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {h.producer_id} sent sequence {h.base_sequence} after {entry.last_seq}",
            )
        return None

    def check_marker(
        self, producer_id: int, epoch: int, coordinator_epoch: int, transaction_version: int = 0
    ) -> None:
        """Refuse a transaction marker the coordinator asks for (Kafka's appendEndTxnMarker).

        A transactions-v2 marker (WriteTxnMarkers v2, TransactionVersion 2: KIP-890) carries
        the epoch the coordinator bumped when the transaction ended, so it must be newer than
        the producer's epoch here; at the same epoch only a retry after the transaction
        completed is taken (Kafka 4.4.0's ProducerAppendInfo.checkProducerEpoch)."""
        entry = self.producers.get(producer_id)
        if entry is None:
            return
        if transaction_version >= 2 and epoch == entry.epoch:
            if entry.txn_first_offset is not None and epoch != MAX_EPOCH:
                raise KafkaError(
                    ErrorCode.INVALID_PRODUCER_EPOCH,
                    f"transaction version 2 marker epoch {epoch} of producer {producer_id} is "
                    f"not newer than the epoch of its ongoing transaction",
                )
        else:
            _check_epoch(producer_id, epoch, entry)
        if coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(
                ErrorCode.TRANSACTION_COORDINATOR_FENCED,
                f"coordinator epoch {coordinator_epoch} for producer {producer_id} is older "
                f"than {entry.coordinator_epoch}",
            )

    def update(
        self, h: BatchHeader, first_offset: int, marker: tuple[int, int] | None = None
    ) -> None:
        """Record a batch that was appended at ``first_offset`` (leader, follower, recovery);
        ``marker`` is a control batch's (control type, coordinator epoch)."""
        if h.producer_id < 0:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerEntry()
        if h.producer_epoch != entry.epoch:
            entry.epoch = h.producer_epoch
            entry.batches.clear()
        entry.last_timestamp = h.max_timestamp
        if h.is_control:
            if marker is not None and marker[0] in (ABORT, COMMIT):
                self._complete(h.producer_id, entry, marker, first_offset)
            return
        if h.is_transactional and entry.txn_first_offset is None:
            entry.txn_first_offset = self._open[h.producer_id] = first_offset
        entry.batches.append(
            BatchMetadata(
                h.base_sequence,
                h.last_sequence,
                first_offset,
                first_offset + h.last_offset_delta,
                h.max_timestamp,
            )
        )

    def _complete(
        self, producer_id: int, entry: ProducerEntry, marker: tuple[int, int], offset: int
    ) -> None:
        control_type, coordinator_epoch = marker
        self.markers[producer_id] = self.markers.get(producer_id, 0) + 1
        entry.coordinator_epoch = max(entry.coordinator_epoch, coordinator_epoch)
        first, entry.txn_first_offset = entry.txn_first_offset, None
        self._open.pop(producer_id, None)
        if first is None:  # nothing open (a repeated marker, an empty transaction)
            return
        self.unreplicated.append((first, offset))
        if control_type == ABORT:
            self.aborted.append(AbortedTxn(producer_id, first, offset))

    def first_unstable_offset(self, high_watermark: int) -> int | None:
        """The first offset of the earliest transaction not yet stable: open, or completed by
        a marker the high watermark has not passed (Kafka's firstUnstableOffset)."""
        if self.unreplicated:
            self.unreplicated = [t for t in self.unreplicated if t[1] >= high_watermark]
        if not self.unreplicated and not self._open:
            return None
        return min([t[0] for t in self.unreplicated] + list(self._open.values()))

    def aborted_between(self, start: int, end: int) -> list[AbortedTxn]:
        """Aborted transactions a read of ``[start, end)`` overlaps (Kafka's
        collectAbortedTxns: marker at or after ``start``, first offset before ``end``)."""
        i = bisect_left(self.aborted, start, key=lambda t: t.last_offset)
        return [t for t in self.aborted[i:] if t.first_offset < end]

    def forget_before(self, log_start_offset: int) -> None:
        """Aborted ranges wholly below the log start are of no use to any read."""
        self.aborted = [t for t in self.aborted if t.last_offset >= log_start_offset]

    def ongoing(self) -> dict[int, int]:
        """Producer id -> first offset of its open transaction."""
        return dict(self._open)

    def guard(self, producer_id: int) -> int:
        """A token taken before a transaction verification: the batch verified may be appended
        only while the producer's transaction is open or no marker was written since (Kafka's
        VerificationGuard: a transaction that ended meanwhile does not take the batch)."""
        return self.markers.get(producer_id, 0)

    def check_guard(self, producer_id: int, token: int) -> None:
        if producer_id in self._open or self.markers.get(producer_id, 0) == token:
            return
        raise KafkaError(
            ErrorCode.INVALID_TXN_STATE,
            f"producer {producer_id}'s transaction ended while its batch was being verified",
        )

    def forget(self, producer_id: int) -> None:
        """Drop what is known of one producer (a test-only fault: no duplicate check)."""
        self.producers.pop(producer_id, None)
        self._open.pop(producer_id, None)

    def truncate(self) -> None:
        """Forget everything (the caller rebuilds the state from the log that remains)."""
        self.producers.clear()
        self.aborted.clear()
        self.unreplicated.clear()
        self._open.clear()
        self.markers.clear()


def _check_epoch(producer_id: int, epoch: int, entry: ProducerEntry) -> None:
    if epoch < entry.epoch:
        raise KafkaError(
            ErrorCode.INVALID_PRODUCER_EPOCH,
            f"producer {producer_id} epoch {epoch} is older than the current epoch {entry.epoch}",
        )
