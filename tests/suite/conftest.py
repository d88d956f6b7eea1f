"""Helpers for the tests of the suite: run ``kafka-conformance run`` and read what it recorded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from conformance.results.schema import load_run
from tests.suite import early


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the long, idle suite runs now, so that they overlap the other tests (``early``)."""
    if not session.config.option.collectonly:
        early.start_wanted({item.path.name for item in session.items})


def pytest_sessionfinish(session: pytest.Session) -> None:
    early.remove_all()


def run_cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "conformance", "run", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def suite_pytest(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``pytest --pyargs conformance.suite -q ARGS`` in a process of its own, from the project's
    folder (so ``-p tests.suite...`` plugins import)."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--pyargs",
            "conformance.suite",
            "-q",
            "-p",
            "no:cacheprovider",
            *args,
        ],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def collect(*args: str) -> tuple[int, list[str], str]:
    """``pytest --pyargs conformance.suite --collect-only``: exit code, node ids, output."""
    proc = suite_pytest("--collect-only", *args)
    ids = [line for line in proc.stdout.splitlines() if "::" in line]
    return proc.returncode, ids, proc.stdout + proc.stderr


def shared_run(name: str, timeout: float = 300):
    """(process, run) of the session's shared run ``name`` (``early.SHARED``), waited for."""
    run = early.shared(name)
    proc, _ = run.result(timeout)
    results = run.dir / "results"
    return proc, only_run(results) if results.exists() and any(results.iterdir()) else None


def only_run(results: Path):
    runs = [p for p in results.iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return load_run(runs[0])


def verdicts(run) -> dict[tuple[str, str], str]:
    return {(r["test_id"], r["requirement_id"]): r["verdict"] for r in run.records}


def unreached(record: dict) -> bool:
    """A state machine's requirement that the examples drawn (with the run's seed) never reached:
    honestly SKIP "not checked", never PASS; the focused tests of the requirement check it."""
    return (
        record["test_id"].endswith("/state-machine")
        and record["verdict"] == "SKIP"
        and (record["message"] or "").startswith("not checked:")
    )


def failing(run) -> set[tuple[str, str]]:
    return {k for k, v in verdicts(run).items() if v == "FAIL"}


@pytest.fixture
def cli(tmp_path: Path):
    def go(*args: str, timeout: float = 300):
        results = tmp_path / f"results-{len(list(tmp_path.glob('results-*')))}"
        proc = run_cli(
            "--no-report", "--results-dir", str(results), *args, cwd=tmp_path, timeout=timeout
        )
        run = only_run(results) if results.exists() and any(results.iterdir()) else None
        return proc, run

    return go


@pytest.fixture(scope="module")
def reference():
    """A reference cluster for the tests of one module (those that put a proxy in front of it,
    or drive suite tests in-process): each module gets its own, started and stopped by pid."""
    from conformance.targets.reference import ReferenceTarget

    target = ReferenceTarget()
    target.start()
    yield target
    target.stop()
