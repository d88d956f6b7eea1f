"""The leader-epoch cache: at which offset each leader epoch's writes start.

A follower compares its history with the leader's through it (Fetch v12+ LastFetchedEpoch and
DivergingEpoch), so that a replica that wrote records a new leader never had truncates exactly
them. Persisted in ``leader-epoch-checkpoint`` in Kafka's text format (version, count, then
``epoch start_offset`` lines), rewritten atomically on every change.
"""

from __future__ import annotations

import os
from bisect import bisect_right
from pathlib import Path

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1
FILE = "leader-epoch-checkpoint"


class LeaderEpochCache:
    def __init__(self, directory: Path) -> None:
        self.path = directory / FILE
        self.epochs: list[int] = []
        self.starts: list[int] = []

    def load(self, log_start: int, log_end: int) -> None:
        """Read the checkpoint, keeping entries consistent with the recovered log."""
        entries: list[tuple[int, int]] = []
        try:
            lines = self.path.read_text().split("\n")
            count = int(lines[1])
            for line in lines[2 : 2 + count]:
                e, o = line.split()
                entries.append((int(e), int(o)))
        except (OSError, ValueError, IndexError):
            entries = []
        self.epochs, self.starts = [], []
        for e, o in entries:
            if (self.epochs and (e <= self.epochs[-1] or o < self.starts[-1])) or o > log_end:
                continue
            self.epochs.append(e)
            self.starts.append(o)
        self._clamp_start(log_start)
        self._write()

    @property
    def latest_epoch(self) -> int:
        return self.epochs[-1] if self.epochs else UNDEFINED_EPOCH

    def assign(self, epoch: int, start_offset: int) -> None:
        """Record that ``epoch`` starts at ``start_offset`` (ignored unless it is newer)."""
        if epoch < 0 or (self.epochs and epoch <= self.epochs[-1]):
            return
        while self.starts and self.starts[-1] >= start_offset:  # a stale entry without records
            self.epochs.pop()
            self.starts.pop()
        self.epochs.append(epoch)
        self.starts.append(start_offset)
        self._write()

    def end_offset_for(self, epoch: int, log_end: int) -> tuple[int, int]:
        """``(largest known epoch <= epoch, the offset where it ends)``, as Kafka answers."""
        if epoch == UNDEFINED_EPOCH or not self.epochs:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self.epochs[-1]:
            return epoch, log_end
        i = bisect_right(self.epochs, epoch)  # first entry with a larger epoch
        if i == len(self.epochs):
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if i == 0:
            return epoch, self.starts[0]
        return self.epochs[i - 1], self.starts[i]

    def epoch_at(self, offset: int) -> int:
        i = bisect_right(self.starts, offset)
        return self.epochs[i - 1] if i else UNDEFINED_EPOCH

    def truncate_from_end(self, end_offset: int) -> None:
        """The log was cut at ``end_offset``: forget epochs starting there or later."""
        n = len(self.starts)
        while self.starts and self.starts[-1] >= end_offset:
            self.epochs.pop()
            self.starts.pop()
        if len(self.starts) != n:
            self._write()

    def truncate_from_start(self, start_offset: int) -> None:
        if self._clamp_start(start_offset):
            self._write()

    def _clamp_start(self, start_offset: int) -> bool:
        changed = False
        while len(self.starts) > 1 and self.starts[1] <= start_offset:
            self.epochs.pop(0)
            self.starts.pop(0)
            changed = True
        if self.starts and self.starts[0] < start_offset:
            self.starts[0] = start_offset
            changed = True
        return changed

    def clear(self) -> None:
        self.epochs, self.starts = [], []
        self._write()

    def _write(self) -> None:
        lines = ["0", str(len(self.epochs))]
        lines += [f"{e} {o}" for e, o in zip(self.epochs, self.starts, strict=True)]
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            f.write("\n".join(lines) + "\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
