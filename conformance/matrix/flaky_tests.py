"""Flaky tests: a (test, requirement, API version) whose verdict differs between runs of the
same set-up of one implementation version.

A requirement's cell can hide them: when another test of the requirement fails in every run, the
cell is FAIL in every run while one of its tests goes FAIL -> PASS; a SKIP -> PASS is never
scored at all. So flakiness is also looked for per test, over every run's own verdict of each
key (the worst of its records there, as in run diffs). A key missing from a run (a state machine
that drew other versions) is not an outcome of that run.

Two passes, because nearly every key of every run is a group of its own: the first groups on two
numbers only (the set-up's index and a 64-bit hash of the key) and keeps the groups whose records
carry more than one verdict; the second reads, for those few groups, the keys themselves with
their messages and decides exactly. A hash shared by two keys can only add a candidate, which
the second pass then drops: no flaky key is missed.
"""

from __future__ import annotations

from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.matrix.requirement_matrix import _rank
from conformance.matrix.run_diff import KEY, run_keys
from conformance.matrix.session import rows

GROUP = ("implementation", "version", "setup", *KEY)
SETUP = ("implementation", "version", "setup")


def key_hash() -> Column:
    """The first pass's stand-in for a key (a test swaps in a constant to show collisions are
    harmless)."""
    return F.xxhash64(*KEY)


def _candidates(records: DataFrame, run_info: DataFrame) -> DataFrame:
    """(run_id, key hash) of every run in a group whose records hold more than one verdict."""
    spark = records.sparkSession
    index: dict[tuple[str, str, str], int] = {}
    pairs = [(r["run_id"], index.setdefault(tuple(r[c] for c in SETUP), len(index)))
             for r in run_info.select("run_id", *SETUP).collect()]  # fmt: skip
    runs = spark.createDataFrame(pairs, "run_id string, _s int")
    rank = _rank(F.col("verdict"))
    return (
        records.select("run_id", key_hash().alias("_h"), rank.alias("_r"))
        .join(F.broadcast(runs), "run_id")
        .groupBy("_s", "_h")
        .agg(F.min("_r").alias("_lo"), F.max("_r").alias("_hi"))
        .where(F.col("_lo") != F.col("_hi"))
        .select("_s", "_h")
        .join(F.broadcast(runs), "_s")
        .select("run_id", "_h")
    )


def flaky_tests(records: DataFrame, run_info: DataFrame) -> list[dict[str, Any]]:
    """Every key with more than one verdict across the runs of one set-up, with its outcomes in
    run order and the first message of a run that did not pass."""
    chosen = (
        records.withColumn("_h", key_hash())
        .join(F.broadcast(_candidates(records, run_info)), ["run_id", "_h"])
        .drop("_h")
    )
    keyed = run_keys(chosen).join(F.broadcast(run_info), "run_id")
    outcome = F.struct("started_at", "run_id", "verdict", "message")
    found = (
        keyed.groupBy(*GROUP)
        .agg(
            F.first("feature", ignorenulls=True).alias("feature"),
            F.count_distinct("verdict").alias("_verdicts"),
            F.sort_array(F.collect_list(outcome)).alias("outcomes"),
        )
        .where(F.col("_verdicts") > 1)
    )
    out = []
    for r in rows(found):
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
