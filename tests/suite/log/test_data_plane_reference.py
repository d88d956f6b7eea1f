"""The data-plane requirements (LOG, IDEMPOTENCE, TOPICS) against the reference cluster in both
metadata stores: every requirement of those files is checked by a test that ran, and PASSes;
a state machine's requirement its seeded draws did not reach is SKIP "not checked" (never PASS),
and a focused test PASSes it."""

from __future__ import annotations

import pytest

from conformance.requirements import requirements
from tests.support.runs import shared_run, unreached

FILES = ("log", "idempotence", "topics")


def data_plane_requirements() -> set[str]:
    return {r.id for r in requirements() if r.file in FILES}


@pytest.mark.parametrize("store", ["embedded", "zookeeper"])
def test_every_data_plane_requirement_passes(store: str) -> None:
    """Judged on the session's shared runs (``early.SHARED``): the whole suite against the
    reference, and the ZooKeeper store's run."""
    proc, run = shared_run("reference" if store == "embedded" else "reference:zookeeper")
    assert run is not None, proc.stderr[-2000:]
    ours = [r for r in run.records if r["requirement_id"] in data_plane_requirements()]
    assert {r["requirement_id"] for r in ours} == data_plane_requirements()
    passed = {r["requirement_id"] for r in ours if r["verdict"] == "PASS"}
    assert passed == data_plane_requirements()
    for r in ours:
        assert r["verdict"] == "PASS" or unreached(r), (
            r["test_id"],
            r["requirement_id"],
            r["message"],
        )
    assert proc.returncode == 0, proc.stdout[-3000:]
    seeded = {r["test_id"] for r in ours if r["seed"] == run.manifest["hypothesis_seed"]}
    assert "log/produce-fetch/round-trip" in seeded
