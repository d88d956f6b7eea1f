"""The report's tables as CSV files, one row per matrix cell (or per API and target)."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from conformance.report.verdict_style import coverage_counts

CELL_COLUMNS = (
    "implementation",
    "version",
    "feature",
    "requirement_id",
    "level",
    "verdict",
    "runs",
    "scored",
    "passes",
    "fail",
    "error",
    "nonstrict",
    "unsupported",
    "not_exposed",
    "proposal_absent",
    "skip",
    "failure_rate",
    "lone_failure",
)


def write_csvs(model: dict[str, Any], out_dir: Path) -> dict[str, Path]:
    paths = {
        "requirements_csv": out_dir / "requirements.csv",
        "apis_csv": out_dir / "api-support.csv",
        "features_csv": out_dir / "features.csv",
    }
    _write_features(model, paths["features_csv"])
    with paths["requirements_csv"].open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow([*CELL_COLUMNS, "statement"])
        for c in model["cells"]:
            statement = model["requirements"].get(c["requirement_id"], {}).get("statement", "")
            w.writerow([*(c[k] for k in CELL_COLUMNS), statement])
    api = model["api_support"]
    names = {str(a["api_key"]): a["name"] for a in api["apis"]}
    with paths["apis_csv"].open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(
            [
                "implementation",
                "version",
                "api_key",
                "api_name",
                "advertised_min",
                "advertised_max",
                "best_guess_release",
                "release_min",
                "release_max",
                "records_pass",
                "records_not_pass",
            ]
        )
        for t in api["targets"]:
            release = t["best_guess"]["release"] if t["best_guess"] else ""
            keys = sorted(set(t["advertised"]) | set(t["tested"]), key=int)
            for key in keys:
                rng = t["advertised"].get(key) or ["", ""]
                ref = api["kafka"].get(release, {}).get(key) or ["", ""]
                tested = t["tested"].get(key, {})
                passes = tested.get("PASS", 0)
                w.writerow(
                    [
                        t["implementation"],
                        t["version"],
                        key,
                        names.get(key, ""),
                        *rng,
                        release,
                        *ref,
                        passes,
                        sum(tested.values()) - passes,
                    ]
                )
    return paths


FEATURE_COLUMNS = (
    "implementation",
    "version",
    "feature",
    "requirements",
    "judged",
    "passed",
    "coverage",
    "pass_rate",
)


def _write_features(model: dict[str, Any], path: Path) -> None:
    """One row per target and feature: how many requirements were judged beside the pass rate,
    which is left empty where fewer than half were judged (as every rendering gives none)."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(FEATURE_COLUMNS)
        for s in model["summary"]:
            for feature, x in s["features"].items():
                judged, total = x["scored"], x["requirements"]
                shown = coverage_counts(x["passed"], judged, total)[1] is not None
                w.writerow(
                    [
                        s["implementation"],
                        s["version"],
                        feature,
                        total,
                        judged,
                        x["passed"],
                        round(judged / total, 4) if total else "",
                        round(x["passed"] / judged, 4) if shown else "",
                    ]
                )
