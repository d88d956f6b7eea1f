"""A run's outcome in numbers, and its report.

``summarise`` reads a run directory and says what the exit code of ``run`` must be: non-zero
when a requirement FAILed (a MUST, or a SHOULD under --strict), when the suite broke (ERROR), or
when nothing was checked at all. The run's report is rendered by the matrix job
(``conformance.matrix.job.render_run_report``).
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
