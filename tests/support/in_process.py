"""Suite test functions run in-process, as the plugin runs them, against a cluster behind fault
proxies (``faults_log.ProxiedCluster``): which test functions name each requirement, and the
failure one of them raised. The fault tests of several features (LOG, TXN) use them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from types import ModuleType

import pytest
from hypothesis import core

from conformance.protocol import Codec
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from tests.support.faults_log import ProxiedCluster

CODEC = Codec.from_specs()
#: the seed of every in-process run (and of the CLI runs that check the same verdicts)
SEED = 20261123


def by_requirement(
    modules: Iterable[ModuleType], models: Iterable[Callable] = ()
) -> dict[str, list[Callable]]:
    """requirement id -> the suite test functions of ``modules`` that name it; the state
    machines (``models``, slower) only for requirements no focused test names."""
    out: dict[str, list[Callable]] = {}
    for module in modules:
        for _, fn in inspect.getmembers(module, inspect.isfunction):
            for mark in getattr(fn, "pytestmark", []):
                if mark.name == "conformance":
                    for req in mark.kwargs["requirements"]:
                        out.setdefault(req, []).append(fn)
    models = tuple(models)
    return {req: [f for f in fns if f not in models] or fns for req, fns in out.items()}


def run(cluster: ProxiedCluster, fn: Callable) -> verify.Failed | None:
    """One suite test through the proxies: the failure it raised, or None."""
    harness = Harness(cluster.target(), CODEC, examples=3, seed=SEED)
    try:
        harness.open()
        fn(harness)
    except verify.Failed as e:
        return e
    finally:
        harness.close()
    return None


@pytest.fixture(autouse=True)
def fixed_seed(monkeypatch) -> None:
    """hypothesis draws from SEED; autouse in a test module that binds it
    (``fixed_seed = in_process.fixed_seed``)."""
    monkeypatch.setattr(core, "global_force_seed", SEED, raising=False)
