"""Renderings of the matrix model: HTML, Markdown, JSON, CSV, badges and plots.

Every output is rendered from the one model that ``conformance.matrix.job.compute`` returns, so
they cannot disagree. The report only renders a model: it never imports the matrix (the matrix
job calls ``render_all``; an import-linter contract holds the direction).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEFAULT_TITLE = "Kafka protocol conformance"


def render_all(
    model: dict[str, Any], out_dir: Path, *, title: str | None = None
) -> dict[str, Path]:
    """Write every rendering into ``out_dir``; returns name -> path."""
    from conformance.report.badges import badge_svgs
    from conformance.report.html import render_html
    from conformance.report.markdown import render_markdown
    from conformance.report.plots import pass_rate_svg
    from conformance.report.tables import write_csvs

    title = title or DEFAULT_TITLE
    out_dir.mkdir(parents=True, exist_ok=True)
    files: dict[str, Path] = {}
    badges = badge_svgs(model)
    badge_dir = out_dir / "badges"
    badge_dir.mkdir(exist_ok=True)
    for impl, svg in badges.items():
        files[f"badge_{impl}"] = badge_dir / f"{impl}.svg"
        files[f"badge_{impl}"].write_text(svg, encoding="utf-8")
    plot = pass_rate_svg(model)
    if plot is not None:
        files["plot"] = out_dir / "pass-rate.svg"
        files["plot"].write_text(plot, encoding="utf-8")
    files["html"] = out_dir / "report.html"
    files["html"].write_text(
        render_html(model, title=title, plot_svg=plot, badges=badges), encoding="utf-8"
    )
    files["markdown"] = out_dir / "report.md"
    files["markdown"].write_text(render_markdown(model, title=title), encoding="utf-8")
    files.update(write_csvs(model, out_dir))
    files["json"] = out_dir / "matrix.json"
    files["json"].write_text(model_json(model), encoding="utf-8")
    return files


def model_json(model: dict[str, Any]) -> str:
    """``matrix.json``'s text: a line per top-level entry and per element of a top-level list or
    object, each compact. Diffs stay readable, and every piece goes through json's C encoder
    (an indented dump takes its pure-Python one: 60% of the rendering of 20,000 cells)."""
    enc = json.JSONEncoder(default=str, ensure_ascii=True).encode
    entries = []
    for key, value in model.items():
        if isinstance(value, list) and value:
            body = ",\n".join(f"  {enc(v)}" for v in value)
            entries.append(f" {enc(key)}: [\n{body}\n ]")
        elif isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
            body = ",\n".join(f"  {enc(k)}: {enc(v)}" for k, v in value.items())
            entries.append(f" {enc(key)}: {{\n{body}\n }}")
        else:
            entries.append(f" {enc(key)}: {enc(value)}")
    return "{\n" + ",\n".join(entries) + "\n}\n"
