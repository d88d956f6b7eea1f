"""The report as Markdown: the same tables as the HTML, for READMEs and pull requests."""

from __future__ import annotations

from typing import Any

from conformance.report.clients import NONE_JUDGED, client_grid, client_notes
from conformance.report.verdict_style import (
    ALL_JUDGED,
    COVERAGE_NOTE,
    NOT_JUDGED_TITLE,
    REGRESSIONS,
    UNITS,
    cell_text,
    feature_rate_text,
    flakiness_summary,
    must_rate_text,
    not_judged_lines,
    outage_lines,
    outcomes_text,
    percent,
    setup_defect_lines,
    table_check_lines,
)


def _row(cells: list[Any]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|").replace("\n", " ") for c in cells) + " |"


def _table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    return [_row(headers), _row(["---"] * len(headers)), *(_row(r) for r in rows), ""]


def render_markdown(model: dict[str, Any], *, title: str) -> str:
    targets = model["targets"]
    labels = [f"{t['implementation']} {t['version']}" for t in targets]
    records = model["records"]
    out = [
        f"# {title}",
        "",
        *[f"**{line}**\n" for line in outage_lines(model)],
        *[f"**{line}**\n" for line in setup_defect_lines(model)],
        f"{len(model['runs'])} runs, {len(targets)} implementation versions, "
        f"{records['counted']} result records counted ({records['bad']} bad lines); generated "
        f"{model['generated_at']}. {UNITS}",
        "",
        "## Summary",
        "",
    ]
    out += _table(
        ["implementation", "version", "MUST requirements met", *model["features"]],
        [
            [
                s["implementation"],
                s["version"],
                must_rate_text(s),
                *[feature_rate_text(s["features"].get(f)) for f in model["features"]],
            ]
            for s in model["summary"]
        ],
    )
    out += [COVERAGE_NOTE, ""]
    by_key = {(c["implementation"], c["version"], c["requirement_id"]): c for c in model["cells"]}
    out += ["## Requirement matrix", ""]
    for feature in model["features"]:
        out += [f"### {feature}", ""]
        rows = []
        for rid, req in model["requirements"].items():
            if req["feature"] != feature:
                continue
            cells = []
            for t in targets:
                cell = by_key.get((t["implementation"], t["version"], rid))
                cells.append(cell_text(cell) if cell else "-")
            rows.append([rid, req["level"], *cells])
        out += _table(["requirement", "level", *labels], rows)
    out += ["## Clients", ""]
    labels, grid = client_grid(model)
    if grid:
        rows = [
            [rid, level, *[c["verdict"] if c else "-" for c in cells]] for rid, level, cells in grid
        ]
        out += _table(["requirement", "level", *labels], rows)
        out += [
            f"- {label} {rid} {verdict}: {message}"
            for label, rid, verdict, message in client_notes(model)
        ]
        out += [""]
    else:
        out += [NONE_JUDGED, ""]
    out += ["## API support", ""]
    api = model["api_support"]
    out += _table(
        ["implementation", "version", "behaves most like", "similarity", "APIs advertised"],
        [
            [
                t["implementation"],
                t["version"],
                t["best_guess"]["release"] if t["best_guess"] else "-",
                percent(t["best_guess"]["score"]) if t["best_guess"] else "-",
                len(t["advertised"]),
            ]
            for t in api["targets"]
        ],
    )
    checks = table_check_lines(api)
    if checks:
        out += ["Our table of Kafka releases against the brokers' real ApiVersions:", ""]
        out += [f"- {line}" for line in checks] + [""]
    not_judged = not_judged_lines(model)
    if not_judged is not None:
        out += [f"### {NOT_JUDGED_TITLE}", ""]
        out += [f"- {line}" for line in not_judged or [ALL_JUDGED]] + [""]
    out += ["## Flakiness", "", flakiness_summary(model), ""]
    if model["flakiness"]:
        out += _table(
            ["implementation", "version", "requirement", "failure rate", "lone failure", "runs"],
            [
                [
                    f["implementation"],
                    f["version"],
                    f["requirement_id"],
                    percent(f["failure_rate"]),
                    "yes" if f["lone_failure"] else "no",
                    ", ".join(f["failing_runs"]),
                ]
                for f in model["flakiness"]
            ],
        )
    if model.get("flaky_tests"):
        out += ["### Flaky tests", ""]
        out += _table(
            ["implementation", "version", "set-up", "test", "requirement", "api version", "runs"],
            [
                [
                    f["implementation"],
                    f["version"],
                    f["setup"],
                    f["test_id"],
                    f["requirement_id"],
                    "" if f["api_version"] is None else f["api_version"],
                    outcomes_text(f),
                ]
                for f in model["flaky_tests"]
            ],
        )
    out += ["## Regressions", "", REGRESSIONS, ""]
    if model["regressions"]:
        out += _table(
            ["implementation", "requirement", "passed in", "fails in", "verdict"],
            [
                [
                    r["implementation"],
                    r["requirement_id"],
                    f"{r['from_version']} ({r['from_verdict']})",
                    r["to_version"],
                    r["to_verdict"],
                ]
                for r in model["regressions"]
            ],
        )
    else:
        out += ["No requirement that passed at one version fails at a later one.", ""]
    out += ["## Run diffs", ""]
    for d in model["diffs"]:
        out += [
            f"### {d['run_a']} → {d['run_b']}",
            "",
            f"{d['same']} unchanged, {d['changed']} changed, {d['only_a']} only before, "
            f"{d['only_b']} only after.",
            "",
        ]
        if d["changes"]:
            out += _table(
                ["test", "requirement", "api version", "before", "after"],
                [
                    [
                        c["test_id"],
                        c["requirement_id"],
                        "" if c["api_version"] is None else c["api_version"],
                        c["verdict_a"] or "(absent)",
                        c["verdict_b"] or "(absent)",
                    ]
                    for c in d["changes"]
                ],
            )
    if model.get("skipped"):
        out += ["## Skipped runs", ""]
        out += [f"- `{k['target']}`: {k['why']}" for k in model["skipped"]] + [""]
    if model["problems"]:
        out += ["## Input problems", ""]
        out += [f"- `{p['file']}:{p['line']}`: {p['message']}" for p in model["problems"]] + [""]
    return "\n".join(out)
