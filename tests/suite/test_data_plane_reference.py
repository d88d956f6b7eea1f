"""The data-plane requirements (LOG, IDEMPOTENCE, TOPICS) against the reference cluster in both
metadata stores: every requirement of those files is checked by a test that ran, and PASSes;
a state machine's requirement its seeded draws did not reach is SKIP "not checked" (never PASS),
and a focused test PASSes it."""

from __future__ import annotations

import time

import pytest

from conformance.requirements import requirements
from tests.suite.conftest import unreached

FILES = ("log", "idempotence", "topics")
SELECT = " or ".join(f.upper() for f in FILES)


def data_plane_requirements() -> set[str]:
    return {r.id for r in requirements() if r.file in FILES}


@pytest.mark.parametrize("store", ["embedded", "zookeeper"])
def test_every_data_plane_requirement_passes(cli, store: str) -> None:
    target = "reference" if store == "embedded" else "reference:zookeeper"
    started = time.monotonic()
    proc, run = cli("--target", target, "--seed", "7", "--select", SELECT)
    print(f"data plane against the reference ({store}): {time.monotonic() - started:.1f} s wall")
    assert run is not None, proc.stderr[-2000:]
    assert {r["requirement_id"] for r in run.records} == data_plane_requirements()
    passed = {r["requirement_id"] for r in run.records if r["verdict"] == "PASS"}
    assert passed == data_plane_requirements()
    for r in run.records:
        assert r["verdict"] == "PASS" or unreached(r), (
            r["test_id"],
            r["requirement_id"],
            r["message"],
        )
    assert proc.returncode == 0, proc.stdout[-3000:]
    seeded = {r["test_id"] for r in run.records if r["seed"] == 7}
    assert "log/produce-fetch/round-trip" in seeded
