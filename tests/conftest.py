"""Shared test set-up: hypothesis profiles and the location of the upstream spec corpus.

Profiles (choose with HYPOTHESIS_PROFILE=...):
  ci        deterministic (derandomized), few examples per test: the default, and what CI runs
  thorough  random seeds, many examples: for deeper local runs; failures print a replay seed
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=10,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=500,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

ROOT = Path(__file__).resolve().parents[1]
#: processes the tests start from elsewhere (``python -m conformance`` in a temporary folder,
#: the reference nodes it starts, ``serve``) import this tree's code, not the checkout the
#: environment's editable install names: tests run in a `git archive` tree or a second clone
#: judge that tree (they judged the editable install's checkout before, whatever its state)
_paths = os.environ.get("PYTHONPATH", "").split(os.pathsep)
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT), *(p for p in _paths if p and p != str(ROOT))]
)
#: Upstream Kafka message specs, one folder per release (reference data beside the project).
KAFKA_SPECS = ROOT.parent / "shared" / "kafka-specs"


def kafka_release_dirs() -> list[Path]:
    if not KAFKA_SPECS.is_dir():
        return []
    return sorted(p for p in KAFKA_SPECS.iterdir() if p.is_dir())


#: the marker of the heavy whole runs CI leaves out (``./dev.sh test`` deselects it with
#: ``-m "not publication"``); ``reports/publish.sh`` runs them (``pytest -m publication``)
PUBLICATION = "publication"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{PUBLICATION}: a heavy whole run whose risk a cheaper CI test covers; deselected by "
        "./dev.sh test (CI), run by reports/publish.sh or `pytest -m publication`",
    )


def _xdist_loadfile(config: pytest.Config) -> bool:
    """Whether this is a pytest-xdist run handing out whole modules (``./dev.sh test``)."""
    return getattr(config.option, "dist", "no") == "loadfile"


def _scopes_file(config: pytest.Config) -> str:
    """The controller's file for the workers' map of modules to units (one per session)."""
    path = getattr(config, "_kc_scopes_file", None)
    if path is None:
        fd, path = tempfile.mkstemp(prefix="kc-xdist-scopes-", suffix=".json")
        os.close(fd)
        config._kc_scopes_file = path  # type: ignore[attr-defined]
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """Tell the workers of such a run where to write their units (they see ``--dist no``)."""
    if _xdist_loadfile(node.config):
        node.workerinput["kc_groups"] = _scopes_file(node.config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = getattr(config, "workerinput", {}).get("kc_groups")
    if path:
        from tests.xdist_groups import write_scopes

        write_scopes(items, path)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """Modules, and the groups that share a costly fixture or run, longest waits first
    (``tests/xdist_groups.py``)."""
    if _xdist_loadfile(config):
        from tests.xdist_groups import make_scheduler

        return make_scheduler(config, log, _scopes_file(config))
    return None


def pytest_unconfigure(config: pytest.Config) -> None:
    path = getattr(config, "_kc_scopes_file", None)
    if path is not None:
        Path(path).unlink(missing_ok=True)


@pytest.fixture(scope="session")
def kafka_specs() -> Path:
    if not KAFKA_SPECS.is_dir():
        pytest.skip(f"upstream spec corpus not found at {KAFKA_SPECS}")
    return KAFKA_SPECS
