"""Flaky tests: a (test, requirement, API version) whose verdict differs between runs of the
same set-up of one implementation version.

A requirement's cell can hide them: when another test of the requirement fails in every run, the
cell is FAIL in every run while one of its tests goes FAIL -> PASS; a SKIP -> PASS is never
scored at all. So flakiness is also looked for per test, over every run's own verdict of each
key (the worst of its records there, as in run diffs). A key missing from a run (a state machine
that drew other versions) is not an outcome of that run.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from conformance.matrix.run_diff import KEY, run_keys

GROUP = ("implementation", "version", "setup", *KEY)


def flaky_tests(records: DataFrame, run_info: DataFrame) -> list[dict[str, Any]]:
    """Every key with more than one verdict across the runs of one set-up, with its outcomes in
    run order and the first message of a run that did not pass."""
    keyed = run_keys(records).join(F.broadcast(run_info), "run_id")
    outcome = F.struct("started_at", "run_id", "verdict", "message")
    rows = (
        keyed.groupBy(*GROUP)
        .agg(
            F.first("feature", ignorenulls=True).alias("feature"),
            F.count_distinct("verdict").alias("_verdicts"),
            F.sort_array(F.collect_list(outcome)).alias("outcomes"),
        )
        .where(F.col("_verdicts") > 1)
        .collect()
    )
    out = []
    for r in rows:
        outcomes = [{"run_id": o["run_id"], "verdict": o["verdict"]} for o in r["outcomes"]]
        message = next((o["message"] for o in r["outcomes"] if o["verdict"] != "PASS"), "")
        out.append(
            {
                **{k: r[k] for k in GROUP},
                "feature": r["feature"],
                "outcomes": outcomes,
                "message": message or "",
            }
        )
    return out
