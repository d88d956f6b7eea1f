"""Retention by time and by size: whole old segments go, never the active one, never one
holding offsets at or above the high watermark, never on a compact-only topic."""

from __future__ import annotations

from pathlib import Path

from conformance.protocol.records import build_batch, encode_batch
from reference_impl.log import LogConfig, PartitionLog, parse_header

DAY = 24 * 3600 * 1000


def filled(directory: Path, config: LogConfig, batches: int = 30) -> PartitionLog:
    log = PartitionLog(directory, config)
    for i in range(batches):
        raw = encode_batch(build_batch([(i * 1000, None, b"x" * 100)]))
        log.append_as_leader(raw, parse_header(raw), 0)
    return log


def test_time_retention_deletes_segments_whose_newest_record_is_too_old(tmp_path: Path) -> None:
    log = filled(tmp_path, LogConfig(segment_bytes=600, retention_ms=DAY))
    assert len(log.segments) > 3
    second = log.segments[1]
    # "now" is a day after the first segment's newest record but not the second's
    now = log.segments[0].max_timestamp + DAY + 1
    assert log.apply_retention(high_watermark=log.log_end_offset, now_ms=now) == 1
    assert log.log_start_offset == second.base_offset
    # far in the future: everything but the active segment
    assert log.apply_retention(high_watermark=log.log_end_offset, now_ms=10**15) > 0
    assert len(log.segments) == 1 and log.log_start_offset == log.active.base_offset
    assert log.read(log.log_start_offset, 1 << 20)


def test_size_retention_keeps_the_log_under_the_limit(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=600, retention_ms=-1, retention_bytes=1500)
    log = filled(tmp_path, cfg)
    before = log.size
    log.apply_retention(high_watermark=log.log_end_offset)
    # Kafka's rule: delete the oldest segment while the rest still holds retention.bytes
    assert 1500 <= log.size < before
    assert len(log.segments) == 1 or log.size - log.segments[0].size < 1500


def test_retention_never_passes_the_high_watermark(tmp_path: Path) -> None:
    log = filled(tmp_path, LogConfig(segment_bytes=600, retention_ms=1))
    assert log.apply_retention(high_watermark=0, now_ms=10**15) == 0
    hw = log.segments[2].base_offset
    log.apply_retention(high_watermark=hw, now_ms=10**15)
    assert log.log_start_offset == hw


def test_compact_only_topics_are_not_deleted_by_retention(tmp_path: Path) -> None:
    cfg = LogConfig(segment_bytes=600).with_topic_configs(
        {"cleanup.policy": "compact", "retention.ms": "1"}
    )
    assert not cfg.delete_retention and cfg.retention_ms == 1
    log = filled(tmp_path, cfg)
    assert log.apply_retention(high_watermark=log.log_end_offset, now_ms=10**15) == 0
    both = LogConfig().with_topic_configs({"cleanup.policy": "compact,delete"})
    assert both.delete_retention
