"""Time for the group coordinator: a clock plus one-shot timers, real (asyncio) or manual.

The coordinator never sleeps; it asks for a callback at a deadline. Tests drive a
ManualScheduler (time moves only when told, timers fire in deadline order); the broker uses
AsyncioScheduler on its event loop.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Scheduler(Protocol):
    def now_ms(self) -> int:
        """Monotonic milliseconds: what deadlines are measured in."""
        ...

    def wall_ms(self) -> int:
        """Wall-clock milliseconds since the epoch: what commit timestamps record."""
        ...

    def call_at(self, when_ms: int, fn: Callable[[], None]) -> Timer:
        """Run ``fn`` once at ``when_ms`` (``now_ms`` scale) unless cancelled first."""
        ...


class _ManualTimer:
    __slots__ = ("cancelled", "fn", "when")

    def __init__(self, when: int, fn: Callable[[], None]) -> None:
        self.when, self.fn, self.cancelled = when, fn, False

    def cancel(self) -> None:
        self.cancelled = True


class ManualScheduler:
    """Time advances only through ``advance``; due timers run in deadline order, FIFO on ties."""

    def __init__(self, start_ms: int = 0, wall_base_ms: int = 1_700_000_000_000) -> None:
        self._now = start_ms
        self._wall_base = wall_base_ms
        self._heap: list[tuple[int, int, _ManualTimer]] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self._now

    def wall_ms(self) -> int:
        return self._wall_base + self._now

    def call_at(self, when_ms: int, fn: Callable[[], None]) -> _ManualTimer:
        timer = _ManualTimer(when_ms, fn)
        heapq.heappush(self._heap, (when_ms, next(self._seq), timer))
        return timer

    def advance(self, ms: int) -> None:
        target = self._now + ms
        while self._heap and self._heap[0][0] <= target:
            when, _, timer = heapq.heappop(self._heap)
            if timer.cancelled:
                continue
            self._now = max(self._now, when)
            timer.fn()
        self._now = target

    def pending(self) -> int:
        return sum(1 for _, _, t in self._heap if not t.cancelled)


class AsyncioScheduler:
    """Timers on the running event loop; deadlines on the monotonic clock."""

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self._loop = loop or asyncio.get_running_loop()

    def now_ms(self) -> int:
        return int(time.monotonic() * 1000)

    def wall_ms(self) -> int:
        return int(time.time() * 1000)

    def call_at(self, when_ms: int, fn: Callable[[], None]) -> asyncio.TimerHandle:
        delay = max(0, when_ms - self.now_ms()) / 1000
        return self._loop.call_later(delay, fn)
