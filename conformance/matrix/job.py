"""The matrix job: recorded runs in, the report model (and every rendering of it) out.

Stages, each timed: ``ingest`` (validate the runs, write the Parquet dataset), ``requirements``
(run verdicts, cells, failure details), ``history`` (flakiness per requirement and per test,
regressions, per-feature pass rates), ``apis`` (the API support matrix), ``diff`` (two runs
compared), then ``render`` (the report files, outside Spark). The model is plain JSON-able data;
the renderers in ``conformance.report`` read nothing else.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from conformance.matrix import api_support, flaky_tests, requirement_matrix, run_diff
from conformance.matrix.ingest import Ingested, ingest
from conformance.matrix.session import rows
from conformance.matrix.versions import natural_key, order_versions
from conformance.requirements import requirement_texts
from conformance.results.schema import FEATURES, RunError, find_runs, started

PARQUET_DIR = "results.parquet"
MODEL_FORMAT = 1


@dataclass
class Timings:
    """Wall seconds per stage; CPU seconds too when given a ``cpu_clock`` (the benchmark's)."""

    stages: dict[str, float] = field(default_factory=dict)
    cpu_clock: Callable[[], float] | None = None
    cpu: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        cpu_start = self.cpu_clock() if self.cpu_clock else 0.0
        try:
            yield
        finally:
            self.stages[name] = round(time.perf_counter() - start, 3)
            if self.cpu_clock:
                self.cpu[name] = round(self.cpu_clock() - cpu_start, 3)


def _targets(manifests: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    pairs = sorted({(m["target_name"], m["target_version"]) for m in manifests})
    first: dict[tuple[str, str], str] = {}
    for m in manifests:
        key = (m["target_name"], m["target_version"])
        when = started(m).astimezone(UTC).isoformat()
        first[key] = min(first.get(key, when), when)
    ranks = order_versions(pairs, first)
    return sorted(((i, v, ranks[(i, v)]) for i, v in pairs), key=lambda t: (t[0], t[2]))


def setup(manifest: dict[str, Any]) -> str:
    """How the run's target was set up (its kind, e.g. ``reference:zookeeper?controllers=3``):
    runs are compared with runs of the same set-up only."""
    return manifest.get("target_kind") or manifest["target_name"]


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


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


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
    targets = _targets(manifests)
    records = spark.read.parquet(str(got.parquet))

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
            tuple(r[k] for k in requirement_matrix.CELL_KEY): r
            for r in rows(requirement_matrix.details(counts_df))
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
    return assemble(
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


def assemble(
    got: Ingested,
    targets: list[tuple[str, str, int]],
    *,
    cells: list[dict[str, Any]],
    details: dict[tuple[Any, ...], dict[str, Any]],
    counts: dict[str, int],
    regressions: list[dict[str, Any]],
    feature_rows: list[dict[str, Any]],
    flaky: list[dict[str, Any]],
    apis: dict[str, Any],
    diffs: list[dict[str, Any]],
    kips_dir: Path | None,
    timings: Timings,
) -> dict[str, Any]:
    """The report model from the aggregates, whichever engine computed them (Spark for any
    number of runs, :mod:`conformance.matrix.one_run` for one): one assembly, so both give the
    same ``matrix.json``. Rows are plain dicts shaped as the Spark stages' rows."""
    manifests = got.manifests
    requirements = requirement_texts(kips_dir)
    cells_out = []
    for r in cells:
        key = tuple(r[k] for k in requirement_matrix.CELL_KEY)
        d = details.get(key)
        cell = {k: _plain(v) for k, v in r.items()}
        cell["passes"] = cell.pop("pass")
        cell["details"] = [
            {k: v for k, v in _plain(e).items() if k != "_n"} for e in (d["details"] if d else [])
        ]
        cell["details_total"] = d["details_total"] if d else 0
        cells_out.append(cell)
    rank_of = {(i, v): n for i, v, n in targets}
    flaky.sort(
        key=lambda f: (
            f["implementation"],
            rank_of[(f["implementation"], f["version"])],
            _req_order(f["requirement_id"]),
            f["test_id"],
            -1 if f["api_version"] is None else f["api_version"],
            f["setup"],
        )
    )
    flaky_per_cell: dict[tuple[str, str, str], int] = defaultdict(int)
    for f in flaky:
        flaky_per_cell[(f["implementation"], f["version"], f["requirement_id"])] += 1
    for cell in cells_out:
        key3 = (cell["implementation"], cell["version"], cell["requirement_id"])
        cell["flaky_tests"] = flaky_per_cell.get(key3, 0)
    cells_out.sort(
        key=lambda c: (
            c["implementation"],
            rank_of[(c["implementation"], c["version"])],
            _req_order(c["requirement_id"]),
        )
    )
    seen_ids = {c["requirement_id"]: (c["feature"], c["level"]) for c in cells_out}
    req_out = {}
    for rid in sorted(seen_ids, key=_req_order):
        known = requirements.get(rid)
        req_out[rid] = {
            "feature": seen_ids[rid][0],
            "level": seen_ids[rid][1],
            "known": known is not None,
            **(known or {}),
        }
    features = [f for f in FEATURES if any(c["feature"] == f for c in cells_out)]
    summary = _summary(targets, feature_rows, cells_out)
    run_out = []
    for m, d in zip(manifests, got.run_dirs, strict=True):
        run_out.append(
            {
                "run_id": m["run_id"],
                "implementation": m["target_name"],
                "version": m["target_version"],
                "setup": setup(m),
                "started_at": m["started_at"],
                "ended_at": m["ended_at"],
                "records": counts.get(m["run_id"], 0),
                "bad_records": sum(1 for p in got.problems if Path(p.file).parent == d),
                "suite_version": m["suite_version"],
                "spec_release": m["spec_release"],
                "hypothesis_seed": m["hypothesis_seed"],
                "hypothesis_profile": m["hypothesis_profile"],
                "bootstrap": m["bootstrap"],
                "dir": str(d),
                # each time the target went down in the run: the report's first lines
                "outages": m.get("outages", []),
            }
        )
    run_out.sort(
        key=lambda r: (
            r["implementation"],
            rank_of[(r["implementation"], r["version"])],
            r["started_at"],
        )
    )
    return {
        "format": MODEL_FORMAT,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "records": {
            "lines": got.total_lines,
            "bad": got.bad_lines,
            "counted": got.total_lines - got.bad_lines,
        },
        "runs": run_out,
        "problems": [{"file": p.file, "line": p.line, "message": p.message} for p in got.problems],
        "targets": [
            {
                "implementation": i,
                "version": v,
                "rank": n,
                "runs": [
                    r["run_id"] for r in run_out if (r["implementation"], r["version"]) == (i, v)
                ],
            }
            for i, v, n in targets
        ],
        "features": features,
        "requirements": req_out,
        "cells": cells_out,
        "flakiness": [
            {
                k: c[k]
                for k in (
                    "implementation",
                    "version",
                    "feature",
                    "requirement_id",
                    "level",
                    "runs",
                    "scored",
                    "passes",
                    "failure_rate",
                    "lone_failure",
                    "failing_runs",
                )
            }
            for c in cells_out
            if c["verdict"] == "FLAKY"
        ],
        "flaky_tests": flaky,
        "regressions": sorted(
            ({k: v for k, v in r.items() if k != "rank"} for r in regressions),
            key=lambda r: (r["implementation"], _req_order(r["requirement_id"]), r["to_version"]),
        ),
        "api_support": apis,
        "diffs": diffs,
        "summary": summary,
        "timings": timings.stages,
    }


def _req_order(rid: str) -> tuple[Any, ...]:
    """KIP-42.R2 before KIP-78.R1 before KIP-78.R10: digit runs compare as numbers."""
    return natural_key(rid)


def low_coverage(judged: int, requirements: int) -> bool:
    """Fewer than half of the requirements judged: the share of them that pass says little
    about the feature (a broker with no controller listener SKIPs most of broker-registration),
    so the report gives no bare rate for it."""
    return 2 * judged < requirements


def _summary(targets, summary_rows, cells_out) -> list[dict[str, Any]]:
    """Per target: cells by verdict, MUST requirements met, and per feature its pass rate with
    its coverage (``judged`` of ``requirements``; a rate is over the judged ones only)."""
    by_target: dict[tuple[str, str], dict[str, Any]] = {}
    for i, v, _ in targets:
        verdicts: dict[str, int] = defaultdict(int)
        musts = 0
        for c in cells_out:
            if (c["implementation"], c["version"]) == (i, v):
                verdicts[c["verdict"]] += 1
                musts += c["level"] == "MUST"
        by_target[(i, v)] = {
            "implementation": i,
            "version": v,
            "verdicts": dict(sorted(verdicts.items())),
            "features": {},
            "must_passed": 0,
            "must_scored": 0,
            "must_requirements": musts,
        }
    for r in summary_rows:
        entry = by_target[(r["implementation"], r["version"])]
        entry["features"][r["feature"]] = {
            "requirements": r["requirements"],
            "scored": r["scored"],
            "passed": r["passed"],
            "pass_rate": (r["passed"] / r["scored"]) if r["scored"] else None,
            "judged": r["scored"],
            "coverage": r["scored"] / r["requirements"],
            "low_coverage": low_coverage(r["scored"], r["requirements"]),
        }
        entry["must_passed"] += r["must_passed"]
        entry["must_scored"] += r["must_scored"]
    for entry in by_target.values():
        entry["features"] = dict(
            sorted(entry["features"].items(), key=lambda kv: FEATURES.index(kv[0]))
        )
        entry["must_low_coverage"] = low_coverage(entry["must_scored"], entry["must_requirements"])
    return list(by_target.values())


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
    with timings.stage("render"):
        files = render_all(model, out, title=title)
    model["timings"] = timings.stages
    return MatrixOutput(model, files)


def render_run_report(
    run_dir: Path | str, out_dir: Path | str, *, spark_master: str | None = None, spark=None
) -> Path:
    """The report of one run (what ``run`` and the plugin's ``--report`` write): the matrix
    model of that one run directory and the same renderers; returns the HTML file's path.

    With no Spark session or master asked for, the model is computed in Python
    (:mod:`conformance.matrix.one_run`: one run has nothing to aggregate, and a JVM's start
    costs more than the suite); the Spark job computes it otherwise, or when the run holds a
    line only Spark's bulk check can judge. Both give the same ``matrix.json``.
    """
    from conformance.matrix.one_run import one_run_model
    from conformance.report import render_all

    out = Path(out_dir)
    if spark is None and spark_master is None:
        print(f"report: rendering {out} (one run: no Spark needed)", flush=True)
        timings = Timings()
        model = one_run_model(run_dir, timings=timings)
        if model is not None:
            with timings.stage("render"):
                files = render_all(model, out)
            model["timings"] = timings.stages
            return files["html"]
    result = run_matrix([run_dir], out, spark_master=spark_master, spark=spark)
    return result.files["html"]
