"""One run's matrix without Spark: the same aggregates as the Spark stages, in plain Python.

A single run has nothing to aggregate across runs (no other run of its set-up, no earlier
version, no pair to diff), and a few thousand records; starting a JVM for them costs more than
the suite. So ``run``'s report computes that one run's cells, failure details, feature summary
and API counts here, with the rules of :mod:`conformance.matrix.requirement_matrix`, and hands
them to the one assembly both engines share (:func:`conformance.matrix.model.assemble`):
``matrix.json`` is the same as the Spark job's for the same run (``tests/matrix/test_one_run.py``
compares them). Nothing here imports pyspark unless the run needs the Spark job.

Lines are read with the suite's own line-by-line reader. A line that is not JSON is refused the
same way by both engines; a JSON line the strict reader refuses may pass Spark's bulk check
(see :mod:`conformance.matrix.ingest`), so such a run is left to Spark (:func:`one_run_model`
answers None).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from conformance.matrix.clients import client_rows, is_client
from conformance.matrix.model import (
    CELL_KEY,
    DETAILS_PER_CELL,
    NOT_APPLICABLE,
    NOT_PASSING,
    PRECEDENCE,
    Ingested,
    Timings,
    assemble,
    ranked_targets,
)
from conformance.results.schema import (
    MALFORMED,
    RESULTS_FILE,
    iter_results,
    read_manifest,
)

RANK = {v: i for i, v in enumerate(PRECEDENCE)}
#: A failure detail's fields, in the order of ``requirement_matrix.details``' struct.
DETAIL = ("_n", "run_id", "test_id", "api_version", "verdict", "message", "seed")


def _nulls_first(value: Any) -> tuple[int, Any]:
    """Spark's ascending order: null before any value."""
    return (0, 0) if value is None else (1, value)


def _sample(record: dict[str, Any]) -> tuple[Any, ...]:
    """A record's (test_id, api_version, message, seed) as Spark's columns hold them: the seed
    is text (its JSON number's digits when written as a number)."""
    seed = record["seed"]
    return (
        record["test_id"],
        record["api_version"],
        record["message"],
        None if seed is None else str(seed),
    )


def _sample_key(sample: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(_nulls_first(v) for v in sample)


def _cell(key: tuple[Any, ...], verdict: str, level: str, run_id: str) -> dict[str, Any]:
    """The cell of one run's verdict on one requirement (``cells`` over a single run row)."""
    count = {v.lower(): int(verdict == v) for v in PRECEDENCE}
    scored = sum(count[v.lower()] for v in ("PASS", *NOT_PASSING))
    if scored == 0:
        # the most frequent, ties to the earlier in NOT_APPLICABLE (cells' array_max)
        order = {v: (count[v.lower()], -i) for i, v in enumerate(NOT_APPLICABLE)}
        cell_verdict = max(NOT_APPLICABLE, key=order.__getitem__)
    elif count["pass"] == scored:
        cell_verdict = "PASS"
    else:  # one run: never mixed
        cell_verdict = verdict
    not_passed = scored - count["pass"]
    return {
        **dict(zip(CELL_KEY, key, strict=True)),
        "level": level,
        "runs": 1,
        **count,
        "failing_runs": [run_id] if verdict in NOT_PASSING else [],
        "scored": scored,
        "verdict": cell_verdict,
        "failure_rate": not_passed / scored if scored else None,
        "lone_failure": False,
    }


def one_run_model(
    run_dir: Path | str, *, kips_dir: Path | None = None, timings: Timings | None = None
) -> dict[str, Any] | None:
    """The report model of one run directory, or None when a line is JSON the strict reader
    refuses (Spark's bulk check decides those)."""
    timings = timings or Timings()
    folder = Path(run_dir).resolve()
    with timings.stage("ingest"):
        manifest = read_manifest(folder)
        run_id = manifest["run_id"]
        got = Ingested(None, [manifest], [folder])
        records = []
        for _, record, problem in iter_results(folder / RESULTS_FILE, run_id):
            got.total_lines += 1
            if problem is None:
                records.append(record)
            elif problem.message.startswith(MALFORMED):
                got.bad_lines += 1
                got.problems.append(problem)
            else:
                return None

    with timings.stage("requirements"):
        # a client's records (KIP-42's client requirements) are judged apart: matrix.clients
        clients = client_rows(r for r in records if is_client(r))
        records = [r for r in records if not is_client(r)]
        impl, version = manifest["target_name"], manifest["target_version"]
        # verdict_counts: (requirement, verdict) -> records, feature, level, first sample
        groups: dict[tuple[str, str], dict[str, Any]] = {}
        tested: dict[tuple[Any, ...], int] = defaultdict(int)
        for r in records:
            g = groups.get((r["requirement_id"], r["verdict"]))
            if g is None:
                g = groups[(r["requirement_id"], r["verdict"])] = {
                    "records": 0,
                    "feature": r["feature"],
                    "level": r["level"],
                    "sample": None,
                }
            g["records"] += 1
            g["level"] = max(g["level"], r["level"])
            if r["verdict"] != "PASS":
                sample = _sample(r)
                if g["sample"] is None or _sample_key(sample) < _sample_key(g["sample"]):
                    g["sample"] = sample
            if r["api_key"] is not None:
                tested[(impl, version, r["api_key"], r["verdict"])] += 1
        # run_verdicts: per cell, the worst verdict of the run
        per_cell: dict[tuple[Any, ...], list[tuple[str, dict[str, Any]]]] = defaultdict(list)
        for (rid, verdict), g in groups.items():
            per_cell[(impl, version, g["feature"], rid)].append((verdict, g))
        cells, details = [], {}
        for key, entries in per_cell.items():
            entries.sort(key=lambda e: RANK[e[0]])
            level = max(g["level"] for _, g in entries)
            cells.append(_cell(key, entries[0][0], level, run_id))
            failed = [(v, g) for v, g in entries if v != "PASS"]
            if failed:
                details[key] = {
                    "details": [
                        dict(
                            zip(
                                DETAIL,
                                (n, run_id, *g["sample"][:2], v, *g["sample"][2:]),
                                strict=True,
                            )
                        )
                        for n, (v, g) in enumerate(failed[:DETAILS_PER_CELL], start=1)
                    ],
                    "details_total": sum(g["records"] for _, g in failed),
                }
        counts = {run_id: len(records)} if records else {}

    with timings.stage("history"):
        features: dict[str, dict[str, Any]] = {}
        for c in cells:
            row = features.setdefault(
                c["feature"],
                {"implementation": impl, "version": version, "feature": c["feature"],
                 "requirements": 0, "scored": 0, "passed": 0, "must_scored": 0, "must_passed": 0},
            )  # fmt: skip
            scored = c["verdict"] not in NOT_APPLICABLE
            passed = c["verdict"] == "PASS"
            must = c["level"] == "MUST"
            row["requirements"] += 1
            row["scored"] += scored
            row["passed"] += passed
            row["must_scored"] += scored and must
            row["must_passed"] += passed and must

    with timings.stage("apis"):
        from conformance.matrix import api_support

        targets = ranked_targets([manifest])
        apis = api_support.api_matrix(
            [manifest],
            [(i, v) for i, v, _ in targets],
            api_support.tested(
                {"implementation": i, "version": v, "api_key": k, "verdict": verdict, "records": n}
                for (i, v, k, verdict), n in tested.items()
            ),
        )
    model = assemble(
        got,
        targets,
        cells=cells,
        details=details,
        counts=counts,
        regressions=[],
        feature_rows=list(features.values()),
        flaky=[],
        apis=apis,
        diffs=[],
        kips_dir=kips_dir,
        timings=timings,
    )
    model["clients"] = clients
    return model


def render_run_report(
    run_dir: Path | str, out_dir: Path | str, *, spark_master: str | None = None, spark=None
) -> Path:
    """The report of one run (what ``run`` and the plugin's ``--report`` write): the matrix
    model of that one run directory and the same renderers; returns the HTML file's path.

    With no Spark session or master asked for, the model is computed in Python
    (``one_run_model``: one run has nothing to aggregate, and a JVM's start costs more than the
    suite; pyspark is not even imported); the Spark job computes it otherwise, or when the run
    holds a line only Spark's bulk check can judge. Both give the same ``matrix.json``.
    """
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
    from conformance.matrix.job import run_matrix  # Spark only here

    result = run_matrix([run_dir], out, spark_master=spark_master, spark=spark)
    return result.files["html"]
