"""The broker-registration, KIP-536 and KIP-590 feature tests against the reference cluster, in
both metadata stores (ZooKeeper with two standbys: ``reference:zookeeper?controllers=3``):
every requirement of the three files is checked and PASSes there, except a state machine's
requirement its drawn examples never reached (SKIP "not checked", PASS in a focused test); the
embedded store (one controller) reports those that need ZooKeeper as SKIP naming ``--zookeeper``,
and KIP-590.R5 (NOT_CONTROLLER from a standby controller) as SKIP naming the missing standby."""

from __future__ import annotations

import pytest

from conformance.requirements import requirements
from tests.support.runs import shared_run, unreached

FILES = ("broker-registration", "kip-536", "kip-590")
NEEDS_ZOOKEEPER = {"BROKER-REGISTRATION.R8", "KIP-536.R5", "KIP-590.R4"}
NEEDS_STANDBY = {"KIP-590.R5"}


def feature_requirements() -> set[str]:
    return {r.id for r in requirements() if r.file in FILES}


@pytest.mark.parametrize("store", ["embedded", "zookeeper"])
def test_every_feature_requirement_passes(store: str) -> None:
    """Judged on the session's shared runs (``early.SHARED``): the whole suite against the
    reference, and the ZooKeeper store's run with two standbys."""
    proc, run = shared_run("reference" if store == "embedded" else "reference:zookeeper")
    assert run is not None, proc.stderr[-2000:]
    ours = [r for r in run.records if r["requirement_id"] in feature_requirements()]
    assert {r["requirement_id"] for r in ours} == feature_requirements()
    for r in ours:
        where = (r["test_id"], r["requirement_id"], r["message"])
        if store == "embedded" and r["requirement_id"] in NEEDS_ZOOKEEPER:
            assert r["verdict"] == "SKIP" and "--zookeeper" in r["message"], where
        elif store == "embedded" and r["requirement_id"] in NEEDS_STANDBY:
            assert r["verdict"] == "SKIP" and "no standby controller" in r["message"], where
        elif not unreached(r):
            assert r["verdict"] == "PASS", where
    passed = {r["requirement_id"] for r in ours if r["verdict"] == "PASS"}
    assert {r["requirement_id"] for r in ours if unreached(r)} <= passed
    assert proc.returncode == 0, proc.stdout[-3000:]
    # the lifecycle state machine and the routing one drew examples with the run's seed
    seed = run.manifest["hypothesis_seed"]
    seeded = {r["test_id"] for r in ours if r["seed"] == seed}
    assert {
        "broker-registration/lifecycle/state-machine",
        "kip-590/routing/state-machine",
    } <= seeded
