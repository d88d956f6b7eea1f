"""A run's outcome in numbers, and its report.

``summarise`` reads a run directory and says what the exit code of ``run`` must be: non-zero
when a requirement FAILed (a MUST, or a SHOULD under --strict), when the suite broke (ERROR), or
when nothing was checked at all; INCOMPLETE (3) when the target went down and was not brought
back, so that tests were left NOT_EVALUATED. Its ``headlines`` (from the manifest's ``outages``)
come first wherever the run is summed up. The run's report is rendered by the matrix job
(``conformance.matrix.one_run.render_run_report``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.results.advertised import lines as not_judged_lines
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
    "NOT_EVALUATED",
)
#: what a SKIP's message says when the test's set-up found no way to get what it needs (a
#: topic, ``conformance.suite.kit.provision``), though the APIs its requirements judge may be there
SET_UP_MISSING = "no way to obtain a topic"
#: what a SKIP's message starts with when an API the test needs is not advertised and the
#: requirement does not judge it (``conformance.results.policy``): set-up, not the target's verdict
SET_UP_NEEDS = "set-up needs"
#: exit code of a run the target went down in and that could not go on (tests NOT_EVALUATED);
#: 0, 1 and 2 keep their meanings (all held; a FAIL, an ERROR or nothing checked; no start)
INCOMPLETE = 3


@dataclass
class Summary:
    run_id: str
    counts: Counter = field(default_factory=Counter)
    failed: list[dict] = field(default_factory=list)
    problems: int = 0
    #: the manifest's ``outages``: each time the target went down
    outages: list[dict] = field(default_factory=list)
    #: the manifest's ``setup_defects``: API versions set-up steps could not use (issue 42)
    setup_defects: list[dict] = field(default_factory=list)
    #: the manifest's ``not_judged``: API versions advertised that no verdict covers
    not_judged: list[dict] = field(default_factory=list)
    #: requirements no record judged because their set-up could not be had (SET_UP_MISSING)
    unset: set[str] = field(default_factory=set)

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    @property
    def scored(self) -> int:
        return sum(self.counts[v] for v in ("PASS", "FAIL", "ERROR", "NONSTRICT"))

    def line(self) -> str:
        parts = [f"{self.counts[v]} {v}" for v in ORDER if self.counts[v]]
        return ", ".join(parts) or "no results"

    def advertised_not_judged(self) -> list[str]:
        """The run summary's lines on advertised API versions no verdict covers."""
        return not_judged_lines(self.not_judged)

    def headlines(self) -> list[str]:
        """One :func:`outage_line` per time the target went down, then one
        :func:`setup_defect_line` per API version set-up steps could not use."""
        return [outage_line(o) for o in self.outages] + [
            setup_defect_line(d) for d in self.setup_defects
        ]

    @property
    def incomplete(self) -> bool:
        """Tests were left unjudged because the target went down and stayed down."""
        return bool(self.counts["NOT_EVALUATED"]) or any(not o["restarted"] for o in self.outages)

    def exit_code(self) -> int:
        """0: every MUST held; 1: a FAIL or ERROR, or nothing was checked; 3 (INCOMPLETE): the
        target went down and the run could not judge what came after."""
        if self.incomplete:
            return INCOMPLETE
        if self.counts["FAIL"] or self.counts["ERROR"] or self.problems:
            return 1
        return 0 if self.scored else 1


def outage_line(outage: dict) -> str:
    """``the target went down during <test> (<why>); restarted``: what the terminal summary,
    ``run`` and the report put first about one entry of a manifest's ``outages``."""
    then = "restarted" if outage["restarted"] else "the tests after it were not evaluated"
    if outage.get("restart_error"):
        then += f" ({outage['restart_error']})"
    return f"the target went down during {outage['test_id']} ({outage['reason']}); {then}"


def setup_defect_line(defect: dict) -> str:
    """``set-up defect: Metadata v12 from <node> (...; PROTOCOL.R3, met in <test>); N tests``:
    one entry of a manifest's ``setup_defects``, put first beside the outages (issue 42)."""
    return (
        f"set-up defect: {defect['api']} v{defect['version']} from {defect['node']} "
        f"({defect['reason']}; {defect['requirement']}, met in "
        f"{defect['test_id'] or 'the run set-up'}); {defect['tests']} test(s) touched, their "
        "set-up used another version (or they are SKIP where none worked)"
    )


#: a run's phase for ``phase_line``: what ran the tests, how many, its seconds, and whether it
#: ran beside the phases before it from the run's start (a concurrent run's side runs, timed
#: from their spawn) rather than after them
RunPhase = tuple[str, int, float, bool]


def phase_line(phases: Sequence[RunPhase]) -> str:
    """``681 tests in 4 processes: 41.5 s; and 35 tests in 2 side runs beside them, …: 27.5 s;
    then …``: the line after the verdicts, each phase joined to those before it by ``then``
    when it came after them, by ``and`` when it ran beside them (with the Java clients' tests
    the workers end after the side runs: a ``then`` there read as if they had run after)."""
    out = ""
    for i, (what, tests, seconds, beside) in enumerate(phases):
        if i:
            out += "; and " if beside else "; then "
        out += f"{tests} tests in {what}: {seconds:.1f} s"
    return out


def summarise(run_dir: Path | str) -> Summary:
    run = load_run(run_dir)
    s = Summary(
        run.run_id,
        problems=len(run.problems),
        outages=list(run.manifest.get("outages", [])),
        setup_defects=list(run.manifest.get("setup_defects", [])),
        not_judged=list(run.manifest.get("not_judged", [])),
    )
    judged: set[str] = set()
    for r in run.records:
        s.counts[r["verdict"]] += 1
        if r["verdict"] in ("FAIL", "ERROR"):
            s.failed.append(r)
        if r["verdict"] in ("PASS", "FAIL", "NONSTRICT", "ERROR"):
            judged.add(r["requirement_id"])
        elif r["verdict"] == "SKIP" and (
            SET_UP_MISSING in (r.get("message") or "")
            or (r.get("message") or "").startswith(SET_UP_NEEDS)
        ):
            s.unset.add(r["requirement_id"])
    s.unset -= judged
    return s
