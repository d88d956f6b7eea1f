"""Stopping a node's asyncio tasks within a bound.

A stop must end: every task is cancelled and waited for at most a few seconds, and the
waiting never swallows the waiter's own cancellation (``asyncio.wait`` returns the tasks'
outcomes without raising them, and raises CancelledError only when the waiter is cancelled).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

log = logging.getLogger(__name__)

#: how long closing waits for a cancelled task before giving up on it
CLOSE_TIMEOUT_S = 5.0


async def stop_tasks(tasks: Iterable[asyncio.Task], timeout: float) -> None:
    """Cancel ``tasks`` and wait for their end, at most ``timeout`` s; the caller's own
    cancellation propagates (``asyncio.wait`` never swallows it)."""
    pending = [t for t in tasks if not t.done()]
    for task in pending:
        task.cancel()
    if not pending:
        return
    _, stuck = await asyncio.wait(pending, timeout=timeout)
    for task in stuck:
        log.error(
            "task %s did not stop within %.1f s of its cancellation", task.get_name(), timeout
        )
