"""The end of a run (issue 36): the target stops in a thread of its own while the report renders
(``plugin._close_beside``), and the run waits for it; what the stop raised is raised again."""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import pytest

from conformance.plugin import State, _close_beside


class _Stopping:
    """A target whose stop takes a while and says in which thread it ran."""

    def __init__(self, error: Exception | None = None) -> None:
        self.error = error
        self.thread: str | None = None
        self.stopped = False

    def stop(self) -> None:
        self.thread = threading.current_thread().name
        time.sleep(0.2)
        self.stopped = True
        if self.error is not None:
            raise self.error


def test_the_target_stops_beside_and_is_waited_for() -> None:
    target = _Stopping()
    state = State(target=target, harness=SimpleNamespace(close=lambda: None))
    wait = _close_beside(state)
    assert not target.stopped  # the caller renders the report meanwhile
    wait()
    assert target.stopped and target.thread != threading.current_thread().name
    assert state.harness is None


def test_what_the_stop_raised_is_raised_by_the_wait() -> None:
    target = _Stopping(RuntimeError("a node did not stop"))
    wait = _close_beside(State(target=target))
    with pytest.raises(RuntimeError, match="a node did not stop"):
        wait()
