"""The hooks and fixtures of the suite's tests: the early runs started when collection ends and
removed when the session ends (``tests.support.early``), a ``cli`` runner and a per-module
reference cluster. The helpers they use are ``tests.support.runs``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import early
from tests.support.runs import only_run, run_cli


def pytest_collection_finish(session: pytest.Session) -> None:
    """Start the long, idle suite runs now, so that they overlap the other tests (``early``).
    Not in a pytest-xdist worker: every worker collects every test, and only the one that runs
    a module judging a run starts it (``early.take``), first thing (``tests/xdist_groups.py``
    hands those modules out first), while the other workers run the rest."""
    if not session.config.option.collectonly and not hasattr(session.config, "workerinput"):
        early.start_wanted({item.path.name for item in session.items})


def pytest_sessionfinish(session: pytest.Session) -> None:
    early.remove_all()


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
