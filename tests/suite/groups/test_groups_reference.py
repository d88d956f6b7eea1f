"""The group, offset and configuration requirements against the reference cluster, in both
metadata stores: every one is checked and PASSes (the reference lets the suite restart a
broker, so OFFSETS.R7 is checked too)."""

from __future__ import annotations

import pytest

from conformance.requirements import requirements
from tests.support.runs import shared_run

FILES = ("groups", "offsets", "configs")
BAD = ("FAIL", "ERROR")


def feature_requirements() -> set[str]:
    return {r.id for r in requirements() if r.file in FILES}


@pytest.mark.parametrize("store", ["embedded", "zookeeper"])
def test_every_requirement_passes(store: str) -> None:
    """Judged on the session's shared runs (``early.SHARED``): the whole suite against the
    reference, and the ZooKeeper store's run."""
    proc, run = shared_run("reference" if store == "embedded" else "reference:zookeeper")
    assert run is not None, proc.stderr[-2000:]
    ours = [r for r in run.records if r["requirement_id"] in feature_requirements()]
    assert {r["requirement_id"] for r in ours} == feature_requirements()
    bad = [(r["test_id"], r["requirement_id"], r["message"]) for r in ours if r["verdict"] in BAD]
    assert bad == []
    # every requirement is credited by a check that ran; a state machine may leave one of its
    # requirements unchecked under a seed (SKIP "not checked"), never a focused test
    passed = {r["requirement_id"] for r in ours if r["verdict"] == "PASS"}
    assert passed == feature_requirements()
    others = [
        (r["test_id"], r["requirement_id"], r["message"])
        for r in ours
        if r["verdict"] != "PASS" and not r["test_id"].endswith("/state-machine")
    ]
    assert others == []
