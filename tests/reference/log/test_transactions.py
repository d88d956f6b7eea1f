"""A partition log's transaction state: open transactions, markers, the first unstable offset
(held by a completed transaction until the high watermark passes its marker), the aborted
ranges a read overlaps, and all of it read back from the files when the log is opened again."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.protocol import ErrorCode, KafkaError
from conformance.protocol.records import build_batch, encode_batch
from reference_impl.log import LogConfig, PartitionLog
from reference_impl.log.validation import validate_batch


def append(log: PartitionLog, pid: int, seq: int, *, txn: bool = True, epoch: int = 0) -> int:
    raw = encode_batch(
        build_batch(
            [(1, b"k", b"v")],
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            is_transactional=txn,
        )
    )
    batch = validate_batch(raw, max_message_bytes=1 << 20)
    return log.append_as_leader(batch.data, batch.header, 0).first_offset


def state(log: PartitionLog, hw: int) -> tuple[int | None, list[tuple[int, int, int]]]:
    aborted = log.producers.aborted_between(0, log.log_end_offset)
    return log.producers.first_unstable_offset(hw), [
        (t.producer_id, t.first_offset, t.last_offset) for t in aborted
    ]


def test_the_state_follows_the_markers_and_comes_back_from_the_files(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path, LogConfig(segment_bytes=150))
    assert append(log, 1, 0) == 0 and append(log, 2, 0) == 1 and append(log, 1, 1) == 2
    assert state(log, 3) == (0, [])
    assert log.append_marker(1, 0, 5, False, 0).first_offset == 3  # P1 aborted: [0, 3]
    assert state(log, 3) == (0, [(1, 0, 3)])  # its marker is not under the HW yet
    assert state(log, 4) == (1, [(1, 0, 3)])  # now P2's open transaction holds it
    assert log.append_marker(2, 0, 5, True, 0).first_offset == 4
    assert state(log, 5) == (None, [(1, 0, 3)])
    assert log.producers.aborted_between(4, 5) == []  # ends before a read from offset 4
    with pytest.raises(KafkaError) as old_epoch:
        log.append_marker(1, -1, 5, True, 0)
    assert old_epoch.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    with pytest.raises(KafkaError) as fenced:
        log.append_marker(1, 0, 4, True, 0)
    assert fenced.value.code == ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert append(log, 3, 0) == 5  # P3 opens at 5, then the broker stops
    assert len(log.segments) > 2
    log.close()

    again = PartitionLog(tmp_path, LogConfig(segment_bytes=150))
    assert state(again, 6) == (5, [(1, 0, 3)])
    assert again.producers.producers[1].coordinator_epoch == 5
    with pytest.raises(KafkaError) as mixed:
        append(again, 3, 1, txn=False)  # a plain batch inside P3's open transaction
    assert mixed.value.code == ErrorCode.INVALID_TXN_STATE
    again.advance_start(4)  # the aborted range lies wholly below the new log start
    assert state(again, 6) == (5, [])
    again.close()


def test_a_marker_written_during_a_verification_refuses_the_batch(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path)
    producers = log.producers
    token = producers.guard(1)  # Produce asks the coordinator about P1's first batch here ...
    producers.check_guard(1, token)  # ... nothing happened meanwhile: the batch goes in
    append(log, 1, 0)
    log.append_marker(1, 0, 0, False, 0)
    token = producers.guard(1)
    log.append_marker(1, 0, 0, False, 0)  # the transaction ended while the answer travelled
    with pytest.raises(KafkaError) as ended:
        producers.check_guard(1, token)
    assert ended.value.code == ErrorCode.INVALID_TXN_STATE
    append(log, 1, 1)  # an open transaction needs no guard
    producers.check_guard(1, token)
    log.close()


def test_a_transactions_v2_marker_must_carry_a_newer_epoch(tmp_path: Path) -> None:
    """WriteTxnMarkers v2's TransactionVersion 2: the coordinator bumped the epoch when the
    transaction ended, so a marker at the producer's own epoch is refused while its transaction
    is open, and taken again once it completed (a retry); a v0-1 marker (version 0) is not."""
    log = PartitionLog(tmp_path)
    append(log, 1, 0, epoch=3)
    with pytest.raises(KafkaError) as same:
        log.append_marker(1, 3, 0, True, 0, transaction_version=2)
    assert same.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert log.append_marker(1, 4, 0, True, 0, transaction_version=2).first_offset == 1
    assert log.append_marker(1, 4, 0, True, 0, transaction_version=2).first_offset == 2
    append(log, 1, 0, epoch=4)  # the next transaction at the bumped epoch
    with pytest.raises(KafkaError):
        log.append_marker(1, 3, 0, False, 0, transaction_version=2)
    assert log.append_marker(1, 4, 0, False, 0).first_offset == 4
