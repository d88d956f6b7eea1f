"""A run's outcome in numbers, and its report.

``summarise`` reads a run directory and says what the exit code of ``run`` must be: non-zero
when a requirement FAILed (a MUST, or a SHOULD under --strict), when the suite broke (ERROR), or
when nothing was checked at all. ``render_report`` uses the report package's
``render_run_report`` and falls back to a plain Markdown table when that is not installed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from conformance.results.schema import load_run

ORDER = (
    "PASS",
    "FAIL",
    "ERROR",
    "NONSTRICT",
    "UNSUPPORTED",
    "NOT_EXPOSED",
    "PROPOSAL_ABSENT",
    "SKIP",
)


@dataclass
class Summary:
    run_id: str
    counts: Counter = field(default_factory=Counter)
    failed: list[dict] = field(default_factory=list)
    problems: int = 0

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def scored(self) -> int:
        return sum(self.counts[v] for v in ("PASS", "FAIL", "ERROR", "NONSTRICT"))

    def line(self) -> str:
        parts = [f"{self.counts[v]} {v}" for v in ORDER if self.counts[v]]
        return ", ".join(parts) or "no results"

    def exit_code(self) -> int:
        """0: every MUST held; 1: a FAIL or ERROR, or nothing was checked."""
        if self.counts["FAIL"] or self.counts["ERROR"] or self.problems:
            return 1
        return 0 if self.scored else 1


def summarise(run_dir: Path | str) -> Summary:
    run = load_run(run_dir)
    s = Summary(run.run_id, problems=len(run.problems))
    for r in run.records:
        s.counts[r["verdict"]] += 1
        if r["verdict"] in ("FAIL", "ERROR"):
            s.failed.append(r)
    return s


def render_report(run_dir: Path | str, out_dir: Path | str) -> Path:
    """The report of one run in ``out_dir``; returns the main file written."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    try:
        from conformance.report import render_run_report  # the report package, when present
    except ImportError:
        render_run_report = None
    if render_run_report is not None:
        result = render_run_report(Path(run_dir), out)
        return Path(result) if result else out
    return _minimal(run_dir, out)


def _minimal(run_dir: Path | str, out: Path) -> Path:
    run = load_run(run_dir)
    m = run.manifest
    by_req: dict[str, Counter] = {}
    for r in run.records:
        by_req.setdefault(r["requirement_id"], Counter())[r["verdict"]] += 1
    lines = [
        f"# Conformance run {m['run_id']}",
        "",
        f"Target: {m['target_name']} {m['target_version']} at {m['bootstrap']}; "
        f"seed {m['hypothesis_seed']}; {m['started_at']} to {m['ended_at']}",
        "",
        "| requirement | " + " | ".join(ORDER) + " |",
        "| --- |" + " --- |" * len(ORDER),
    ]
    for rid in sorted(by_req, key=_req_key):
        c = by_req[rid]
        lines.append(f"| {rid} | " + " | ".join(str(c[v] or "") for v in ORDER) + " |")
    bad = [r for r in run.records if r["verdict"] in ("FAIL", "ERROR", "NONSTRICT")]
    if bad:
        lines += ["", "## Not passed", ""]
        for r in bad:
            lines.append(
                f"- **{r['verdict']}** `{r['test_id']}` {r['requirement_id']}: {r['message']}"
            )
    out.mkdir(parents=True, exist_ok=True)
    path = out / "report.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _req_key(rid: str) -> tuple[str, int]:
    feature, _, n = rid.rpartition(".R")
    return feature, int(n) if n.isdigit() else 0
