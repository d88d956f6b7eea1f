"""The SHARE-GROUPS requirements against the reference cluster, in both metadata stores: every
one is checked and PASSes."""

from __future__ import annotations

import pytest

from conformance.requirements import requirements
from tests.support.runs import shared_run


def feature_requirements() -> set[str]:
    return {r.id for r in requirements() if r.file == "share-groups"}


@pytest.mark.parametrize("store", ["embedded", "zookeeper"])
def test_every_requirement_passes(store: str) -> None:
    """Judged on the session's shared runs (``early.SHARED``): the whole suite against the
    reference, and the ZooKeeper store's run."""
    proc, run = shared_run("reference" if store == "embedded" else "reference:zookeeper")
    assert run is not None, proc.stderr[-2000:]
    ours = [r for r in run.records if r["requirement_id"] in feature_requirements()]
    assert {r["requirement_id"] for r in ours} == feature_requirements()
    bad = [(r["test_id"], r["requirement_id"], r["verdict"], r["message"]) for r in ours]
    assert [b for b in bad if b[2] != "PASS"] == []
