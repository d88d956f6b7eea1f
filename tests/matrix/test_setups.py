"""Runs of one implementation version under different set-ups (target kinds, e.g. the reference
with the embedded store and with ZooKeeper and standby controllers): a requirement on which they
disagree every time is their worst verdict, not FLAKY; a test is flaky only within one set-up;
run diffs pair runs of the same set-up."""

from __future__ import annotations

import json
import shutil

from conformance.matrix.job import compute
from tests.matrix.spark_support import FIXTURE_RUNS

RUNS = ("20250317T090000Z-reference-0.2.0-1", "20250317T110000Z-reference-0.2.0-2")
ZOOKEEPER = "reference:zookeeper?controllers=3"


def test_set_ups_that_disagree_are_not_flaky(spark, tmp_path):
    runs = tmp_path / "runs"
    for name in RUNS:
        shutil.copytree(FIXTURE_RUNS / name, runs / name)
    path = runs / RUNS[1] / "manifest.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "target_kind": ZOOKEEPER}))

    model = compute(spark, [runs], tmp_path / "out")

    by = {c["requirement_id"]: c for c in model["cells"]}
    # PASS with the embedded store, FAIL with ZooKeeper (one run each): the worst, counted
    cell = by["BROKER-REGISTRATION.R5"]
    assert (cell["verdict"], cell["passes"], cell["scored"]) == ("FAIL", 1, 2)
    assert cell["failing_runs"] == [RUNS[1]] and cell["flaky_tests"] == 0
    assert model["flakiness"] == [] and model["flaky_tests"] == []
    assert model["diffs"] == []  # one run per set-up: nothing to pair
    assert [r["setup"] for r in model["runs"]] == ["reference", ZOOKEEPER]
