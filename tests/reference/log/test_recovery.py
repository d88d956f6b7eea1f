"""Recovery on start: a torn or corrupted tail is cut, earlier batches survive untouched."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conformance.protocol.records import build_batch, decode_batches, encode_batch
from reference_impl.log import LogConfig, PartitionLog, parse_header

CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=256)


def _fill(directory: Path, batches: int = 60) -> tuple[PartitionLog, list[bytes]]:
    log = PartitionLog(directory, CONFIG)
    for i in range(batches):
        raw = encode_batch(build_batch([(1_000 + i, b"key", b"v" * 40), (1_001 + i, None, b"w")]))
        log.append_as_leader(raw, parse_header(raw), leader_epoch=1 + i // 20)
    stored = _everything(log)
    return log, stored


def _everything(log: PartitionLog) -> list[bytes]:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        for b in decode_batches(log.read(offset, 1 << 20)):
            out.append(b.raw)
            offset = b.next_offset
    return out


def _crash(log: PartitionLog) -> None:
    """Close file descriptors without flushing or sealing, as kill -9 leaves things."""
    for seg in log.segments:
        seg.close()


def _segments(directory: Path) -> list[Path]:
    return sorted(directory.glob("*.log"))


def test_torn_last_batch_is_cut_and_earlier_batches_survive(tmp_path: Path) -> None:
    log, stored = _fill(tmp_path)
    _crash(log)
    last = _segments(tmp_path)[-1]
    os.truncate(last, last.stat().st_size - 7)  # the last write only partly reached the disk
    log = PartitionLog(tmp_path, CONFIG)
    assert log.recovery_truncated_bytes == len(stored[-1]) - 7
    assert _everything(log) == stored[:-1]
    assert log.log_end_offset == 2 * (len(stored) - 1)
    # the log carries on from there
    raw = encode_batch(build_batch([(5, None, b"after")]))
    assert log.append_as_leader(raw, parse_header(raw), 9).first_offset == log.log_end_offset - 1


@pytest.mark.parametrize("where", ["crc", "record_bytes", "length"])
def test_corrupted_last_batch_is_detected_and_cut(tmp_path: Path, where: str) -> None:
    log, stored = _fill(tmp_path)
    _crash(log)
    last = _segments(tmp_path)[-1]
    size = last.stat().st_size
    start = size - len(stored[-1])
    at = {"crc": start + 17, "record_bytes": size - 3, "length": start + 8}[where]
    with open(last, "r+b") as f:
        f.seek(at)
        byte = f.read(1)
        f.seek(at)
        f.write(bytes([byte[0] ^ 0x55]))
    log = PartitionLog(tmp_path, CONFIG)
    assert log.recovery_truncated_bytes == len(stored[-1])
    assert _everything(log) == stored[:-1]


def test_garbage_after_the_last_batch_is_cut(tmp_path: Path) -> None:
    log, stored = _fill(tmp_path)
    _crash(log)
    with open(_segments(tmp_path)[-1], "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x50garbage")
    log = PartitionLog(tmp_path, CONFIG)
    assert _everything(log) == stored


def test_damage_in_a_middle_segment_drops_what_follows_it(tmp_path: Path) -> None:
    log, stored = _fill(tmp_path)
    log.close()
    segs = _segments(tmp_path)
    assert len(segs) >= 3
    middle = segs[1]
    (tmp_path / (middle.stem + ".index")).unlink()  # forces a full scan of that segment
    with open(middle, "r+b") as f:
        f.seek(middle.stat().st_size - 2)
        f.write(b"\xff\xff")
    log = PartitionLog(tmp_path, CONFIG)
    kept = _everything(log)
    assert kept == stored[: len(kept)]
    assert int(middle.stem) < log.log_end_offset <= int(segs[2].stem)
    assert not any(p.exists() for p in segs[2:])


def test_lost_index_files_are_rebuilt(tmp_path: Path) -> None:
    log, stored = _fill(tmp_path)
    log.close()
    for p in tmp_path.glob("*.index"):
        p.unlink()
    for p in tmp_path.glob("*.timeindex"):
        p.write_bytes(b"\x01\x02\x03")  # not a whole entry
    log = PartitionLog(tmp_path, CONFIG)
    assert log.recovery_truncated_bytes == 0
    assert _everything(log) == stored
    assert log.offset_for_timestamp(1_030).offset == 59  # batch 29: offsets 58, 59 at 1029, 1030
    assert log.epochs.epochs == [1, 2, 3]


def test_clean_restart_trusts_indexes_and_keeps_epochs_and_producers(tmp_path: Path) -> None:
    log = PartitionLog(tmp_path, CONFIG)
    for seq in range(0, 10, 2):
        raw = encode_batch(
            build_batch(
                [(1, None, b"a"), (2, None, b"b")],
                producer_id=7,
                producer_epoch=0,
                base_sequence=seq,
            )
        )
        log.append_as_leader(raw, parse_header(raw), 4)
    log.close()
    log = PartitionLog(tmp_path, CONFIG)
    assert log.epochs.epochs == [4]
    entry = log.producers.producers[7]
    assert entry.last_seq == 9
    retry = encode_batch(
        build_batch(
            [(1, None, b"a"), (2, None, b"b")], producer_id=7, producer_epoch=0, base_sequence=8
        )
    )
    result = log.append_as_leader(retry, parse_header(retry), 4)
    assert result.duplicate and result.first_offset == 8
