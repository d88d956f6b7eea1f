"""Markdown, JSON, CSV, badges and the plot: the same model as the HTML."""

from __future__ import annotations

import csv
import json
import xml.etree.ElementTree as ET
from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from conformance.report import model_json
from conformance.report.html import render_html
from conformance.report.markdown import render_markdown

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=12,
)


def test_json_is_the_model(fixture_output, model):
    assert json.loads(fixture_output.files["json"].read_text())["cells"] == json.loads(
        json.dumps(model["cells"], default=str)
    )


@given(st.dictionaries(st.text(), json_values | st.just(datetime(2026, 1, 1, tzinfo=UTC))))
def test_json_text_is_exactly_the_model(model):
    text = model_json(model)
    assert json.loads(text) == json.loads(json.dumps(model, default=str))
    for key, value in model.items():  # a line per element of a top-level list
        if isinstance(value, list) and value:
            assert f" {json.dumps(key)}: [\n  {json.dumps(value[0], default=str)}" in text


def test_markdown_tables(fixture_output):
    text = fixture_output.files["markdown"].read_text()
    assert (
        "| requirement | level | reference 0.1.0 | reference 0.2.0 | tansu 0.5.1 | tansu 0.6.0 |"
        in text
    )
    assert (
        "| KIP-42.R1 | MUST | PASS 2/2 | PASS 2/2 | PASS 2/2 | FLAKY 1/3 failed (lone failure) |"
        in text
    )
    assert "| reference | KIP-590.R1 | 0.1.0 (PASS) | 0.2.0 | FAIL |" in text


def test_markdown_flakiness_lists_flaky_tests_and_never_claims_none(fixture_output):
    text = fixture_output.files["markdown"].read_text()
    section = text[text.index("## Flakiness") : text.index("## Regressions")]
    assert "No requirement" not in section
    assert section.split("\n")[2] == (
        "2 requirement cell(s) FLAKY; 4 test(s) with mixed outcomes across runs of the same "
        "target set-up."
    )
    assert (
        "| tansu | 0.6.0 | tansu | protocol/api-versions/v3/answered | PROTOCOL.R6 | 3 | "
        "FAIL -> PASS -> PASS |" in section
    )
    assert (
        "| reference | 0.1.0 | reference | kip-78/zookeeper/cluster-id/znode | KIP-78.R8 |  | "
        in section
    )


def test_csv_rows_per_cell(fixture_output, model):
    with fixture_output.files["requirements_csv"].open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == len(model["cells"])
    row = next(r for r in rows if r["implementation"] == "tansu" and r["version"] == "0.6.0"
               and r["requirement_id"] == "PROTOCOL.R7")  # fmt: skip
    assert (row["verdict"], row["fail"], row["scored"]) == ("FAIL", "3", "3")
    with fixture_output.files["apis_csv"].open() as f:
        apis = list(csv.DictReader(f))
    metadata = next(r for r in apis if r["implementation"] == "tansu" and r["version"] == "0.5.1"
                    and r["api_key"] == "3")  # fmt: skip
    assert (metadata["advertised_min"], metadata["advertised_max"]) == ("0", "11")


def test_badges_are_svg_per_implementation(fixture_output):
    for impl, expected in (
        ("reference", "0.2.0: 18/20 MUST met, 20 of 20 judged"),
        ("tansu", "0.6.0: 10/13 MUST met, 13 of 20 judged"),
    ):
        svg = fixture_output.files[f"badge_{impl}"].read_text()
        root = ET.fromstring(svg)
        assert root.tag.endswith("svg")
        assert expected in "".join(root.itertext())


def test_plot_is_an_svg_with_one_panel_per_implementation(fixture_output):
    svg = fixture_output.files["plot"].read_text()
    root = ET.fromstring(svg)
    text = " ".join(root.itertext())
    assert "reference" in text and "tansu" in text and "kip-78" in text
    html = fixture_output.files["html"].read_text()
    assert '<figure id="pass-rate"><svg' in html  # embedded inline, not linked


def test_plot_scales_to_the_page_instead_of_being_cut_off(fixture_output):
    """Issue 41: no fixed width in points (Chromium cut it at the right edge); the viewBox kept."""
    svg = fixture_output.files["plot"].read_text()
    root = ET.fromstring(svg)
    assert root.get("width") == "100%" and root.get("height") is None
    assert "max-width:100%" in root.get("style") and len(root.get("viewBox").split()) == 4


def test_a_skipped_run_is_in_the_run_list(model):
    """A run publication skipped (it recorded nothing twice) is said where the runs are listed."""
    why = "recorded nothing twice (no whole manifest.json)"
    skipped = {
        **model,
        "skipped": [{"target": "kafka:3.3.2?store=zookeeper", "select": None, "why": why}],
    }
    html = render_html(skipped, title="t", plot_svg=None, badges={})
    assert f"Skipped: kafka:3.3.2?store=zookeeper: {why}" in html
    text = render_markdown(skipped, title="t")
    assert f"## Skipped runs\n\n- `kafka:3.3.2?store=zookeeper`: {why}" in text
    assert "Skipped" not in render_markdown(model, title="t")
