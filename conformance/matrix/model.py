"""The matrix's engine-neutral part: the report model assembled from the aggregates, the
verdict rules both engines apply, the run's timings. No pyspark here: the Spark job
(:mod:`conformance.matrix.job`) and the one-run path (:mod:`conformance.matrix.one_run`) both
import this, and the one-run report never loads Spark.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from conformance.matrix.versions import natural_key, order_versions
from conformance.requirements import requirement_texts
from conformance.results.schema import FEATURES, Problem, started

MODEL_FORMAT = 1

#: Precedence of record verdicts within one run (lower wins).
PRECEDENCE = (
    "FAIL",
    "ERROR",
    "NONSTRICT",
    "PASS",
    "PROPOSAL_ABSENT",
    "UNSUPPORTED",
    "NOT_EXPOSED",
    "SKIP",
    "NOT_EVALUATED",
)
NOT_PASSING = ("FAIL", "ERROR", "NONSTRICT")
#: verdicts of a requirement no check judged; NOT_EVALUATED (the target had gone down) is the
#: last: a run that did judge the requirement, or says why it cannot apply, tells more
NOT_APPLICABLE = ("PROPOSAL_ABSENT", "UNSUPPORTED", "NOT_EXPOSED", "SKIP", "NOT_EVALUATED")
CELL_KEY = ("implementation", "version", "feature", "requirement_id")
#: Failure messages kept per cell for the report (the first by severity, then newest).
DETAILS_PER_CELL = 5


@dataclass
class Ingested:
    """What reading the runs produced: the dataset's location (None when none was written, as
    for one run read in Python) and what was counted or refused."""

    parquet: Path | None
    manifests: list[dict[str, Any]]
    run_dirs: list[Path]
    total_lines: int = 0
    bad_lines: int = 0
    problems: list[Problem] = field(default_factory=list)


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


def ranked_targets(manifests: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    """Each (implementation, version) of the runs with its rank in version order."""
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


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.replace(tzinfo=UTC).isoformat().replace("+00:00", "Z")
    if hasattr(value, "asDict"):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


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
        key = tuple(r[k] for k in CELL_KEY)
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
                # API versions whose answers set-up steps could not use (issue 42)
                "setup_defects": m.get("setup_defects", []),
                # API versions advertised that no verdict covers (None: an older manifest)
                "not_judged": m.get("not_judged"),
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
