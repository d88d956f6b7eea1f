"""Flaky tests: a (test, requirement, API version) whose verdict differs between runs of the
same set-up of one implementation version.

A requirement's cell can hide them: when another test of the requirement fails in every run, the
cell is FAIL in every run while one of its tests goes FAIL -> PASS; a SKIP -> PASS is never
scored at all. So flakiness is also looked for per test, over every run's own verdict of each
key (the worst of its records there, as in run diffs). A key missing from a run (a state machine
that drew other versions), or NOT_EVALUATED there (the target had gone down before it), is not
an outcome of that run.

Two passes, because nearly every key of every run is a group of its own: the first groups on
one number only (a 64-bit hash of the set-up and the key) and keeps the hashes whose records
carry more than one verdict (a bit per verdict, or-ed); the second reads, for those few hashes,
the keys themselves with their messages and decides exactly. A hash shared by two keys can only
add a candidate, which the second pass then drops: no flaky key is missed.
"""

from __future__ import annotations

from itertools import chain
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from conformance.matrix.model import PRECEDENCE
from conformance.matrix.run_diff import KEY, run_keys
from conformance.matrix.session import rows

GROUP = ("implementation", "version", "setup", *KEY)
SETUP = ("implementation", "version", "setup")


def key_hash() -> Column:
    """The first pass's stand-in for a set-up's key (a test swaps in a constant to show
    collisions are harmless)."""
    return F.xxhash64("_s", *KEY)


def _keyed(records: DataFrame, run_info: DataFrame) -> DataFrame:
    """The records with their set-up's index (``_s``) and key hash (``_h``)."""
    spark = records.sparkSession
    index: dict[tuple[str, str, str], int] = {}
    pairs = [(r["run_id"], index.setdefault(tuple(r[c] for c in SETUP), len(index)))
             for r in run_info.select("run_id", *SETUP).collect()]  # fmt: skip
    runs = spark.createDataFrame(pairs, "run_id string, _s int")
    judged = records.where(F.col("verdict") != "NOT_EVALUATED")
    return judged.join(F.broadcast(runs), "run_id").withColumn("_h", key_hash())


def _candidates(keyed: DataFrame) -> DataFrame:
    """The key hashes whose records hold more than one verdict. The buffer is one integer (a
    bit per verdict), so Spark aggregates in a hash map and shuffles little."""
    bit = F.create_map(
        *chain.from_iterable((F.lit(v), F.lit(1 << i)) for i, v in enumerate(PRECEDENCE))
    )[F.col("verdict")]
    return (
        keyed.groupBy("_h").agg(F.bit_or(bit).alias("_m")).where(F.bit_count("_m") > 1).select("_h")
    )


def flaky_tests(records: DataFrame, run_info: DataFrame) -> list[dict[str, Any]]:
    """Every key with more than one verdict across the runs of one set-up, with its outcomes in
    run order and the first message of a run that did not pass."""
    keyed = _keyed(records, run_info)
    chosen = keyed.join(F.broadcast(_candidates(keyed)), "_h", "left_semi").drop("_s", "_h")
    per_run = run_keys(chosen).join(F.broadcast(run_info), "run_id")
    outcome = F.struct("started_at", "run_id", "verdict", "message")
    found = (
        per_run.groupBy(*GROUP)
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
