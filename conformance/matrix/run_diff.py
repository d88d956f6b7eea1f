"""A diff of two runs: which (test, requirement, API version) changed verdict between them."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from conformance.matrix.requirement_matrix import PRECEDENCE, _by_rank, _rank

KEY = ("test_id", "requirement_id", "api_version")


def run_keys(records: DataFrame, run_ids: list[str]) -> DataFrame:
    """Each named run's verdict per (test_id, requirement_id, api_version): one pass over the
    records for every diff to be taken."""
    return (
        records.where(F.col("run_id").isin(run_ids))
        .groupBy("run_id", *KEY)
        .agg(
            F.min(_rank(F.col("verdict"))).alias("_r"),
            F.first("feature").alias("feature"),
            F.max("message").alias("message"),
        )
        .withColumn("verdict", _by_rank(F.col("_r")))
        .drop("_r")
    )


def _side(keyed: DataFrame, run_id: str, suffix: str) -> DataFrame:
    return keyed.where(F.col("run_id") == run_id).select(
        *[F.col(c).alias(f"{c}_{suffix}") for c in (*KEY, "feature", "verdict", "message")]
    )


def diff_runs(
    records: DataFrame, run_a: str, run_b: str, keyed: DataFrame | None = None
) -> dict[str, Any]:
    """What changed from run ``run_a`` to run ``run_b``. Keys are null-safe matched on
    (test_id, requirement_id, api_version); a key present on one side only is listed too.
    ``keyed``, when given, is :func:`run_keys` over (at least) both runs."""
    if keyed is None:
        keyed = run_keys(records, [run_a, run_b])
    a, b = _side(keyed, run_a, "a"), _side(keyed, run_b, "b")
    on = [F.col(f"{k}_a").eqNullSafe(F.col(f"{k}_b")) for k in KEY]
    both = a.join(b, on, "full_outer").select(
        *[F.coalesce(f"{k}_a", f"{k}_b").alias(k) for k in KEY],
        F.coalesce("feature_a", "feature_b").alias("feature"),
        "verdict_a",
        "verdict_b",
        "message_a",
        "message_b",
    )
    rows = both.collect()
    changes = []
    same = 0
    for r in rows:
        if r["verdict_a"] == r["verdict_b"]:
            same += 1
            continue
        changes.append(
            {
                "test_id": r["test_id"],
                "requirement_id": r["requirement_id"],
                "api_version": r["api_version"],
                "feature": r["feature"],
                "verdict_a": r["verdict_a"],
                "verdict_b": r["verdict_b"],
                "message": r["message_b"] or r["message_a"] or "",
            }
        )
    order = {v: i for i, v in enumerate(PRECEDENCE)}
    changes.sort(
        key=lambda c: (order.get(c["verdict_b"] or "", 99), c["test_id"], c["requirement_id"])
    )
    return {
        "run_a": run_a,
        "run_b": run_b,
        "same": same,
        "changed": sum(1 for c in changes if c["verdict_a"] and c["verdict_b"]),
        "only_a": sum(1 for c in changes if not c["verdict_b"]),
        "only_b": sum(1 for c in changes if not c["verdict_a"]),
        "changes": changes,
    }
