"""The start and the end of a run (issue 36): a concurrent run's target starts in a thread of its
own while xdist spawns the workers (``plugin._Opening``), and one that cannot start still ends the
run in seconds with one line, its workers gone; the target stops in a thread of its own while the
report renders (``plugin._close_beside``), and the run waits for it; what the stop raised is
raised again."""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

from conformance.plugin import State, _close_beside
from conformance.targets import Target, TargetError


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


@dataclass
class _NeverStarts(Target):
    """A target the run starts that fails a second into its start, as a cluster that does not
    come up: by then xdist is spawning the workers."""

    kind: str = "never-starts"
    name: str = "never-starts"

    def start(self) -> None:
        time.sleep(1.0)
        raise TargetError("the cluster did not start: broken on purpose")


def _children() -> set[int]:
    """This process's child processes (the run's workers are, while they live)."""
    me, out = str(os.getpid()), set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2 :].split()[1] == me:
            out.add(int(pid))
    return out


def test_a_concurrent_run_whose_target_cannot_start_ends_cleanly(
    monkeypatch, capsys, tmp_path: Path
) -> None:
    """The workers, spawned while the target starts, wait for its endpoints; when it fails the
    run says why in one line (exit code 2), records nothing and leaves no worker behind."""
    import conformance.run as run
    import conformance.targets as targets
    from conformance.cli import main

    monkeypatch.setattr(targets, "make_target", lambda options: _NeverStarts())
    monkeypatch.setattr(run, "_interrupt_on_sigterm", lambda: None)
    before, seen, done = _children(), set(), threading.Event()

    def watch() -> None:
        while not done.is_set():
            seen.update(_children() - before)
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    results = tmp_path / "results"
    started = time.monotonic()
    try:
        code = main(["run", "--jobs", "2", "--select", "kip-78", "--results-dir", str(results)])
    finally:
        done.set()
        watcher.join()
    took = time.monotonic() - started
    err = capsys.readouterr().err
    assert code == 2, err
    assert "the cluster did not start: broken on purpose" in err
    assert len(seen) >= 2  # the workers were spawned while the target started
    assert _children() <= before  # and every one has exited
    assert not any(results.iterdir())
    print(f"a concurrent run whose target cannot start: ended after {took:.1f} s")
