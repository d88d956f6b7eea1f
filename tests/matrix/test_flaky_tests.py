"""``flaky_tests``'s two passes give exactly the definition: every (set-up, key) whose per-run
verdicts (the worst record of the key in each run) differ, whatever the first pass's hash does.
The definition is computed here in Python over the same records."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pyspark.sql import functions as F

from conformance.matrix import flaky_tests as module
from conformance.matrix.requirement_matrix import PRECEDENCE

RUNS = [(f"run-{i}", "impl", "1.0" if i < 4 else "2.0", "a" if i % 2 else "b") for i in range(6)]
COLUMNS = "run_id string, test_id string, requirement_id string, api_version int, verdict string"
record = st.tuples(
    st.sampled_from([r[0] for r in RUNS]),
    st.sampled_from(["t/1", "t/2", "t/3"]),
    st.sampled_from(["X.R1", "X.R2"]),
    st.sampled_from([None, 0, 1]),
    st.sampled_from(["PASS", "FAIL", "SKIP", "ERROR"]),
)


def expected(records: list[tuple]) -> set[tuple]:
    """Per (implementation, version, setup, key): the set of per-run worst verdicts."""
    setup = {r[0]: r[1:] for r in RUNS}
    worst: dict[tuple, str] = {}
    for run, test, req, version, verdict in records:
        k = (run, test, req, version)
        if k not in worst or PRECEDENCE.index(verdict) < PRECEDENCE.index(worst[k]):
            worst[k] = verdict
    seen: dict[tuple, set[str]] = {}
    for (run, *key), verdict in worst.items():
        seen.setdefault((*setup[run], *key), set()).add(verdict)
    return {k for k, v in seen.items() if len(v) > 1}


def found(spark, records: list[tuple]) -> set[tuple]:
    frame = (
        spark.createDataFrame(records, COLUMNS)
        .withColumn("feature", F.lit("protocol"))
        .withColumn("message", F.when(F.col("verdict") != "PASS", F.lit("why")))
    )
    start = datetime(2025, 1, 1, tzinfo=UTC)
    run_info = spark.createDataFrame(
        [(r, i, v, s, start + timedelta(hours=n)) for n, (r, i, v, s) in enumerate(RUNS)],
        "run_id string, implementation string, version string, setup string, started_at timestamp",
    )
    got = module.flaky_tests(frame, run_info)
    for f in got:  # outcomes in run order, a message from a run that did not pass
        assert [o["run_id"] for o in f["outcomes"]] == sorted(o["run_id"] for o in f["outcomes"])
        assert f["message"] == "why"
    return {tuple(f[k] for k in module.GROUP) for f in got}


@pytest.mark.parametrize("hashing", ["xxhash64", "every key collides"])
@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=st.lists(record, min_size=1, max_size=40))
def test_two_passes_find_exactly_the_flaky_keys(spark, monkeypatch, hashing, records):
    if hashing != "xxhash64":
        monkeypatch.setattr(module, "key_hash", lambda: F.lit(0).cast("long"))
    assert found(spark, records) == expected(records)


def test_a_key_mixed_within_one_run_only_is_not_flaky(spark):
    # run-0 and run-2 share a set-up: the key's worst is FAIL in both, though run-0 also passed
    records = [
        ("run-0", "t/1", "X.R1", 0, "PASS"),
        ("run-0", "t/1", "X.R1", 0, "FAIL"),
        ("run-2", "t/1", "X.R1", 0, "FAIL"),
    ]
    assert found(spark, records) == expected(records) == set()
    assert found(
        spark, [*records, ("run-2", "t/2", "X.R1", 0, "PASS"), ("run-0", "t/2", "X.R1", 0, "SKIP")]
    ) == {("impl", "1.0", "b", "t/2", "X.R1", 0)}
