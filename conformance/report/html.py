"""The report as one HTML file: no network assets, inline CSS and JS, sortable tables, one
colour per verdict, and every matrix cell linked to its failure messages and requirement text."""

from __future__ import annotations

import base64
from html import escape
from typing import Any

from conformance.report.clients import NONE_JUDGED, client_grid, client_notes
from conformance.report.verdict_style import (
    ALL_JUDGED,
    COLOURS,
    COVERAGE_NOTE,
    NOT_JUDGED_TITLE,
    ORDER,
    REGRESSIONS,
    UNITS,
    cell_text,
    coverage_counts,
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

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#212121}
header{background:#263238;color:#fff;padding:14px 24px}
header h1{margin:0;font-size:22px}
header p{margin:4px 0 0;color:#cfd8dc}
nav{background:#eceff1;padding:8px 24px;position:sticky;top:0;z-index:1}
nav a{margin-right:14px;color:#263238}
main{padding:8px 24px 40px}
h2{border-bottom:2px solid #cfd8dc;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border:1px solid #cfd8dc;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#eceff1;cursor:pointer;user-select:none;white-space:nowrap}
th.sorted-asc::after{content:" \\25B2"}
th.sorted-desc::after{content:" \\25BC"}
td a{color:inherit}
.scroll{overflow-x:auto}
.legend span{display:inline-block;padding:2px 8px;margin:2px;border-radius:3px}
.cell{white-space:nowrap}
.detail{border:1px solid #cfd8dc;border-radius:4px;padding:6px 10px;margin:8px 0}
.detail:target,.req:target{outline:3px solid #ffb300}
.detail pre,.msg{white-space:pre-wrap;margin:2px 0;font:12px/1.4 ui-monospace,monospace}
.muted{color:#757575}
.req{margin:10px 0;padding:6px 10px;border-left:4px solid #90a4ae}
.flag{font-weight:bold}
.low-coverage{color:#757575;font-style:italic}
ul.rates{margin:0;padding-left:16px}
"""

JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0];
      var rows = Array.prototype.slice.call(body.rows);
      var asc = !th.classList.contains("sorted-asc");
      table.querySelectorAll("th").forEach(function (h) {
        h.classList.remove("sorted-asc", "sorted-desc");
      });
      th.classList.add(asc ? "sorted-asc" : "sorted-desc");
      function key(row) {
        var cell = row.cells[col];
        var text = cell ? (cell.getAttribute("data-sort") || cell.textContent.trim()) : "";
        var num = parseFloat(text);
        return isNaN(num) || !/^-?[0-9.]+%?$/.test(text) ? text.toLowerCase() : num;
      }
      rows.sort(function (a, b) {
        var x = key(a), y = key(b);
        if (typeof x !== typeof y) { x = String(x); y = String(y); }
        return (x < y ? -1 : x > y ? 1 : 0) * (asc ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _verdict_css() -> str:
    return "".join(f".v-{v}{{background:{bg};color:{fg}}}" for v, (bg, fg) in COLOURS.items())


def _table(headers: list[str], rows: list[str], cls: str = "sortable") -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in headers)
    return (
        f'<div class="scroll"><table class="{cls}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def _req_anchor(rid: str) -> str:
    return f"req-{rid}"


def _target_label(t: dict[str, Any]) -> str:
    return f"{t['implementation']} {t['version']}"


def _summary(model: dict[str, Any], badges: dict[str, str]) -> str:
    runs_of = {(t["implementation"], t["version"]): len(t["runs"]) for t in model["targets"]}
    rows = []
    for s in model["summary"]:
        key = (s["implementation"], s["version"])
        counts = " ".join(
            f'<span class="v-{v}" style="padding:0 4px">{v} {s["verdicts"][v]}</span>'
            for v in ORDER
            if s["verdicts"].get(v)
        )
        rate = s["must_passed"] / s["must_scored"] if s["must_scored"] else None
        must_cls = ' class="low-coverage"' if coverage_counts(
            s["must_passed"], s["must_scored"], s.get("must_requirements", s["must_scored"])
        )[1] is None else ""  # fmt: skip
        features = "".join(f"<li>{_feature_rate(f, x)}</li>" for f, x in s["features"].items())
        rows.append(
            f"<tr><td>{_e(s['implementation'])}</td><td>{_e(s['version'])}</td>"
            f"<td>{runs_of[key]}</td>"
            f'<td{must_cls} data-sort="{"" if rate is None else round(rate, 4)}">'
            f"{_e(must_rate_text(s))}</td>"
            f'<td>{counts}</td><td><ul class="rates">{features}</ul></td></tr>'
        )
    table = _table(
        [
            "implementation",
            "version",
            "runs",
            "MUST requirements met",
            "cells by verdict",
            "pass rate by feature (judged requirements)",
        ],
        rows,
    )
    images = "".join(
        f'<img alt="badge {_e(impl)}" src="data:image/svg+xml;base64,'
        f'{base64.b64encode(svg.encode()).decode()}"> '
        for impl, svg in badges.items()
    )
    return f'<p class="badges">{images}</p>{table}<p class="muted">{_e(COVERAGE_NOTE)}</p>'


def _feature_rate(feature: str, entry: dict[str, Any]) -> str:
    """One feature's rate with its coverage; under half judged, the counts only, greyed."""
    judged, total = entry["scored"], entry["requirements"]
    low = coverage_counts(entry["passed"], judged, total)[1] is None
    cls = ' class="low-coverage"' if low else ""
    return f"<span{cls}>{_e(feature)} {_e(feature_rate_text(entry))}</span>"


def _legend() -> str:
    spans = "".join(f'<span class="v-{v}">{v}</span>' for v in ORDER)
    return (
        f'<p class="legend">{spans}</p><p class="muted">UNSUPPORTED, NOT_EXPOSED, PROPOSAL_ABSENT '
        "and SKIP never count as failures; NOT_EVALUATED (the target had gone down earlier in the "
        "run) is neither a failure nor a pass. FLAKY: some runs of the same set-up passed and "
        'some did not; "lone failure" (&#9873;) marks one failing run among at least two '
        "passing ones; &#8776; marks a cell holding a test whose verdict changed between runs "
        "of the same set-up (listed under Flakiness). Counts are "
        "runs passed / runs scored. Click a cell for its messages and requirement text, a "
        "column heading to sort.</p>"
    )


def _matrix(model: dict[str, Any], cell_ids: dict[tuple[str, str, str], str]) -> str:
    targets = model["targets"]
    by_key = {(c["implementation"], c["version"], c["requirement_id"]): c for c in model["cells"]}
    parts = [_legend()]
    for feature in model["features"]:
        rids = [r for r, req in model["requirements"].items() if req["feature"] == feature]
        rows = []
        for rid in rids:
            req = model["requirements"][rid]
            tds = []
            for t in targets:
                cell = by_key.get((t["implementation"], t["version"], rid))
                if cell is None:
                    tds.append('<td class="muted">-</td>')
                    continue
                anchor = cell_ids[(t["implementation"], t["version"], rid)]
                flag = (
                    ' <span class="flag" title="lone failure">&#9873;</span>'
                    if cell["lone_failure"]
                    else ""
                )
                if cell.get("flaky_tests"):
                    flag += (
                        f' <a class="flag" href="#flakiness" title="{cell["flaky_tests"]} '
                        'flaky test(s): see Flakiness">&#8776;</a>'
                    )
                tds.append(
                    f'<td class="cell v-{cell["verdict"]}" data-sort="{cell["verdict"]}">'
                    f'<a href="#{anchor}">{_e(cell_text(cell))}</a>{flag}</td>'
                )
            statement = req.get("statement")
            title = f' title="{_e(statement)}"' if statement else ""
            rows.append(
                f'<tr><td><a href="#{_req_anchor(rid)}"{title}>{_e(rid)}</a></td>'
                f"<td>{_e(req['level'])}</td>{''.join(tds)}</tr>"
            )
        parts.append(f'<h3 id="feature-{_e(feature)}">{_e(feature)}</h3>')
        parts.append(_table(["requirement", "level", *[_target_label(t) for t in targets]], rows))
    return "".join(parts)


def _details(model: dict[str, Any], cell_ids: dict[tuple[str, str, str], str]) -> str:
    parts = []
    for c in model["cells"]:
        anchor = cell_ids[(c["implementation"], c["version"], c["requirement_id"])]
        rid = c["requirement_id"]
        counts = ", ".join(
            f"{v} {c[v.lower()] if v != 'PASS' else c['passes']}"
            for v in ORDER
            if v != "FLAKY" and (c["passes"] if v == "PASS" else c.get(v.lower()))
        )
        lines = [
            f'<div class="detail" id="{anchor}"><b>{_e(c["implementation"])} '
            f'{_e(c["version"])}</b> &middot; <a href="#{_req_anchor(rid)}">{_e(rid)}</a> '
            f'({_e(c["level"])}) &middot; <span class="v-{c["verdict"]}">'
            f"{_e(cell_text(c))}</span> &middot; runs: {c['runs']} ({_e(counts)})"
        ]
        if c["failure_rate"] is not None and c["verdict"] == "FLAKY":
            lines.append(f" &middot; failure rate {percent(c['failure_rate'])}")
        if c["failing_runs"]:
            lines.append(f"<br>not passing in: {_e(', '.join(c['failing_runs']))}")
        for d in c["details"]:
            version = "" if d["api_version"] is None else f" v{d['api_version']}"
            seed = "" if d.get("seed") is None else f" seed={d['seed']}"
            lines.append(
                f'<div><span class="v-{d["verdict"]}">{_e(d["verdict"])}</span> '
                f'{_e(d["test_id"])}{_e(version)} <span class="muted">run {_e(d["run_id"])}'
                f"{_e(seed)}</span>"
                f'<pre class="msg">{_e(d["message"] or "(no message)")}</pre></div>'
            )
        if c["details_total"] > len(c["details"]):
            lines.append(
                f'<p class="muted">{c["details_total"] - len(c["details"])} more '
                "messages in the Parquet dataset and matrix.json's source runs</p>"
            )
        lines.append("</div>")
        parts.append("".join(lines))
    return "".join(parts)


def _apis(model: dict[str, Any]) -> str:
    api = model["api_support"]
    targets = api["targets"]
    releases = api["releases"]
    guess_rows = [
        f"<tr><td>{_e(t['implementation'])}</td><td>{_e(t['version'])}</td>"
        f"<td>{_e(t['best_guess']['release'] if t['best_guess'] else '-')}</td>"
        f"<td>{percent(t['best_guess']['score']) if t['best_guess'] else '-'}</td>"
        f"<td>{_e(', '.join(str(k) for k in t['varies']) or '-')}</td></tr>"
        for t in targets
    ]
    parts = [
        "<p>Advertised ApiVersions ranges per target (from the runs' manifests) beside the "
        "ranges a broker of each Apache Kafka release advertises. Best guess: the release whose "
        "broker advertises the most nearly equal ranges, over the APIs in the suite's scope.</p>",
        _table(
            [
                "implementation",
                "version",
                "behaves most like",
                "similarity",
                "APIs whose range varied between runs",
            ],
            guess_rows,
        ),
    ]
    checks = table_check_lines(api)
    if checks:
        parts.append(
            "<p>Our table of Kafka releases against the ApiVersions the brokers of each Apache "
            "Kafka target really advertised:</p><ul>"
            + "".join(f"<li>{_e(line)}</li>" for line in checks)
            + "</ul>"
        )
    rows = []
    for a in api["apis"]:
        key = str(a["api_key"])
        tds = []
        for t in targets:
            rng = t["advertised"].get(key)
            ref = (
                api["kafka"].get(t["best_guess"]["release"], {}).get(key)
                if t["best_guess"]
                else None
            )
            tested = t["tested"].get(key, {})
            tested_text = " ".join(f"{v} {n}" for v, n in tested.items())
            if rng is None:
                cls, text = "v-SKIP", "-"
            else:
                text = f"{rng[0]}-{rng[1]}"
                cls = "v-PASS" if rng == ref else "v-NONSTRICT" if ref else "v-UNSUPPORTED"
            title = f' title="{_e(tested_text)}"' if tested_text else ""
            tds.append(f'<td class="{cls}"{title}>{_e(text)}</td>')
        kafka = []
        for r in releases:
            rng = api["kafka"][r].get(key)
            kafka.append(f"<td>{_e(f'{rng[0]}-{rng[1]}' if rng else '-')}</td>")
        scope = "" if a["in_scope"] else ' <span class="muted">(outside scope)</span>'
        rows.append(
            f'<tr><td data-sort="{a["api_key"]:05d}">{a["api_key"]}</td>'
            f"<td>{_e(a['name'])}{scope}</td>{''.join(tds)}{''.join(kafka)}</tr>"
        )
    parts.append(
        '<p class="muted">Target cells: green = same range as its best-guess release, orange = '
        "differs, grey = that release has no such broker API, '-' = not advertised. Hover for "
        "the verdicts of the checks that used the API.</p>"
    )
    parts.append(
        _table(
            ["key", "API", *[_target_label(t) for t in targets], *[f"Kafka {r}" for r in releases]],
            rows,
        )
    )
    return "".join(parts)


def _cell_link(cell_ids, impl: str, version: str, rid: str) -> str:
    anchor = cell_ids.get((impl, version, rid))
    return f'<a href="#{anchor}">{_e(rid)}</a>' if anchor else _e(rid)


def _flakiness(model: dict[str, Any], cell_ids) -> str:
    parts = [f"<p>{_e(flakiness_summary(model))}</p>"]
    if model["flakiness"]:
        parts.append(_flaky_cells(model, cell_ids))
    if model.get("flaky_tests"):
        parts.append(_flaky_tests(model, cell_ids))
    return "".join(parts)


def _flaky_tests(model: dict[str, Any], cell_ids) -> str:
    rows = [
        f"<tr><td>{_e(f['implementation'])}</td><td>{_e(f['version'])}</td>"
        f"<td>{_e(f['setup'])}</td><td>{_e(f['test_id'])}</td>"
        f"<td>{_cell_link(cell_ids, f['implementation'], f['version'], f['requirement_id'])}</td>"
        f"<td>{_e('' if f['api_version'] is None else f['api_version'])}</td>"
        f'<td title="{_e(", ".join(o["run_id"] for o in f["outcomes"]))}">'
        f"{_e(outcomes_text(f))}</td><td>{_e(f['message'])}</td></tr>"
        for f in model["flaky_tests"]
    ]
    return "<h3>Flaky tests</h3>" + _table(
        [
            "implementation",
            "version",
            "set-up",
            "test",
            "requirement",
            "api version",
            "verdicts in run order",
            "message",
        ],
        rows,
    )


def _flaky_cells(model: dict[str, Any], cell_ids) -> str:
    rows = [
        f"<tr><td>{_e(f['implementation'])}</td><td>{_e(f['version'])}</td>"
        f"<td>{_cell_link(cell_ids, f['implementation'], f['version'], f['requirement_id'])}"
        f'</td><td>{_e(f["level"])}</td><td data-sort="{f["failure_rate"]}">'
        f"{percent(f['failure_rate'])}</td><td>{f['scored'] - f['passes']}/{f['scored']}</td>"
        f"<td>{'yes' if f['lone_failure'] else 'no'}</td>"
        f"<td>{_e(', '.join(f['failing_runs']))}</td></tr>"
        for f in model["flakiness"]
    ]
    return _table(
        [
            "implementation",
            "version",
            "requirement",
            "level",
            "failure rate",
            "not passed / scored runs",
            "lone failure",
            "runs not passing",
        ],
        rows,
    )


def _regressions(model: dict[str, Any], cell_ids) -> str:
    if not model["regressions"]:
        return "<p>No requirement that passed at one version fails at a later one.</p>"
    said = f"<p>{_e(REGRESSIONS)}</p>"
    rows = [
        f"<tr><td>{_e(r['implementation'])}</td>"
        f"<td>{_cell_link(cell_ids, r['implementation'], r['to_version'], r['requirement_id'])}"
        f"</td><td>{_e(r['level'])}</td><td>{_e(r['from_version'])}</td>"
        f'<td class="v-{r["from_verdict"]}">{_e(r["from_verdict"])}</td>'
        f'<td>{_e(r["to_version"])}</td><td class="v-{r["to_verdict"]}">{_e(r["to_verdict"])}</td>'
        "</tr>"
        for r in model["regressions"]
    ]
    return said + _table(
        [
            "implementation",
            "requirement",
            "level",
            "last passed in",
            "verdict",
            "fails in",
            "verdict",
        ],
        rows,
    )


def _diffs(model: dict[str, Any]) -> str:
    if not model["diffs"]:
        return "<p>No two runs to compare.</p>"
    parts = []
    for d in model["diffs"]:
        parts.append(
            f"<h3>{_e(d['run_a'])} &rarr; {_e(d['run_b'])}</h3><p>{d['same']} unchanged, "
            f"{d['changed']} changed, {d['only_a']} only in the first, {d['only_b']} only in "
            "the second.</p>"
        )
        if d["changes"]:
            rows = [
                f"<tr><td>{_e(c['test_id'])}</td><td>{_e(c['requirement_id'])}</td>"
                f"<td>{_e(c['api_version'])}</td>"
                f'<td class="v-{c["verdict_a"] or "SKIP"}">{_e(c["verdict_a"] or "(absent)")}</td>'
                f'<td class="v-{c["verdict_b"] or "SKIP"}">{_e(c["verdict_b"] or "(absent)")}</td>'
                f'<td class="msg">{_e(c["message"])}</td></tr>'
                for c in d["changes"]
            ]
            parts.append(
                _table(["test", "requirement", "api version", "before", "after", "message"], rows)
            )
    return "".join(parts)


def _runs(model: dict[str, Any]) -> str:
    rows = [
        f"<tr><td>{_e(r['run_id'])}</td><td>{_e(r['implementation'])}</td>"
        f"<td>{_e(r['version'])}</td><td>{_e(r.get('setup', ''))}</td>"
        f"<td>{_e(r['started_at'])}</td><td>{_e(r['ended_at'])}</td>"
        f"<td>{r['records']}</td><td>{r['bad_records']}</td><td>{_e(r['suite_version'])}</td>"
        f"<td>{_e(r['spec_release'])}</td><td>{_e(r['hypothesis_profile'])}</td>"
        f"<td>{_e(r['hypothesis_seed'])}</td></tr>"
        for r in model["runs"]
    ]
    return _table(
        [
            "run",
            "implementation",
            "version",
            "set-up",
            "started",
            "ended",
            "records",
            "bad lines",
            "suite",
            "specs",
            "profile",
            "seed",
        ],
        rows,
    ) + "".join(
        f'<p class="skipped">Skipped: {_e(k["target"])}: {_e(k["why"])}</p>'
        for k in model.get("skipped", [])
    )


def _problems(model: dict[str, Any]) -> str:
    if not model["problems"]:
        return "<p>Every line of every run was a valid record.</p>"
    items = "".join(
        f"<li><code>{_e(p['file'])}:{p['line']}</code>: {_e(p['message'])}</li>"
        for p in model["problems"]
    )
    return (
        f"<p>{model['records']['bad']} of {model['records']['lines']} lines were not valid "
        f"records and are not counted; the rest are.</p><ul>{items}</ul>"
    )


def _requirement_texts(model: dict[str, Any]) -> str:
    parts = []
    for rid, req in model["requirements"].items():
        if req.get("known"):
            body = (
                f'<p>{_e(req.get("statement"))}</p><p class="muted">{_e(req.get("level"))}'
                f" &middot; listener {_e(req.get('listener'))} &middot; {_e(req.get('basis'))}"
                f" &middot; {_e(req.get('feature_title'))} ({_e(req.get('status'))})</p>"
            )
            if req.get("reading"):
                body += f'<p class="muted">Reading: {_e(req["reading"])}</p>'
        else:
            body = (
                '<p class="muted">No text for this requirement in specs/requirements: shown by '
                f"its id only (feature {_e(req['feature'])}, level {_e(req['level'])}).</p>"
            )
        parts.append(f'<div class="req" id="{_req_anchor(rid)}"><b>{_e(rid)}</b>{body}</div>')
    return "".join(parts)


def _outages(model: dict[str, Any]) -> str:
    """Before anything else: each run during which the target went down (its verdicts after that
    point are a restarted target's, or NOT_EVALUATED), then each set-up defect a run met (an API
    version whose answers set-up could not use, with how many tests it touched: issue 42)."""
    out = ""
    for cls, lines in (
        ("outages", outage_lines(model)),
        ("setup-defects", setup_defect_lines(model)),
    ):
        if lines:
            items = "".join(f"<li>{_e(line)}</li>" for line in lines)
            out += f'<div class="{cls} v-FAIL"><ul>{items}</ul></div>'
    return out


def _clients(model: dict[str, Any]) -> str:
    labels, grid = client_grid(model)
    if not grid:
        return f'<p class="muted">{_e(NONE_JUDGED)}</p>'
    rows = []
    for rid, level, cells in grid:
        tds = "".join(
            '<td class="muted">-</td>'
            if c is None
            else f'<td class="cell v-{c["verdict"]}" data-sort="{c["verdict"]}" '
            f'title="{_e(c["message"] or c["test_id"])}">{_e(c["verdict"])}</td>'
            for c in cells
        )
        rows.append(f"<tr><td>{_e(rid)}</td><td>{_e(level)}</td>{tds}</tr>")
    notes = "".join(
        f'<div><b>{_e(label)}</b> &middot; {_e(rid)} &middot; <span class="v-{verdict}">'
        f'{_e(verdict)}</span><pre class="msg">{_e(message)}</pre></div>'
        for label, rid, verdict, message in client_notes(model)
    )
    return _table(["requirement", "level", *labels], rows) + notes


def _not_judged(model: dict[str, Any]) -> str:
    """Advertised, not judged: what each run's target offers that no verdict covers."""
    lines = not_judged_lines(model)
    if lines is None:
        return ""
    items = "".join(f"<li>{_e(line)}</li>" for line in lines) or f"<li>{_e(ALL_JUDGED)}</li>"
    return f'<h3 id="not-judged">{_e(NOT_JUDGED_TITLE)}</h3><ul>{items}</ul>'


def render_html(
    model: dict[str, Any], *, title: str, plot_svg: str | None, badges: dict[str, str]
) -> str:
    """The complete report page."""
    cell_ids = {
        (c["implementation"], c["version"], c["requirement_id"]): f"cell-{n}"
        for n, c in enumerate(model["cells"])
    }
    sections = [
        (
            "summary",
            "Summary",
            _summary(model, badges)
            + (
                f'<figure id="pass-rate">{plot_svg}<figcaption>Pass rate per feature across '
                "versions, over the judged requirements; a hollow marker where fewer than half "
                "of the feature's requirements were judged</figcaption></figure>"
                if plot_svg
                else ""
            ),
        ),
        ("requirements", "Requirement matrix", _matrix(model, cell_ids)),
        ("clients", "Clients", _clients(model)),
        ("apis", "API support", _apis(model) + _not_judged(model)),
        ("flakiness", "Flakiness", _flakiness(model, cell_ids)),
        ("regressions", "Regressions", _regressions(model, cell_ids)),
        ("diffs", "Run diffs", _diffs(model)),
        ("runs", "Runs", _runs(model)),
        ("problems", "Input problems", _problems(model)),
        ("cells", "Cell details", _details(model, cell_ids)),
        ("texts", "Requirement texts", _requirement_texts(model)),
    ]
    nav = "".join(f'<a href="#{sid}">{_e(name)}</a>' for sid, name, _ in sections)
    body = "".join(
        f'<section id="{sid}"><h2>{_e(name)}</h2>{html}</section>' for sid, name, html in sections
    )
    records = model["records"]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}{_verdict_css()}</style></head><body>"
        f"<header><h1>{_e(title)}</h1>{_outages(model)}<p>{len(model['runs'])} runs, "
        f"{len(model['targets'])} implementation versions, {records['counted']} result records "
        f"counted ({records['bad']} bad lines) &middot; generated {_e(model['generated_at'])}</p>"
        f'<p class="muted">{_e(UNITS)}</p>'
        f"</header><nav>{nav}</nav><main>{body}</main><script>{JS}</script></body></html>\n"
    )
