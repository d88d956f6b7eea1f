"""The partition log against a model: appends, reads, truncation, rolls, retention, restarts.

Invariants after every step: offsets are contiguous from the log start to the log end, and
reading the log from its start returns exactly the bytes the model says were stored (each
batch as appended, with only the leader-assigned base offset and leader epoch set).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from pathlib import Path

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from conformance.protocol.records import Compression, build_batch, encode_batch
from reference_impl.log import LogConfig, PartitionLog, parse_header

CONFIG = LogConfig(segment_bytes=1500, index_interval_bytes=200, retention_ms=-1)


def _stamped(raw: bytes, base: int, epoch: int) -> bytes:
    buf = bytearray(raw)
    struct.pack_into(">q", buf, 0, base)
    struct.pack_into(">i", buf, 12, epoch)
    return bytes(buf)


def read_all(log: PartitionLog) -> list[bytes]:
    """Every stored batch, fetched the way a consumer would (one read per segment at most)."""
    out: list[bytes] = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 700)
        assert data, f"no data at {offset} below the log end {log.log_end_offset}"
        pos = 0
        while pos < len(data):
            h = parse_header(data, pos)
            assert pos + h.length <= len(data), "a read returned a partial batch"
            out.append(bytes(data[pos : pos + h.length]))
            offset = h.next_offset
            pos += h.length
    return out


class LogMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="log-model-"))
        self.log = PartitionLog(self.dir, CONFIG)
        self.model: list[tuple[int, int, bytes]] = []  # (base offset, next offset, stored bytes)
        self.epoch = 0
        self.seq = 0

    def teardown(self) -> None:
        for seg in self.log.segments:
            seg.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    @property
    def end(self) -> int:
        return self.model[-1][1] if self.model else self.log.log_start_offset

    @rule(
        n=st.integers(1, 6),
        size=st.integers(0, 120),
        compression=st.sampled_from([Compression.NONE, Compression.GZIP, Compression.ZSTD]),
        new_epoch=st.booleans(),
    )
    def append_as_leader(self, n: int, size: int, compression: Compression, new_epoch: bool):
        self.epoch += new_epoch
        self.seq += 1
        items = [
            (1000 + self.seq * 10 + i, b"k%d" % i, bytes([self.seq % 256]) * size) for i in range(n)
        ]
        raw = encode_batch(build_batch(items, compression=compression))
        result = self.log.append_as_leader(raw, parse_header(raw), self.epoch)
        assert result.first_offset == self.end
        assert result.last_offset == self.end + n - 1
        self.model.append((self.end, self.end + n, _stamped(raw, self.end, self.epoch)))

    @rule(n=st.integers(1, 4), batches=st.integers(1, 3))
    def append_as_follower(self, n: int, batches: int):
        self.epoch += 1
        chunk = b""
        for _ in range(batches):
            self.seq += 1
            raw = encode_batch(build_batch([(5, None, b"f%d" % i) for i in range(n)]))
            stored = _stamped(raw, self.end, self.epoch)
            self.model.append((self.end, self.end + n, stored))
            chunk += stored
        assert self.log.append_as_follower(chunk) == batches

    @rule(data=st.data())
    def read_from_any_offset(self, data):
        if self.end == self.log.log_start_offset:
            assert self.log.read(self.end, 100) == b""
            return
        offset = data.draw(st.integers(self.log.log_start_offset, self.end - 1))
        max_bytes = data.draw(st.integers(1, 2000))
        got = self.log.read(offset, max_bytes)
        i = next(i for i, (_, nxt, _) in enumerate(self.model) if nxt > offset)
        expected = b"".join(b for _, _, b in self.model[i:])
        assert got and expected.startswith(got), "a read must be stored batches, in order"
        first = len(self.model[i][2])
        assert len(got) <= max(max_bytes, first), "max bytes exceeded beyond the first batch"

    @precondition(lambda self: self.model)
    @rule(data=st.data())
    def truncate(self, data):
        offset = data.draw(st.integers(self.log.log_start_offset, self.end))
        self.log.truncate_to(offset)
        self.model = [m for m in self.model if m[1] <= offset]

    @rule()
    def roll(self):
        self.log.roll()

    @rule(limit=st.integers(0, 3000))
    def retention_by_size(self, limit: int):
        log = self.log
        log.config = LogConfig(**{**CONFIG.__dict__, "retention_bytes": limit})
        log.apply_retention(high_watermark=log.log_end_offset)
        log.config = CONFIG
        self.model = [m for m in self.model if m[0] >= log.log_start_offset]
        if self.model:
            assert self.model[0][0] == log.log_start_offset, "retention cut inside a batch"

    @rule(clean=st.booleans())
    def restart(self, clean: bool):
        if clean:
            self.log.close()
        else:  # as after kill -9: nothing flushed or sealed, the files are what was written
            for seg in self.log.segments:
                seg.close()
        start = self.log.log_start_offset
        self.log = PartitionLog(self.dir, CONFIG, start_offset=start)
        assert self.log.recovery_truncated_bytes == 0

    @precondition(lambda self: self.model)
    @rule(cut=st.integers(1, 80), garbage=st.booleans())
    def torn_tail_then_restart(self, cut: int, garbage: bool):
        """Damage the end of the last segment file; recovery keeps every intact batch."""
        for seg in self.log.segments:
            seg.close()
        path = sorted(self.dir.glob("*.log"))[-1]
        size = path.stat().st_size
        if garbage:  # a write that landed partly: junk after the last complete batch
            with open(path, "ab") as f:
                f.write(os.urandom(cut))
        else:
            os.truncate(path, max(0, size - cut))
        start = self.log.log_start_offset
        self.log = PartitionLog(self.dir, CONFIG, start_offset=start)
        if not garbage:
            remaining = size - cut
            seg_base = int(path.stem)
            pos = 0
            kept = []
            for m in self.model:
                if m[0] >= seg_base:
                    if pos + len(m[2]) > remaining:
                        break
                    pos += len(m[2])
                kept.append(m)
            self.model = kept

    @invariant()
    def contiguous_and_exact(self):
        log = self.log
        assert log.log_end_offset == self.end
        stored = read_all(log)
        assert stored == [b for _, _, b in self.model]
        expect = log.log_start_offset
        for raw in stored:
            h = parse_header(raw)
            assert h.base_offset == expect, "offsets must be contiguous"
            expect = h.next_offset


TestLog = LogMachine.TestCase
