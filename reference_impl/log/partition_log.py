"""The log of one partition replica: segments, recovery, appends, reads, truncation, retention.

Offsets are contiguous: every batch starts where the previous one ended. The leader stamps a
client's batch with its base offset and leader epoch (the only bytes it changes, both outside
the CRC) and stores it; a follower stores the leader's batches byte for byte. Reads return the
stored bytes, cut at batch boundaries. Nothing here decodes records, except a timestamp lookup
that has to look inside the one batch the answer lies in.

On open, every segment whose indexes do not agree with it, and always the last segment, is
scanned batch by batch (length, magic, offset order, CRC-32C); the file is cut at the first
batch that fails (a torn or corrupted tail) and any later segment is removed. The leader-epoch
cache and the producer state are then rebuilt from the batch headers that remain (and, for
control batches, their one marker record: the ongoing transactions and the aborted-transaction
index come back from the log itself, so they survive restarts and segment rolls).

Transaction markers (``append_marker``) are control batches the leader builds itself for the
coordinator's WriteTxnMarkers: one COMMIT or ABORT record (key version 0 and type, value
version 0 and the coordinator epoch), transactional and control bits set, no sequence.

The log start offset is the first segment's base offset unless DeleteRecords (or a leader's
Fetch answer, on a follower) moved it further: that offset is kept in the partition's
``log-start-offset`` checkpoint file, written at once (write, fsync, rename), so a restart keeps it.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from bisect import bisect_right
from dataclasses import dataclass, replace
from pathlib import Path

from conformance.protocol import ErrorCode, KafkaError
from conformance.protocol.records import (
    ControlType,
    CorruptRecordError,
    control_batch,
    decode_batch,
    encode_batch,
    parse_control_key,
    parse_end_txn_marker,
)
from conformance.protocol.records.header import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    crc_ok,
    parse_header,
    stamp,
    stamp_append_time,
)
from reference_impl.log.config import LogConfig
from reference_impl.log.epochs import LeaderEpochCache
from reference_impl.log.producer_state import ProducerStateManager
from reference_impl.log.segment import Segment

_MAX_RELATIVE = 2**31 - 1
#: baseOffset, batchLength, partitionLeaderEpoch: the bytes a leader rewrites (outside the CRC)
_STAMPED = 16
#: the partition's log start offset checkpoint (one decimal line)
LOG_START_FILE = "log-start-offset"


@dataclass(frozen=True, slots=True)
class AppendResult:
    first_offset: int
    last_offset: int
    log_start_offset: int
    #: the batch repeated one already stored (idempotent retry): nothing was written
    duplicate: bool = False
    #: the time the leader stamped the batch with (LogAppendTime topics), else -1
    log_append_time: int = -1


@dataclass(frozen=True, slots=True)
class TimestampOffset:
    offset: int
    timestamp: int


class PartitionLog:
    def __init__(
        self, directory: Path, config: LogConfig | None = None, *, start_offset: int = 0
    ) -> None:
        self.dir = Path(directory)
        self.config = config or LogConfig()
        self.dir.mkdir(parents=True, exist_ok=True)
        self.segments: list[Segment] = []
        self.epochs = LeaderEpochCache(self.dir)
        self.producers = ProducerStateManager()
        #: bytes cut from the tail (or from a damaged middle segment) during recovery
        self.recovery_truncated_bytes = 0
        self._unflushed_messages = 0
        self._last_flush = time.monotonic()
        self._flushing: asyncio.Future | None = None
        #: moved past the first segment's base by DeleteRecords (0 when it never was)
        self._start = _read_start(self.dir / LOG_START_FILE)
        self._load(start_offset)
        self.flushed_offset = self.log_end_offset

    # -- recovery --------------------------------------------------------------------------

    def _load(self, start_offset: int) -> None:
        bases = sorted(int(p.stem) for p in self.dir.glob("*.log") if p.stem.isdigit())
        for p in self.dir.iterdir():  # index files whose segment is gone
            if p.suffix in (".index", ".timeindex") and p.stem.isdigit():
                if int(p.stem) not in bases:
                    p.unlink()
        interval = self.config.index_interval_bytes
        segments = [Segment(self.dir, b, interval) for b in bases]
        kept: list[Segment] = []
        for i, seg in enumerate(segments):
            last = i == len(segments) - 1
            damaged = False
            if last or not seg.load():
                cut, _ = seg.recover()
                self.recovery_truncated_bytes += cut
                damaged = cut > 0
            if kept and seg.base_offset != kept[-1].next_offset:
                drop = segments[i:]  # does not continue the log: neither it nor what follows
            elif damaged and not last:
                kept.append(seg)
                drop = segments[i + 1 :]  # damage in the middle: nothing after it is trusted
            else:
                kept.append(seg)
                continue
            for later in drop:
                self.recovery_truncated_bytes += later.size
                later.delete()
            break
        # an empty segment other than the last one serves no purpose
        self.segments = [s for s in kept[:-1] if s.size] + kept[-1:]
        for s in kept[:-1]:
            if not s.size:
                s.delete()
        if not self.segments:
            self.segments = [self._new_segment(start_offset)]
        for seg in self.segments[:-1]:
            seg.seal()
        self.epochs.load(self.log_start_offset, self.log_end_offset)
        self._rebuild_from_headers(True)

    def _rebuild_from_headers(self, epochs_too: bool) -> None:
        """Producer state (and the epoch cache when its checkpoint was lost) from the log."""
        self.producers.truncate()
        for seg in self.segments:
            for h in seg.headers_from(0):
                marker = marker_of(seg.batch_at(h.position)) if h.is_control else None
                self.producers.update(h, h.base_offset, marker)
                if epochs_too:
                    self.epochs.assign(h.leader_epoch, h.base_offset)
        self.producers.forget_before(self.log_start_offset)

    # -- state -----------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return min(max(self._start, self.segments[0].base_offset), self.log_end_offset)

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def active(self) -> Segment:
        return self.segments[-1]

    def latest_epoch(self) -> int:
        return self.epochs.latest_epoch

    # -- appending -------------------------------------------------------------------------

    def append_as_leader(
        self,
        batch: bytes | bytearray | memoryview,
        header: BatchHeader,
        leader_epoch: int,
        *,
        coordinator: bool = False,
    ) -> AppendResult:
        """Append one validated client batch: dedupe/sequence-check it, stamp it, store it
        (``coordinator``: a batch the broker wrote itself, whose sequence is not checked)."""
        dup = self.producers.check(header, sequence=not coordinator)
        if dup is not None:
            return AppendResult(dup.first_offset, dup.last_offset, self.log_start_offset, True)
        base = self.log_end_offset
        append_time = -1
        if self.config.log_append_time:
            append_time = int(time.time() * 1000)
            batch = stamp_append_time(batch, header.length, append_time)
            header = replace(header, max_timestamp=append_time)
        head = bytearray(memoryview(batch)[:_STAMPED])
        stamp(head, base, leader_epoch)
        self.epochs.assign(leader_epoch, base)
        h = replace(header, position=0, base_offset=base, leader_epoch=leader_epoch)
        self._maybe_roll(h.length, base)
        # only the first 16 bytes change: write them and the rest of the batch as they are
        self.active.append([head, memoryview(batch)[_STAMPED : h.length]], h, h, h.max_timestamp)
        self._unflushed_messages += h.count
        self.producers.update(h, base)
        return AppendResult(base, h.last_offset, self.log_start_offset, log_append_time=append_time)

    def append_marker(
        self,
        producer_id: int,
        producer_epoch: int,
        coordinator_epoch: int,
        commit: bool,
        leader_epoch: int,
        transaction_version: int = 0,
    ) -> AppendResult:
        """Append a COMMIT or ABORT marker for the coordinator (Kafka's appendAsLeader of an
        end-transaction control batch); raises KafkaError when the producer state refuses it
        (``transaction_version``: the marker's, WriteTxnMarkers v2)."""
        self.producers.check_marker(
            producer_id, producer_epoch, coordinator_epoch, transaction_version
        )
        base = self.log_end_offset
        kind = ControlType.COMMIT if commit else ControlType.ABORT
        data = encode_batch(
            control_batch(
                kind,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                coordinator_epoch=coordinator_epoch,
                timestamp=int(time.time() * 1000),
                base_offset=base,
                partition_leader_epoch=leader_epoch,
            )
        )
        h = parse_header(data, 0)
        self.epochs.assign(leader_epoch, base)
        self._maybe_roll(h.length, base)
        self.active.append(data, h, h, h.max_timestamp)
        self._unflushed_messages += 1
        self.producers.update(h, base, (int(kind), coordinator_epoch))
        return AppendResult(base, base, self.log_start_offset)

    def append_as_follower(self, records: bytes | memoryview) -> int:
        """Append the leader's batches as they are; returns how many were appended.

        A trailing partial batch is ignored. Batches must be v2 with a valid CRC and continue
        the log; anything else raises CorruptMessage and appends nothing.
        """
        data = memoryview(records)
        headers: list[BatchHeader] = []
        pos, n, expect = 0, len(data), self.log_end_offset
        while pos + HEADER_SIZE <= n:
            h = parse_header(data, pos)
            if h.length < HEADER_SIZE:
                raise KafkaError(
                    ErrorCode.CORRUPT_MESSAGE,
                    f"batch at byte {pos} has length {h.length - LOG_OVERHEAD}",
                )
            if pos + h.length > n:
                break
            if h.magic != MAGIC or not crc_ok(data, h):
                raise KafkaError(
                    ErrorCode.CORRUPT_MESSAGE, f"batch at offset {h.base_offset} is corrupt"
                )
            if h.base_offset < expect:
                raise KafkaError(
                    ErrorCode.CORRUPT_MESSAGE,
                    f"batch at offset {h.base_offset} does not continue the log at {expect}",
                )
            headers.append(h)
            expect = h.next_offset
            pos += h.length
        if not headers:
            return 0
        for h in headers:
            self.epochs.assign(h.leader_epoch, h.base_offset)
            marker = marker_of(data[h.position : h.end]) if h.is_control else None
            self.producers.update(h, h.base_offset, marker)
        self._write(data[:pos], headers)
        return len(headers)

    def _write(self, data: bytes | bytearray | memoryview, headers: list[BatchHeader]) -> None:
        """Write batches (their headers say where each starts in ``data``), rolling as needed."""
        view = memoryview(data)
        i = 0
        while i < len(headers):
            self._maybe_roll(headers[i].length, headers[i].base_offset)
            room = self.config.segment_bytes - self.active.size
            j = i + 1
            total = headers[i].length
            while (
                j < len(headers)
                and total + headers[j].length <= room
                and (headers[j].last_offset - self.active.base_offset <= _MAX_RELATIVE)
            ):
                total += headers[j].length
                j += 1
            start = headers[i].position
            max_ts = max(h.max_timestamp for h in headers[i:j])
            first, last = headers[i], headers[j - 1]
            self.active.append(view[start : start + total], first, last, max_ts)
            self._unflushed_messages += sum(h.count for h in headers[i:j])
            i = j

    def _maybe_roll(self, incoming: int, base_offset: int) -> None:
        seg = self.active
        if seg.size == 0:
            if seg.base_offset != base_offset:  # empty active segment at a stale base
                seg.delete()
                self.segments[-1] = self._new_segment(base_offset)
            return
        age_ms = (time.time() - seg.created) * 1000
        if (
            seg.size + incoming > self.config.segment_bytes
            or age_ms >= self.config.segment_ms
            or base_offset - seg.base_offset > _MAX_RELATIVE - 2**20
        ):
            self.roll(base_offset)

    def roll(self, base_offset: int | None = None) -> Segment:
        """Start a new active segment at the log end (no-op when the active one is empty)."""
        if self.active.size == 0:
            return self.active
        self.active.seal()
        seg = self._new_segment(self.log_end_offset if base_offset is None else base_offset)
        self.segments.append(seg)
        return seg

    def _new_segment(self, base_offset: int) -> Segment:
        seg = Segment(self.dir, base_offset, self.config.index_interval_bytes)
        _fsync_dir(self.dir)
        return seg

    # -- flushing --------------------------------------------------------------------------

    def needs_flush(self) -> bool:
        """Whether Kafka's flush.messages / flush.ms say it is time to fsync."""
        if self.flushed_offset >= self.log_end_offset:
            return False
        return (
            self._unflushed_messages >= self.config.flush_messages
            or (time.monotonic() - self._last_flush) * 1000 >= self.config.flush_ms
        )

    def flush(self) -> None:
        """fsync everything written so far (blocking)."""
        target = self.log_end_offset
        for seg in self._unflushed_segments():
            seg.flush()
        self._flushed(target)

    async def flush_async(self, up_to: int | None = None) -> None:
        """fsync up to ``up_to`` (default: the log end) off the event loop; concurrent callers
        share one fsync (group commit)."""
        target = self.log_end_offset if up_to is None else up_to
        while self.flushed_offset < target:
            if self._flushing is None:
                self._flushing = asyncio.ensure_future(self._flush_in_thread())
            await asyncio.shield(self._flushing)

    async def _flush_in_thread(self) -> None:
        target = self.log_end_offset
        fds = [os.dup(s.fd) for s in self._unflushed_segments()]
        try:
            await asyncio.to_thread(_fsync_all, fds)
            self._flushed(target)
        finally:
            self._flushing = None

    def _unflushed_segments(self) -> list[Segment]:
        i = max(0, bisect_right([s.base_offset for s in self.segments], self.flushed_offset) - 1)
        return self.segments[i:]

    def _flushed(self, target: int) -> None:
        self.flushed_offset = max(self.flushed_offset, target)
        self._unflushed_messages = 0
        self._last_flush = time.monotonic()

    # -- reading ---------------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int, max_offset: int | None = None, min_one: bool = True
    ) -> bytes:
        """Stored batches from the one holding ``offset``, below ``max_offset`` (default the
        log end), at most ``max_bytes`` — but with ``min_one`` at least one whole batch."""
        leo = self.log_end_offset
        if offset < self.log_start_offset or offset > leo:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} is outside [{self.log_start_offset}, {leo}]",
            )
        limit = leo if max_offset is None else min(max_offset, leo)
        if offset >= limit:
            return b""
        i = max(0, bisect_right([s.base_offset for s in self.segments], offset) - 1)
        for seg in self.segments[i:]:
            found = seg.position_of(offset)
            if found is not None:
                return seg.read(found[0], max_bytes, limit, min_one)
        return b""

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """The first record with a timestamp >= ``timestamp`` (ListOffsets by time)."""
        for seg in self.segments:
            if seg.max_timestamp < timestamp:
                continue
            base = seg.find_timestamp(timestamp)
            if base is None:
                continue
            for rec in self._records_at(seg, base):
                if rec.timestamp is not None and rec.timestamp >= timestamp:
                    if rec.offset >= self.log_start_offset:
                        return TimestampOffset(rec.offset, rec.timestamp)
        return None

    def offset_of_max_timestamp(self) -> TimestampOffset | None:
        """The record with the largest timestamp (ListOffsets MAX_TIMESTAMP, v7+)."""
        best = max(self.segments, key=lambda s: s.max_timestamp)
        if best.max_timestamp < 0:
            return None
        for h in best.headers_from(best.offset_index.lookup(0)):
            if h.max_timestamp == best.max_timestamp:
                for rec in self._records_at(best, h.base_offset):
                    if rec.timestamp == best.max_timestamp:
                        return TimestampOffset(rec.offset, rec.timestamp)
        return None

    def _records_at(self, seg: Segment, base_offset: int):
        found = seg.position_of(base_offset)
        if found is None:
            return []
        try:
            return decode_batch(seg.batch_at(found[0])).log_records()
        except CorruptRecordError:
            return []

    # -- cutting ---------------------------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding ``offset`` or later (a follower diverged from its
        leader); returns the new log end offset.

        At or past the log end no batch goes, but the epoch cache is trimmed all the same: an
        epoch this replica started at its log end while briefly leader, without writing under
        it, is not the leader's history and must not be sent as our LastFetchedEpoch again."""
        if offset >= self.log_end_offset:
            self.epochs.truncate_from_end(self.log_end_offset)
            return self.log_end_offset
        if offset <= self.log_start_offset:
            self.truncate_fully_and_start_at(offset if offset >= 0 else self.log_start_offset)
            return self.log_end_offset
        while len(self.segments) > 1 and self.active.base_offset >= offset:
            self.segments.pop().delete()
        self.active.truncate_to(offset)
        self._after_truncation()
        return self.log_end_offset

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop the whole log and continue from ``offset`` (a follower behind the leader's
        log start, or a log replaced wholesale)."""
        for seg in self.segments:
            seg.delete()
        self.segments = [self._new_segment(offset)]
        self._set_start(offset)
        self.epochs.clear()
        self._after_truncation()

    def advance_start(self, offset: int) -> int:
        """Move the log start offset up to ``offset`` (DeleteRecords on the leader, the leader's
        log start on a follower), never back and never past the log end; whole segments below
        it are deleted. Returns the log start offset."""
        offset = min(offset, self.log_end_offset)
        if offset <= self.log_start_offset:
            return self.log_start_offset
        self._set_start(offset)
        while len(self.segments) > 1 and self.segments[0].next_offset <= offset:
            self.segments.pop(0).delete()
        self.epochs.truncate_from_start(offset)
        self.producers.forget_before(self.log_start_offset)
        return self.log_start_offset

    def _set_start(self, offset: int) -> None:
        self._start = offset
        path = self.dir / LOG_START_FILE
        tmp = path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write(f"{offset}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(self.dir)

    def _after_truncation(self) -> None:
        self.epochs.truncate_from_end(self.log_end_offset)
        self.flushed_offset = min(self.flushed_offset, self.log_end_offset)
        self._rebuild_from_headers(False)

    def apply_retention(self, high_watermark: int, now_ms: int | None = None) -> int:
        """Delete old segments by ``retention.ms`` / ``retention.bytes``, never the active one
        and never one holding offsets at or above the high watermark; returns how many."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        cfg = self.config
        if not cfg.delete_retention:
            return 0
        total = self.size
        deleted = 0
        while len(self.segments) > 1:
            seg = self.segments[0]
            if seg.next_offset > high_watermark:
                break
            newest = seg.max_timestamp if seg.max_timestamp >= 0 else _mtime_ms(seg)
            by_time = cfg.retention_ms >= 0 and now_ms - newest > cfg.retention_ms
            by_size = cfg.retention_bytes >= 0 and total - seg.size >= cfg.retention_bytes
            if not (by_time or by_size):
                break
            total -= seg.size
            self.segments.pop(0).delete()
            deleted += 1
        if deleted:
            self.epochs.truncate_from_start(self.log_start_offset)
            self.producers.forget_before(self.log_start_offset)
        return deleted

    # -- lifecycle -------------------------------------------------------------------------

    def close(self) -> None:
        """Flush and close (a clean shutdown: the indexes are trusted on the next open)."""
        self.flush()
        self.active.seal()
        for seg in self.segments:
            seg.close()

    def delete(self) -> None:
        for seg in self.segments:
            seg.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def marker_of(batch: bytes | memoryview) -> tuple[int, int] | None:
    """``(control type, coordinator epoch)`` of a control batch's first record; None when it is
    not a transaction marker or does not decode."""
    try:
        records = decode_batch(bytes(batch)).records
        if not records:
            return None
        _, kind = parse_control_key(records[0].key)
        if kind not in (ControlType.ABORT, ControlType.COMMIT):
            return kind, -1
        _, coordinator_epoch = parse_end_txn_marker(records[0].value)
        return kind, coordinator_epoch
    except (CorruptRecordError, ValueError):
        return None


def _fsync_all(fds: list[int]) -> None:
    try:
        for fd in fds:
            os.fsync(fd)
    finally:
        for fd in fds:
            os.close(fd)


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read_start(path: Path) -> int:
    """The checkpointed log start offset, 0 when there is none (or it is unreadable)."""
    try:
        return max(0, int(path.read_text().strip()))
    except (OSError, ValueError):
        return 0


def _mtime_ms(seg: Segment) -> int:
    return int(os.fstat(seg.fd).st_mtime * 1000)
