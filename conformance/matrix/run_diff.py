"""A diff of two runs: which (test, requirement, API version) changed verdict between them."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from conformance.matrix.model import PRECEDENCE
from conformance.matrix.requirement_matrix import _by_rank, _rank
from conformance.matrix.session import rows

KEY = ("test_id", "requirement_id", "api_version")
SIDES = ("a", "b")


def run_keys(records: DataFrame, run_ids: list[str] | None = None) -> DataFrame:
    """Each (named) run's verdict per (test_id, requirement_id, api_version): the worst of its
    records there."""
    chosen = records if run_ids is None else records.where(F.col("run_id").isin(run_ids))
    return (
        chosen.groupBy("run_id", *KEY)
        .agg(
            F.min(_rank(F.col("verdict"))).alias("_r"),
            F.first("feature").alias("feature"),
            F.max("message").alias("message"),
        )
        .withColumn("verdict", _by_rank(F.col("_r")))
        .drop("_r")
    )


def diff_pairs(records: DataFrame, pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """What changed from ``run_a`` to ``run_b`` for each pair, in one pass over the records.

    Keys are matched null-safe on (test_id, requirement_id, api_version) (a null api_version
    matches a null one); a key present on one side only is a change too. Only the changes and
    a count of the unchanged keys per pair come back to the driver.
    """
    if not pairs:
        return []
    spark = records.sparkSession
    keyed = run_keys(records, sorted({r for pair in pairs for r in pair}))
    table = spark.createDataFrame(
        [(i, a, b) for i, (a, b) in enumerate(pairs)], "pair int, run_a string, run_b string"
    )
    side_a = F.col("run_id") == F.col("run_a")
    tagged = keyed.join(F.broadcast(table), side_a | (F.col("run_id") == F.col("run_b")))
    both = (
        tagged.groupBy("pair", *KEY)
        .agg(
            F.first("feature", ignorenulls=True).alias("feature"),
            *[
                F.max(F.when(side_a if s == "a" else ~side_a, F.col(c))).alias(f"{c}_{s}")
                for c in ("verdict", "message")
                for s in SIDES
            ],
        )
        .withColumn("_same", F.col("verdict_a").eqNullSafe(F.col("verdict_b")))
        .cache()
    )
    changed = rows(both.where(~F.col("_same")))
    unchanged = {
        r["pair"]: r["n"]
        for r in both.groupBy("pair").agg(F.count_if("_same").alias("n")).collect()
    }
    both.unpersist()
    order = {v: i for i, v in enumerate(PRECEDENCE)}
    out = []
    for i, (run_a, run_b) in enumerate(pairs):
        changes = [
            {
                **{k: r[k] for k in KEY},
                "feature": r["feature"],
                "verdict_a": r["verdict_a"],
                "verdict_b": r["verdict_b"],
                "message": r["message_b"] or r["message_a"] or "",
            }
            for r in changed
            if r["pair"] == i
        ]
        changes.sort(
            key=lambda c: (order.get(c["verdict_b"] or "", 99), c["test_id"], c["requirement_id"])
        )
        out.append(
            {
                "run_a": run_a,
                "run_b": run_b,
                "same": unchanged.get(i, 0),
                "changed": sum(1 for c in changes if c["verdict_a"] and c["verdict_b"]),
                "only_a": sum(1 for c in changes if not c["verdict_b"]),
                "only_b": sum(1 for c in changes if not c["verdict_a"]),
                "changes": changes,
            }
        )
    return out


def diff_runs(records: DataFrame, run_a: str, run_b: str) -> dict[str, Any]:
    """What changed from run ``run_a`` to run ``run_b`` (see :func:`diff_pairs`)."""
    return diff_pairs(records, [(run_a, run_b)])[0]
