"""Run the suite and read what it recorded: ``kafka-conformance run`` and ``pytest --pyargs
conformance.suite`` in processes of their own, the session's shared runs (``early``), and the
verdicts of a recorded run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conformance.results.schema import load_run
from tests.support import early


def run_cli(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "conformance", "run", *early.RUN_JOBS, *args],
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
