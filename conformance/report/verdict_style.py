"""How verdicts look in every rendering: one colour each, and the short text of a cell."""

from __future__ import annotations

from typing import Any

from conformance.results.advertised import lines as advertised_lines
from conformance.results.summary import outage_line, setup_defect_line

#: the report's heading over what the targets advertise and no verdict covers
NOT_JUDGED_TITLE = "Advertised, not judged"
#: ... and what it says when every advertised API version was judged
ALL_JUDGED = "every API version the targets advertise was judged in their runs"

#: what the report's regressions are (read as "against earlier runs" in session 16)
REGRESSIONS = (
    "A requirement a version of an implementation fails that its previous version, in version "
    "order, passed: the releases compared, not earlier runs. With one run per version, a "
    "failure that varies from run to run shows here too."
)

#: verdict -> (background, text colour); the HTML legend and the badges use the same.
COLOURS: dict[str, tuple[str, str]] = {
    "PASS": ("#c8e6c9", "#1b5e20"),
    "FAIL": ("#ffcdd2", "#b71c1c"),
    "ERROR": ("#e1bee7", "#4a148c"),
    "NONSTRICT": ("#ffe0b2", "#8a4b00"),
    "FLAKY": ("#fff59d", "#6d5d00"),
    "UNSUPPORTED": ("#e0e0e0", "#424242"),
    "NOT_EXPOSED": ("#cfd8dc", "#37474f"),
    "PROPOSAL_ABSENT": ("#bbdefb", "#0d47a1"),
    "SKIP": ("#f5f5f5", "#616161"),
    "NOT_EVALUATED": ("#fafafa", "#9e9e9e"),
}
ORDER = tuple(COLOURS)
#: what the report's numbers count (the terminal and the results count other units)
UNITS = (
    "Units: a result record is one test's verdict on one requirement in one run (what a run's "
    "verdict line counts; pytest counts tests). Each matrix cell is one requirement on one "
    "implementation version: its verdict, then runs passed / runs scored; the summary counts "
    "requirements. UNSUPPORTED, NOT_EXPOSED, PROPOSAL_ABSENT and SKIP never count as failures; "
    "NOT_EVALUATED (the target had gone down earlier in the run) is neither a failure nor a pass."
)


def cell_text(cell: dict[str, Any]) -> str:
    """``PASS 3/3``, ``FLAKY 1/3 failed``, ``UNSUPPORTED``: the verdict and its counts."""
    verdict = cell["verdict"]
    scored, passes = cell["scored"], cell["passes"]
    if verdict == "FLAKY":
        text = f"FLAKY {scored - passes}/{scored} failed"
        return text + " (lone failure)" if cell["lone_failure"] else text
    if scored:
        return f"{verdict} {passes}/{scored}"
    return verdict


def percent(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.0f}%"


#: the legend of every pass rate: what "judged" means and when no rate is given
COVERAGE_NOTE = (
    "A pass rate is over the judged requirements only (PASS, FAIL, ERROR, NONSTRICT, FLAKY: a "
    'check ran), and is given with how many were judged, e.g. "9 of 11 judged: 89%". Where '
    "fewer than half were judged, no rate is given, only the counts: the few judged say little "
    "about the feature."
)


def coverage_counts(passed: int, judged: int, requirements: int) -> tuple[str, str | None]:
    """(how much was judged, the pass rate or None): None where nothing or fewer than half of
    the requirements were judged, so a rate never stands for a feature it barely covered."""
    head = f"{judged} of {requirements} judged"
    if not judged or 2 * judged < requirements:
        return head, None
    # a rate short of 1 never rounds up to "100%"
    return head, f"{min(round(100 * passed / judged), 100 if passed == judged else 99)}%"


def rate_text(passed: int, judged: int, requirements: int) -> str:
    """``9 of 11 judged: 89%``; ``2 of 11 judged, 2 pass (under half judged: no rate)``;
    ``0 of 3 judged``."""
    head, rate = coverage_counts(passed, judged, requirements)
    if rate is not None:
        return f"{head}: {rate}"
    if not judged:
        return head
    return f"{head}, {passed} pass (under half judged: no rate)"


def feature_rate_text(feature: dict[str, Any] | None) -> str:
    """A summary feature entry's rate with its coverage; ``-`` for a feature the target lacks."""
    if not feature:
        return "-"
    return rate_text(feature["passed"], feature["scored"], feature["requirements"])


def must_rate_text(entry: dict[str, Any]) -> str:
    """A target's MUST requirements met, with how many of its MUST requirements were judged."""
    passed, judged = entry["must_passed"], entry["must_scored"]
    total = entry.get("must_requirements", judged)
    head, rate = coverage_counts(passed, judged, total)
    return f"{passed} met; {head}: {rate}" if rate else rate_text(passed, judged, total)


def outcomes_text(flaky_test: dict[str, Any]) -> str:
    """``FAIL -> PASS -> PASS``: a flaky test's verdicts, one per run, in run order."""
    return " -> ".join(o["verdict"] for o in flaky_test["outcomes"])


def flakiness_summary(model: dict[str, Any]) -> str:
    """One sentence on what the Flakiness section lists (never "none" while a test was flaky)."""
    cells, tests = len(model["flakiness"]), len(model.get("flaky_tests", []))
    if not cells and not tests:
        return "No requirement and no test had mixed outcomes across runs of the same target."
    parts = []
    if cells:
        parts.append(f"{cells} requirement cell(s) FLAKY")
    else:
        parts.append("no requirement cell FLAKY")
    parts.append(
        f"{tests} test(s) with mixed outcomes across runs of the same target set-up"
        + (" (hidden in their cells by other runs or tests)" if tests and not cells else "")
    )
    return "; ".join(parts) + "."


def table_check_lines(api_support: dict[str, Any]) -> list[str]:
    """One line per Apache Kafka target: whether our table of its release agrees with the
    ApiVersions its brokers really advertised, and each API where it does not."""
    out = []
    for t in api_support["targets"]:
        check = t.get("table_check")
        if not check:
            continue
        head = (
            f"{t['implementation']} {t['version']} against the table's Kafka {check['release']} "
            f"({check['listener']} listener): "
        )
        diffs = check["differences"]
        if not diffs:
            out.append(head + "the same ranges for every API")
            continue
        parts = [
            f"{d['api_key']} {d['name'] or ''}: advertised "
            f"{'-'.join(map(str, d['advertised'])) if d['advertised'] else 'nothing'}, table "
            f"{'-'.join(map(str, d['table'])) if d['table'] else 'nothing'}"
            for d in diffs
        ]
        out.append(head + f"{len(diffs)} APIs differ: " + "; ".join(parts))
    return out


def outage_lines(model: dict[str, Any]) -> list[str]:
    """``<implementation> <version>, run <id>: the target went down during <test> (...)``, one
    per outage of each run (the manifest's ``outages``): the first lines of every report."""
    return [
        f"{r['implementation']} {r['version']}, run {r['run_id']}: {outage_line(o)}"
        for r in model["runs"]
        for o in r.get("outages", [])
    ]


def setup_defect_lines(model: dict[str, Any]) -> list[str]:
    """``<implementation> <version>, run <id>: set-up defect: Metadata v12 from <node> (...); N
    test(s) touched ...``, one per entry of each run's ``setup_defects`` (issue 42): listed
    beside the outages, before anything else of the report."""
    return [
        f"{r['implementation']} {r['version']}, run {r['run_id']}: {setup_defect_line(d)}"
        for r in model["runs"]
        for d in r.get("setup_defects", [])
    ]


def not_judged_lines(model: dict[str, Any]) -> list[str] | None:
    """``<implementation> <version>, run <id>: <line>`` for each API version a run's target
    advertises that no spec defines or no verdict of the run covers (the manifest's
    ``not_judged``); None when no run recorded it (manifests from before it existed)."""
    runs = [r for r in model["runs"] if r.get("not_judged") is not None]
    if not runs:
        return None
    return [
        f"{r['implementation']} {r['version']}, run {r['run_id']}: {line}"
        for r in runs
        for line in advertised_lines(r["not_judged"])
    ]
