"""The matrix job: recorded runs in, the report model (and every rendering of it) out.

Stages, each timed: ``ingest`` (validate the runs, write the Parquet dataset), ``requirements``
(run verdicts, cells, failure details), ``history`` (flakiness per requirement and per test,
regressions, per-feature pass rates), ``apis`` (the API support matrix), ``diff`` (two runs
compared), then ``render`` (the report files, outside Spark). The model is plain JSON-able data;
the renderers in ``conformance.report`` read nothing else. What does not need Spark (the
model's assembly from the aggregates, the timings, the verdict rules) is
:mod:`conformance.matrix.model`, which the one-run path uses without importing pyspark.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from conformance.matrix import api_support, flaky_tests, requirement_matrix, run_diff
from conformance.matrix.clients import FIELDS as CLIENT_FIELDS
from conformance.matrix.clients import client_rows
from conformance.matrix.ingest import ingest
from conformance.matrix.model import CELL_KEY, Ingested, Timings, assemble, ranked_targets, setup
from conformance.matrix.publish import read_skipped
from conformance.matrix.session import rows
from conformance.results.schema import RunError, find_runs, started

PARQUET_DIR = "results.parquet"


def _default_diffs(manifests: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Per implementation and set-up, its latest run against the run before it."""
    by_impl: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for m in manifests:
        by_impl[(m["target_name"], setup(m))].append(m)
    pairs = []
    for impl in sorted(by_impl):
        runs = sorted(by_impl[impl], key=lambda m: (started(m), m["run_id"]))
        if len(runs) >= 2:
            pairs.append((runs[-2]["run_id"], runs[-1]["run_id"]))
    return pairs


def _resolve_run(ref: str, manifests: list[dict[str, Any]], dirs: list[Path]) -> str:
    for m, d in zip(manifests, dirs, strict=True):
        if ref == m["run_id"] or Path(ref).resolve() == d:
            return m["run_id"]
    raise RunError(f"--diff {ref}: not the run id or directory of any run given")


def compute(
    spark: SparkSession,
    run_paths: Sequence[Path | str],
    out_dir: Path,
    *,
    diff: tuple[str, str] | None = None,
    kips_dir: Path | None = None,
    timings: Timings | None = None,
) -> dict[str, Any]:
    """Read the runs under ``run_paths``, write ``out_dir/results.parquet``, return the model."""
    timings = timings or Timings()
    out_dir.mkdir(parents=True, exist_ok=True)
    with timings.stage("ingest"):
        run_dirs = find_runs(run_paths)
        got: Ingested = ingest(spark, run_dirs, out_dir / PARQUET_DIR)
    manifests = got.manifests
    targets = ranked_targets(manifests)
    records = spark.read.parquet(str(got.parquet))
    # a client's records (KIP-42's client requirements) are judged apart: matrix.clients
    client_records = records.where(F.col("subject").isNotNull()).select(*CLIENT_FIELDS)
    clients = client_rows(r.asDict() for r in client_records.collect())
    records = records.where(F.col("subject").isNull())

    with timings.stage("requirements"):
        run_info = spark.createDataFrame(
            [
                (m["run_id"], m["target_name"], m["target_version"], setup(m), m["started_at"])
                for m in manifests
            ],
            "run_id string, implementation string, version string, setup string, _start string",
        ).select(
            "run_id",
            "implementation",
            "version",
            "setup",
            F.to_timestamp("_start").alias("started_at"),
        )
        counts_df = requirement_matrix.verdict_counts(records, run_info).cache()
        runs = requirement_matrix.run_verdicts(counts_df).cache()
        cells_df = requirement_matrix.cells(runs).cache()
        cell_rows = rows(cells_df)
        detail_rows = {
            tuple(r[k] for k in CELL_KEY): r for r in rows(requirement_matrix.details(counts_df))
        }
        counts = {
            r["run_id"]: r["n"]
            for r in runs.groupBy("run_id").agg(F.sum("records").alias("n")).collect()
        }

    with timings.stage("history"):
        ranks = spark.createDataFrame(
            [(i, v, r) for i, v, r in targets], "implementation string, version string, rank int"
        )
        regression_rows = rows(requirement_matrix.regressions(cells_df, ranks))
        summary_rows = rows(requirement_matrix.feature_summary(cells_df))
        flaky = flaky_tests.flaky_tests(records, run_info)

    with timings.stage("apis"):
        apis = api_support.api_matrix(
            manifests,
            [(i, v) for i, v, _ in targets],
            api_support.tested(rows(requirement_matrix.api_counts(records))),
        )

    with timings.stage("diff"):
        pairs = (
            [(_resolve_run(diff[0], manifests, got.run_dirs),
              _resolve_run(diff[1], manifests, got.run_dirs))]
            if diff else _default_diffs(manifests)
        )  # fmt: skip
        diffs = []
        if pairs:
            diffs = run_diff.diff_pairs(records, pairs)
    for cached in (counts_df, runs, cells_df):
        cached.unpersist()
    model = assemble(
        got,
        targets,
        cells=cell_rows,
        details={k: {"details": d["details"], "details_total": d["details_total"]}
                 for k, d in detail_rows.items()},
        counts=counts,
        regressions=regression_rows,
        feature_rows=summary_rows,
        flaky=flaky,
        apis=apis,
        diffs=diffs,
        kips_dir=kips_dir,
        timings=timings,
    )  # fmt: skip
    model["clients"] = clients
    return model


@dataclass
class MatrixOutput:
    model: dict[str, Any]
    files: dict[str, Path]


#: the JVM's own output when the job starts Spark, in the output folder
SPARK_LOG = "spark.log"


def run_matrix(
    run_paths: Sequence[Path | str],
    out_dir: Path | str,
    *,
    spark_master: str | None = None,
    spark: SparkSession | None = None,
    diff: tuple[str, str] | None = None,
    kips_dir: Path | None = None,
    title: str | None = None,
    timings: Timings | None = None,
) -> MatrixOutput:
    """The whole job: compute the model and render every output into ``out_dir``.

    Uses ``spark`` when given, else the active session, else starts one on ``spark_master``
    (its JVM's output in ``out_dir/spark.log``) and stops it at the end (only a session it
    started).
    """
    from conformance.matrix.session import spark_session
    from conformance.report import render_all

    out = Path(out_dir)
    timings = timings or Timings()
    own = spark is None and SparkSession.getActiveSession() is None
    if spark is not None:
        session = spark
    elif own:
        session = spark_session(spark_master, log_file=out / SPARK_LOG)
    else:
        session = spark_session(spark_master)
    try:
        model = compute(session, run_paths, out, diff=diff, kips_dir=kips_dir, timings=timings)
    finally:
        if own:
            session.stop()
    model["skipped"] = read_skipped(p for p in run_paths if Path(p).is_dir())
    with timings.stage("render"):
        files = render_all(model, out, title=title)
    model["timings"] = timings.stages
    return MatrixOutput(model, files)
