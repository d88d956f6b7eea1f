"""Idempotent-producer state of one partition: per producer id, its epoch and last batches.

The leader checks every batch carrying a producer id against it (Kafka's rules): an older
epoch is fenced (INVALID_PRODUCER_EPOCH); a new epoch must start at sequence 0; within an
epoch a batch must continue the last sequence, except that a batch equal to one of the last
five is a retry and is answered with the offsets it was first written at. Followers apply the
same batches without checks, and recovery rebuilds the state from the stored batch headers,
so any replica that becomes leader knows every producer the log knows.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from conformance.protocol import ErrorCode, KafkaError
from conformance.protocol.records.header import BatchHeader

NO_EPOCH = -1
NO_SEQUENCE = -1
CACHED_BATCHES = 5
_INT32_MAX = (1 << 31) - 1


@dataclass(frozen=True, slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    first_offset: int
    last_offset: int
    max_timestamp: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int = NO_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))

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

    def check(self, h: BatchHeader) -> BatchMetadata | None:
        """Validate a producer's batch before the leader appends it.

        Returns the original batch when ``h`` repeats one of the last five (a retry), None when
        the batch may be appended; raises OutOfOrderSequence / InvalidProducerEpoch otherwise.
        """
        if h.producer_id < 0:
            return None
        entry = self.producers.get(h.producer_id)
        if entry is None:
            return None  # unknown producer (or its state expired): any sequence is accepted
        if h.producer_epoch < entry.epoch:
            raise KafkaError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {h.producer_id} epoch {h.producer_epoch} is older than the current "
                f"epoch {entry.epoch}",
            )
        dup = entry.duplicate_of(h.producer_epoch, h.base_sequence, h.last_sequence)
        if dup is not None:
            return dup
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

    def update(self, h: BatchHeader, first_offset: int) -> None:
        """Record a batch that was appended at ``first_offset`` (leader, follower, recovery)."""
        if h.producer_id < 0:
            return
        entry = self.producers.get(h.producer_id)
        if entry is None:
            entry = self.producers[h.producer_id] = ProducerEntry()
        if h.producer_epoch != entry.epoch:
            entry.epoch = h.producer_epoch
            entry.batches.clear()
        if h.is_control:
            return
        entry.batches.append(
            BatchMetadata(
                h.base_sequence,
                h.last_sequence,
                first_offset,
                first_offset + h.last_offset_delta,
                h.max_timestamp,
            )
        )

    def truncate(self) -> None:
        """Forget everything (the caller rebuilds the state from the log that remains)."""
        self.producers.clear()
