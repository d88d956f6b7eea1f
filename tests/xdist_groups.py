"""The project's tests in parallel (pytest-xdist, ``./dev.sh test``: ``-n N --dist loadfile``).

Work is handed out by test module, as xdist's ``loadfile`` does, with two refinements:

* **Groups.** Tests that share something costly run in one worker, so that it starts once: a
  session fixture that starts a cluster, a JVM or an image (``COSTLY``; tests using any of a
  connected set of them form one group, computed identically by every worker from the whole
  collection), and modules that judge one suite run of ``tests/support/early.py`` (its
  ``JUDGES``) or carry ``@pytest.mark.xdist_group(NAME)``. Every worker collects the same
  tests and writes the same map of modules to units into a file the controller names
  (``workerinput["kc_groups"]``); the controller's scheduler reads it once the collections are
  in. Node ids are not changed.
* **Long waits first.** The units that wait longest (whole suite runs against a target, Spark,
  clusters killed and restarted) are handed out first (``FIRST``), so that no worker starts one
  near the end; the rest follow largest first.
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

#: session fixtures that start something costly: each worker using one would start its own
COSTLY = frozenset(
    {
        "spark",  # a Spark JVM (tests/matrix)
        "shared_cluster",  # reference clusters, one per metadata store (tests/reference)
        "zookeeper",  # a ZooKeeper server (tests/reference)
        "tansu",  # tests/client: tansu and a reference cluster, and env, which takes either
        "reference",
        "env",
        "engine",  # the docker engine: its tests assert no container is left, share images
        "tansu_image",  # an image built, tagged and removed by tag (tests/targets)
        "java_oracle",  # the codec oracle JVMs (tests/oracle)
        "java_oracle_latest",
    }
)

#: substrings of work units handed out first, longest first (as measured under xdist in the
#: clean-clone CI of 2026-11-28 at 4a6f289, load 7): the tansu run's judges, the reference runs',
#: Apache Kafka's, then every unit of a few tests that each wait tens of seconds (clusters
#: killed and restarted, suite runs behind proxies, images built and run). Ranked by count of
#: tests alone these came last and made CI's tail: a worker started a 40 s unit when the others
#: had nothing left (issue 36)
FIRST = (
    "tansu-runs",
    "reference-runs",
    "test_against_kafka",
    "test_durability_faults",
    "engine",
    "test_concurrency",
    "test_determinism",
    "test_any_seed",
    "test_broken_targets",
    "consumer_groups_broken",
    "groups_broken",
    "test_setup_defects",
    "test_diff_kafka",
    "test_wheel",
    "test_protocol_reach",
    "test_crediting",
    "spark",
    "txn/test_clients",
    "test_txn_faults",
    "test_log_faults",
    "test_topics_provision",
    "test_unanswered",
    # tests/reference's modules of a few tests of 10-25 s each (one process, 22:33-22:38)
    "test_restart_recovery",
    "cluster/test_restarts",
    "cluster/test_durability",
    "txn/test_cluster",
    "test_interop_clients",
    "cluster/test_serve",
    "consumer_protocol_java",
    "share_consumer_java",
)


def _marked_groups(item: pytest.Item) -> set[str]:
    return {
        str(m.args[0] if m.args else m.kwargs.get("name", "default"))
        for m in item.iter_markers("xdist_group")
    }


def _costly(item: pytest.Item) -> set[str]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return set()
    return {
        name
        for name, defs in info.name2fixturedefs.items()
        if name in COSTLY and defs and defs[-1].scope == "session"
    }


def module_scopes(items: list[pytest.Item]) -> dict[str, str]:
    """Test module -> the unit it is handed out in: its own path, or the group of every module
    joined to it by a costly session fixture or an ``xdist_group`` mark (named after those)."""
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    from tests.support.early import JUDGES

    modules = set()
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        modules.add(module)
        runs = {f"mark:{JUDGES[item.path.name]}"} if item.path.name in JUDGES else set()
        for name in _costly(item) | runs | {f"mark:{g}" for g in _marked_groups(item)}:
            parent[find(name)] = find(module)
    named: dict[str, set[str]] = {}
    for x in list(parent):
        if x not in modules:
            named.setdefault(find(x), set()).add(x.removeprefix("mark:"))
    return {m: "+".join(sorted(named[find(m)])) if find(m) in named else m for m in modules}


def write_scopes(items: list[pytest.Item], path: str) -> None:
    """The worker's side: every worker collects the same tests, so writes the same map."""
    tmp = f"{path}.{os.getpid()}"
    Path(tmp).write_text(json.dumps(module_scopes(items)), encoding="utf-8")
    os.replace(tmp, path)


class _LongFirst(OrderedDict):
    """The work queue: the next unit is the first of ``FIRST`` left, else the largest."""

    def popitem(self, last: bool = True) -> tuple[str, Any]:
        if last or not self:
            return super().popitem(last)

        def rank(scope: str) -> tuple[int, int]:
            hit = next((i for i, s in enumerate(FIRST) if s in scope), len(FIRST))
            return hit, -len(self[scope])

        scope = min(self, key=rank)
        return scope, self.pop(scope)


def make_scheduler(config: pytest.Config, log: Any, path: str) -> Any:
    """The controller's side: modules handed out in the units the workers wrote to ``path``."""
    from xdist.scheduler import LoadScopeScheduling

    class ModulesAndGroups(LoadScopeScheduling):
        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self.workqueue = _LongFirst()
            self._scopes: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._scopes is None:  # all collections are in: every worker wrote the map
                try:
                    self._scopes = json.loads(Path(path).read_text(encoding="utf-8") or "{}")
                except (OSError, ValueError):
                    self._scopes = {}
            module = nodeid.split("::", 1)[0]
            return self._scopes.get(module, module)

    return ModulesAndGroups(config, log)
