"""The requirement matrix: implementation x version x requirement, one verdict per cell.

Two steps. Within one run, a requirement's records (several tests, several API versions) come to
one run verdict: the worst scored one (FAIL, ERROR, NONSTRICT, then PASS); when none is scored,
the not-applicable one (PROPOSAL_ABSENT, UNSUPPORTED, NOT_EXPOSED, SKIP, NOT_EVALUATED). Across
the runs of one implementation version, a cell is PASS when every scored run passed, FLAKY when
some runs of the same set-up (``setup``: the manifest's target kind, e.g.
``reference:zookeeper?controllers=3``) passed and some did not (with the failure rate; a lone
failure among at least two passes is flagged), and otherwise the worst verdict: set-ups that
disagree each time are not flaky. Runs that did not apply (UNSUPPORTED, NOT_EXPOSED,
PROPOSAL_ABSENT, SKIP) or were not evaluated (the target had gone down earlier in the run:
NOT_EVALUATED) are never counted as failures: a cell is one of those only when no run was scored.
"""

from __future__ import annotations

from itertools import chain

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from conformance.matrix.model import (
    CELL_KEY,
    DETAILS_PER_CELL,
    NOT_APPLICABLE,
    NOT_PASSING,
    PRECEDENCE,
)


def _rank(verdict: Column) -> Column:
    mapping = F.create_map(
        *chain.from_iterable((F.lit(v), F.lit(i)) for i, v in enumerate(PRECEDENCE))
    )
    return mapping[verdict]


def _by_rank(rank: Column) -> Column:
    return F.array(*[F.lit(v) for v in PRECEDENCE])[rank]


def verdict_counts(records: DataFrame, run_info: DataFrame) -> DataFrame:
    """Records counted per (run, requirement, verdict), with a sample record of each group that
    did not pass (the first by test id): what run verdicts, failure details and per-run totals
    come from.

    ``run_info`` maps run_id to implementation, version, setup and started_at (from the
    manifests), so the aggregations group on three narrow keys and read only the columns they
    need.
    """
    group = ("run_id", "requirement_id", "verdict")
    # Counting keeps fixed-width buffers only, so Spark aggregates in a hash map; a struct
    # buffer (the sample) would sort every record instead. Samples come from the records that
    # did not pass, a small share, in an aggregation of their own (benchmarks/README.md, Matrix).
    # feature and level are keys of the count (they follow the requirement, so they add no
    # groups) and are folded in afterwards: cheaper than aggregating strings per record.
    counted = (
        records.groupBy(*group, "feature", "level")
        .agg(F.count(F.lit(1)).alias("records"))
        .groupBy(*group)
        .agg(
            F.sum("records").alias("records"),
            F.first("feature").alias("feature"),
            F.max("level").alias("level"),
        )
    )
    samples = (
        records.where(F.col("verdict") != "PASS")
        .groupBy(*group)
        .agg(F.min(F.struct("test_id", "api_version", "message", "seed")).alias("sample"))
    )
    grouped = counted.join(samples, list(group), "left")
    return grouped.join(F.broadcast(run_info), "run_id")


def api_counts(records: DataFrame) -> DataFrame:
    """Records per (implementation, version, API, verdict), for the API matrix."""
    return (
        records.where(F.col("api_key").isNotNull())
        .groupBy("implementation", "version", "api_key", "verdict")
        .agg(F.count(F.lit(1)).alias("records"))
    )


def run_verdicts(counts: DataFrame) -> DataFrame:
    """One row per (run, requirement): the run's verdict on that requirement."""
    return (
        counts.groupBy(*CELL_KEY, "run_id", "setup", "started_at")
        .agg(
            F.min(_rank(F.col("verdict"))).alias("_rank"),
            F.max("level").alias("level"),
            F.sum("records").alias("records"),
        )
        .withColumn("verdict", _by_rank(F.col("_rank")))
        .drop("_rank")
    )


def cells(runs: DataFrame) -> DataFrame:
    """One row per cell, with counts, the cell verdict, rates and the not-passing run ids."""
    counts = [F.count_if(F.col("verdict") == v).alias(v.lower()) for v in PRECEDENCE]
    per_setup = runs.groupBy(*CELL_KEY, "setup").agg(
        (
            (F.count_if(F.col("verdict") == "PASS") > 0)
            & (F.count_if(F.col("verdict").isin(*NOT_PASSING)) > 0)
        ).alias("_mixed")
    )
    mixed = per_setup.groupBy(*CELL_KEY).agg(F.max(F.col("_mixed").cast("int")).alias("_mixed"))
    grouped = runs.groupBy(*CELL_KEY).agg(
        F.max("level").alias("level"),
        F.count(F.lit(1)).alias("runs"),
        *counts,
        F.sort_array(
            F.collect_list(F.when(F.col("verdict").isin(*NOT_PASSING), F.col("run_id")))
        ).alias("failing_runs"),
    )
    scored = F.col("pass") + F.col("fail") + F.col("error") + F.col("nonstrict")
    not_applicable = F.array_max(
        F.array(
            *[
                F.struct(F.col(v.lower()).alias("n"), F.lit(-i).alias("p"), F.lit(v).alias("v"))
                for i, v in enumerate(NOT_APPLICABLE)
            ]
        )
    )["v"]
    worst = (
        F.when(F.col("fail") > 0, "FAIL").when(F.col("error") > 0, "ERROR").otherwise("NONSTRICT")
    )
    verdict = (
        F.when(scored == 0, not_applicable)
        .when(F.col("pass") == scored, "PASS")
        .when(F.col("_mixed") == 1, "FLAKY")
        .otherwise(worst)
    )
    not_passed = scored - F.col("pass")
    return (
        grouped.join(mixed, list(CELL_KEY))
        .withColumn("scored", scored)
        .withColumn("verdict", verdict)
        .withColumn("failure_rate", F.when(scored > 0, not_passed / scored).otherwise(F.lit(None)))
        .withColumn(
            "lone_failure",
            (F.col("verdict") == "FLAKY") & (not_passed == 1) & (F.col("pass") >= 2),
        )
        .drop("_mixed")
    )


def details(counts: DataFrame) -> DataFrame:
    """Per cell, sample messages of its records that did not pass (worst first, newest run
    first; one per run and verdict), at most :data:`DETAILS_PER_CELL`, and how many such
    records there were in all."""
    # each cell's few dozen samples are sorted as one small array: a window over the cells
    # would sort all of them in one (benchmarks/README.md, Matrix)
    order = F.struct(
        _rank(F.col("verdict")).alias("rank"),
        (-F.unix_micros("started_at")).alias("newest"),
        F.col("run_id"),
        F.col("sample.test_id").alias("test_id"),
        F.col("sample.api_version").alias("api_version"),
        F.col("verdict"),
        F.col("sample.message").alias("message"),
        F.col("sample.seed").alias("seed"),
    )
    kept = F.slice(F.sort_array(F.collect_list(order)), 1, DETAILS_PER_CELL)
    entry = F.transform(
        kept,
        lambda e, i: F.struct(
            (i + 1).alias("_n"),
            *[
                e[k].alias(k)
                for k in ("run_id", "test_id", "api_version", "verdict", "message", "seed")
            ],
        ),
    )
    return (
        counts.where(F.col("verdict") != "PASS")
        .groupBy(*CELL_KEY)
        .agg(entry.alias("details"), F.sum("records").alias("details_total"))
    )


def regressions(cell_rows: DataFrame, ranks: DataFrame) -> DataFrame:
    """Cells that fail (FAIL, ERROR, NONSTRICT) at a version of an implementation whose previous
    scored version of the same requirement passed (PASS, or FLAKY: it passed in some runs).

    ``ranks`` gives each (implementation, version) its place in version order.
    """
    ordered = Window.partitionBy("implementation", "requirement_id").orderBy("rank")
    before = ordered.rowsBetween(Window.unboundedPreceding, -1)
    scored = ~F.col("verdict").isin(*NOT_APPLICABLE)
    return (
        cell_rows.join(ranks, ["implementation", "version"])
        .withColumn("from_verdict", F.last(F.when(scored, F.col("verdict")), True).over(before))
        .withColumn("from_version", F.last(F.when(scored, F.col("version")), True).over(before))
        .where(F.col("verdict").isin(*NOT_PASSING) & F.col("from_verdict").isin("PASS", "FLAKY"))
        .select(
            "implementation",
            "feature",
            "requirement_id",
            "level",
            "from_version",
            "from_verdict",
            F.col("version").alias("to_version"),
            F.col("verdict").alias("to_verdict"),
            "rank",
        )
    )


def feature_summary(cell_rows: DataFrame) -> DataFrame:
    """Per (implementation, version, feature): cells by verdict and the share of scored cells
    that pass (None where nothing was scored)."""
    scored = ~F.col("verdict").isin(*NOT_APPLICABLE)
    return cell_rows.groupBy("implementation", "version", "feature").agg(
        F.count(F.lit(1)).alias("requirements"),
        F.count_if(scored).alias("scored"),
        F.count_if(F.col("verdict") == "PASS").alias("passed"),
        F.count_if(scored & (F.col("level") == "MUST")).alias("must_scored"),
        F.count_if((F.col("verdict") == "PASS") & (F.col("level") == "MUST")).alias("must_passed"),
    )
