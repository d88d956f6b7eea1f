"""Disruptive tests beside the workers: concurrent runs against a cluster the run starts (issue 36).

A concurrent run's disruptive tests (faults, restarts, malformed input) may bring the target down,
so they cannot share it with the workers; the controller ran them after the workers, one at a
time, and their waits (node restarts, failure detection) were most of the run's wall time. A
target the run starts itself on loopback (``SIDE_KINDS``: the bundled reference, a few Python
processes; Apache Kafka, four JVMs of about 1.5 CPU-s and 0.3 GB each) can be started again, so
the controller starts one-process runs (``python -m conformance.side_runs``, one per two workers)
as the workers start. Each starts a cluster of its own with the run's options and seed, selects
the disruptive tests only, and runs each one it claims first (a file created exclusively in a
folder the sides share), the longest first (``conformance.durations``: the last claims are
short, so the sides and the controller end together), recovering its own cluster as a
one-process run does.
When the workers are done the controller joins in on its own cluster, claiming in the same way,
then takes the sides' records into the run in the collected order (the claims are named by it),
with their outages and set-up defects; a disruptive test nobody recorded (a side that
could not start or did not finish) the controller runs itself, as before. The verdicts are those
of a one-process run at the same seed (``tests/suite/runs/test_side_runs.py``; whole runs in
benchmarks/README.md). Other targets (an external one, a container) keep the controller's way.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import pytest

#: side runs per two workers of a concurrent run, by target kind (at least one): the reference's
#: disruptive tests mostly wait, so two side runs beside ``--jobs auto``'s four workers finish
#: about when the workers do on two cores; each side costs a process, a collection and a cluster
SIDES_PER_TWO_JOBS = {"reference": 1.0, "kafka": 1.0}
#: a side run is bounded by its tests' own bounds; this is the last resort (then it is stopped and
#: the controller runs its share)
SIDE_TIMEOUT_S = 1800.0
#: the options file's name in a side's folder
INPUT = "side.json"
#: a side's exit code when the run selected no disruptive test
NOTHING = 4
#: the file in a side's folder saying its records and manifest are written (its pytest exit
#: status): the controller takes them while the side stops its cluster
RECORDED = "recorded"
#: how long a side that said it recorded may take to stop its cluster and exit
EXIT_WITHIN_S = 30.0
#: in the claims folder: the disruptive tests' modules and ids as the sides collected them
#: (``note``), so that the controller collects only those modules after its workers
COLLECTED = "collected.json"


#: the target kinds a side run starts a cluster of its own of (``--target KIND[:...][?...]``):
#: clusters the run starts on loopback, cheap enough to start again beside the workers
SIDE_KINDS = ("reference", "kafka")


class RunTarget(Protocol):
    kind: str


def _base(kind: str) -> str:
    return kind.partition("?")[0].partition(":")[0]


def beside(target: RunTarget, jobs: int) -> bool:
    """Whether a concurrent run's disruptive tests run in side runs (``SIDE_KINDS``)."""
    return jobs > 1 and _base(target.kind) in SIDE_KINDS


@dataclass
class Side:
    index: int
    folder: Path
    proc: subprocess.Popen | None = None
    #: the records, outages and set-up defects it recorded (None: it did not complete)
    records: list[dict[str, Any]] | None = None
    manifest: dict[str, Any] = field(default_factory=dict)
    exit_code: int | None = None
    #: its folder is kept (its cluster's logs): it did not complete, or a test failed
    keep: bool = False
    #: when it was spawned (``time.time()``)
    spawned: float = field(default_factory=time.time)

    def took(self) -> float:
        """Its wall time: from its spawn to its log's last write (its end)."""
        try:
            return (self.folder / "side.log").stat().st_mtime - self.spawned
        except OSError:
            return 0.0


@dataclass
class Sides:
    """The side runs of one concurrent run and the folder of their claims."""

    runs: list[Side]
    claims: Path

    def finish(self, timeout: float = SIDE_TIMEOUT_S) -> None:
        """Wait for every side (bounded) to exit or say it recorded (``RECORDED``: its cluster
        may still be stopping), then read what each recorded."""
        deadline = time.monotonic() + timeout
        for side in self.runs:
            assert side.proc is not None
            while (code := side.proc.poll()) is None and recorded(side) is None:
                if time.monotonic() > deadline:
                    stop(side)
                    break
                time.sleep(0.05)
            else:
                side.exit_code = code
            runs = sorted((side.folder / "results").glob("*/manifest.json"))
            if side.exit_code == NOTHING:  # no disruptive test selected: no cluster started
                side.records = []
            elif recorded(side) in DONE and len(runs) == 1:
                side.manifest = json.loads(runs[0].read_text(encoding="utf-8"))
                text = (runs[0].parent / "results.jsonl").read_text(encoding="utf-8")
                side.records = [json.loads(line) for line in text.splitlines() if line.strip()]

    def merged(self) -> list[dict[str, Any]]:
        """The completed sides' records in the collected order (the order of the claims)."""
        by_test: dict[str, list[dict[str, Any]]] = {}
        for side in self.runs:
            for r in side.records or []:
                by_test.setdefault(r["test_id"], []).append(
                    {k: v for k, v in r.items() if k != "run_id"}
                )
        out: list[dict[str, Any]] = []
        for path in sorted(p for p in self.claims.iterdir() if p.name.isdigit()):
            out += by_test.pop(path.read_text(encoding="utf-8"), [])
        return out

    def close(self) -> None:
        """Stop the sides still running (those that recorded are given ``EXIT_WITHIN_S`` to stop
        their clusters first); remove their folders but those kept (``Side.keep``)."""
        import shutil

        for side in self.runs:
            if side.proc is not None and recorded(side) is not None:
                try:
                    side.exit_code = side.proc.wait(EXIT_WITHIN_S)
                except subprocess.TimeoutExpired:
                    pass
            stop(side)
            if not side.keep:
                shutil.rmtree(side.folder, ignore_errors=True)
        shutil.rmtree(self.claims, ignore_errors=True)


#: the pytest exit statuses of a side that ran its share (some tests may have failed)
DONE = (int(pytest.ExitCode.OK), int(pytest.ExitCode.TESTS_FAILED))


def recorded(side: Side) -> int | None:
    """The exit status a side said it recorded with (``RECORDED``), or None: not yet."""
    try:
        return int((side.folder / RECORDED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _say_recorded(folder: Path, status: int) -> None:
    """Written whole or not at all (renamed into place)."""
    part = folder / f"{RECORDED}.part"
    part.write_text(str(status), encoding="utf-8")
    os.replace(part, folder / RECORDED)


def sides_for(jobs: int, kind: str = "reference") -> int:
    return max(1, int(jobs // 2 * SIDES_PER_TWO_JOBS[_base(kind)]))


def start(options: dict[str, Any], seed: int, sides: int) -> Sides:
    """Spawn the side runs (each in a folder of its own, its output in ``side.log``), sharing
    the disruptive tests through a folder of claims."""
    claims = Path(tempfile.mkdtemp(prefix="kafka-conformance-claims-"))
    out = Sides([], claims)
    for k in range(sides):
        folder = Path(tempfile.mkdtemp(prefix=f"kafka-conformance-side{k}-"))
        given = {**options, "seed": seed, "jobs": 1, "no_report": True, "report": None}
        given["results_dir"] = str(folder / "results")
        (folder / INPUT).write_text(json.dumps({"options": given, "claims": str(claims)}))
        log = (folder / "side.log").open("wb")
        side = Side(k, folder)
        try:
            side.proc = subprocess.Popen(  # its stdin is its lifeline (``_lifeline``)
                [sys.executable, "-m", "conformance.side_runs", str(folder / INPUT)],
                stdin=subprocess.PIPE,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "PYTHONPATH": _pythonpath()},
            )
        finally:
            log.close()
        out.runs.append(side)
    return out


def _pythonpath() -> str:
    """This process's ``conformance`` first: a side runs the same code as its controller."""
    here = str(Path(__file__).resolve().parent.parent)
    rest = os.environ.get("PYTHONPATH", "")
    return here + (os.pathsep + rest if rest else "")


def stop(side: Side) -> None:
    """Stop a side still running (by pid; it stops its cluster on SIGTERM)."""
    if side.proc is not None and side.proc.poll() is None:
        side.proc.terminate()
        try:
            side.proc.wait(30)
        except subprocess.TimeoutExpired:
            side.proc.kill()
            side.proc.wait()
    if side.proc is not None and side.proc.stdin is not None:
        side.proc.stdin.close()


def _lifeline() -> None:
    """A side stops as on SIGTERM when its controller is gone, however it went: its stdin is a
    pipe whose writing end only the controller holds, so it reads end of file."""
    import threading

    fd = os.dup(0)  # pytest's capture puts /dev/null on fd 0

    def watch() -> None:
        while os.read(fd, 4096):
            pass
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="lifeline", daemon=True).start()


def log_tail(side: Side, lines: int = 20) -> str:
    try:
        text = (side.folder / "side.log").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.splitlines()[-lines:])


class Share:
    """A side run's plugin (its run keeps the disruptive tests only, ``SuiteRun.disruptive_only``):
    it runs each one this side claims first (``claimed``, the longest first), so the sides share
    the tests out as they go and the long ones do not pile up in one side."""

    def __init__(self, claims: Path, kind: str = "reference") -> None:
        self.claims = claims
        self.kind = kind

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        note(self.claims, session.items)
        in_turn(session, claimed(self.claims, session.items, kind=self.kind))
        return True


def note(claims: Path, items: list[pytest.Item]) -> None:
    """The modules of a side's tests (the run's disruptive ones) and their ids, in the collected
    order (``COLLECTED``; every side writes the same, renamed into place)."""
    from conformance.plugin import info

    paths = list(dict.fromkeys(str(i.path) for i in items))
    text = json.dumps({"paths": paths, "ids": [info(i).test_id for i in items]})
    part = claims / f"{COLLECTED}.{os.getpid()}.part"
    part.write_text(text, encoding="utf-8")
    os.replace(part, claims / COLLECTED)


def noted(claims: Path) -> tuple[list[str], list[str]] | None:
    """What a side noted (``note``), or None: no side got that far."""
    try:
        seen = json.loads((claims / COLLECTED).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return seen["paths"], seen["ids"]


def claimed(
    claims: Path,
    items: list[pytest.Item],
    go: Callable[[], bool] = lambda: True,
    kind: str = "reference",
) -> Iterator[pytest.Item]:
    """The tests of ``items`` (a run's disruptive tests, in the collected order: every side's
    list and the controller's are the same) this process claims first, the longest first on
    the target ``kind`` (``longest_first``), each claimed when asked for; none more once
    ``go()`` is false (the controller's target is down for good)."""
    from conformance.durations import longest_first
    from conformance.plugin import info

    ids = [info(i).test_id for i in items]
    order = longest_first(ids, kind)
    ranked = [ids[n] for n in order]
    now = claim(claims, ranked, 0, order) if go() else None
    while now is not None:
        yield items[order[now]]
        now = claim(claims, ranked, now + 1, order) if go() else None


def in_turn(session: pytest.Session, items: Iterable[pytest.Item]) -> list[pytest.Item]:
    """pytest's loop over ``items``, one taken ahead (its next test is known when the current one
    tears down, as in pytest's own loop); the tests run."""
    ran: list[pytest.Item] = []
    it = iter(items)
    now = next(it, None)
    while now is not None and not (session.shouldfail or session.shouldstop):
        after = next(it, None)
        now.config.hook.pytest_runtest_protocol(item=now, nextitem=after)
        ran.append(now)
        now = after
    return ran


def claim(claims: Path, ids: list[str], start: int, names: list[int] | None = None) -> int | None:
    """The first test of ``ids`` from ``start`` on that no side claimed yet, claimed (a file
    created exclusively, holding its test id, named by its collected place, ``names[n]`` where
    ``ids`` are in another order); its place in ``ids``, or None when none is left."""
    for n in range(start, len(ids)):
        name = n if names is None else names[n]
        try:
            fd = os.open(claims / f"{name:05d}", os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        except FileExistsError:
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(ids[n])
        return n
    return None


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    """One side run: the controller's options, a cluster of its own, its share."""
    from conformance.plugin import SuiteRun, args_for_pytest, make_run_target
    from conformance.targets import TargetError

    given = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    options = argparse.Namespace(**given["options"])
    for name in ("results_dir", "spec_dir", "junit_xml"):
        if getattr(options, name, None):
            setattr(options, name, Path(getattr(options, name)))
    options.junit_xml = None
    try:
        target = make_run_target(options)
        target.prepare()
    except TargetError as e:
        print(f"side run: {e}", file=sys.stderr)
        return 2
    Path(options.results_dir).mkdir(parents=True, exist_ok=True)
    signal.signal(signal.SIGTERM, _interrupted)  # the controller's stop: its cluster stopped too
    _lifeline()
    run = SuiteRun(options, target=target)
    run.disruptive_only = True
    run.recorded = lambda status: _say_recorded(Path(argv[0]).parent, status)
    share = Share(Path(given["claims"]), target.kind)
    code = pytest.main(args_for_pytest(options), plugins=[run, share])
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        return NOTHING
    return 0 if code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) else int(code) + 10


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
