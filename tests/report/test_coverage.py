"""Coverage beside every pass rate (issue 23): a rate is over the judged requirements, is always
given with how many were judged, and a feature where fewer than half were judged shows no bare
percentage in the HTML, the Markdown, the badge, the CSV or the plot."""

from __future__ import annotations

import csv
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.matrix.one_run import one_run_model
from conformance.report import render_all
from conformance.report.badges import badge_value
from conformance.report.plots import LOW_COVERAGE_NOTE
from conformance.report.verdict_style import coverage_counts, rate_text
from tests.matrix.coverage_run import JUDGED, REQUIREMENTS, write_small_broker_run
from tests.report import chromium


@st.composite
def counts(draw) -> tuple[int, int, int]:
    total = draw(st.integers(1, 60))
    judged = draw(st.integers(0, total))
    return draw(st.integers(0, judged)), judged, total


@given(counts())
def test_a_rate_is_given_only_with_its_coverage_and_only_over_half(c):
    passed, judged, total = c
    text = rate_text(passed, judged, total)
    assert text.startswith(f"{judged} of {total} judged")
    shows_rate = "%" in text
    assert shows_rate == (judged > 0 and 2 * judged >= total)
    assert (coverage_counts(passed, judged, total)[1] is not None) == shows_rate
    if shows_rate:
        rate = int(re.search(r"(\d+)%", text).group(1))  # type: ignore[union-attr]
        assert abs(rate - 100 * passed / judged) < 1
        assert (rate == 100) == (passed == judged)  # a failure never rounds up to 100%
    elif judged:
        assert f"{passed} pass" in text


@given(counts())
def test_a_badge_is_green_only_when_enough_was_judged(c):
    passed, judged, total = c
    text, colour = badge_value(
        {"version": "1.0", "must_passed": passed, "must_scored": judged, "must_requirements": total}
    )
    assert f"{judged} of {total}" in text
    if judged == 0 or 2 * judged < total:
        assert colour == "lightgrey" and "/" not in text
    else:
        assert f"{passed}/{judged} MUST met" in text
        assert (colour == "green") == (passed == judged)


@pytest.fixture(scope="module")
def small(tmp_path_factory) -> tuple[dict, dict[str, Path]]:
    """A small broker's run: broker-registration 2 of 11 judged (both PASS, 9 SKIP), protocol
    6 of 6 judged (5 PASS); its model and every rendering."""
    folder = tmp_path_factory.mktemp("small")
    model = one_run_model(write_small_broker_run(folder / "runs"))
    assert model is not None
    return model, render_all(model, folder / "report")


def test_the_model_gives_each_feature_its_coverage(small):
    model, _ = small
    (entry,) = model["summary"]
    broker = entry["features"]["broker-registration"]
    # the old fields stay (matrix.json only grows) ...
    assert (broker["requirements"], broker["scored"], broker["passed"]) == (11, 2, 2)
    assert broker["pass_rate"] == 1.0
    # ... and the coverage is beside them
    assert broker["judged"] == JUDGED and broker["coverage"] == pytest.approx(2 / 11)
    assert broker["low_coverage"] is True
    assert entry["features"]["protocol"]["low_coverage"] is False
    assert (entry["must_passed"], entry["must_scored"], entry["must_requirements"]) == (7, 8, 17)
    assert entry["must_low_coverage"] is True


def _summary_row(markdown: str) -> dict[str, str]:
    section = markdown[markdown.index("## Summary") : markdown.index("## Requirement matrix")]
    head, _, row = (line for line in section.splitlines() if line.startswith("|"))
    names = [c.strip() for c in head.strip("|").split("|")]
    return dict(zip(names, (c.strip() for c in row.strip("|").split("|")), strict=True))


def test_markdown_shows_no_bare_rate_for_2_of_11_judged(small):
    _, files = small
    row = _summary_row(files["markdown"].read_text())
    assert row["broker-registration"] == (
        f"{JUDGED} of {REQUIREMENTS} judged, 2 pass (under half judged: no rate)"
    )
    assert "%" not in row["broker-registration"]
    assert row["protocol"] == "6 of 6 judged: 83%"
    assert row["MUST requirements met"] == "8 of 17 judged, 7 pass (under half judged: no rate)"
    assert "100%" not in "".join(row.values())


def test_html_shows_no_bare_rate_for_2_of_11_judged(small):
    _, files = small
    page = files["html"].read_text()
    summary = page[page.index('<section id="summary">') : page.index('<section id="requirements">')]
    item = re.search(r"<li>(<span[^>]*>broker-registration [^<]*</span>)</li>", summary)
    assert item is not None
    assert item.group(1) == (
        '<span class="low-coverage">broker-registration 2 of 11 judged, 2 pass '
        "(under half judged: no rate)</span>"
    )
    assert "<span>protocol 6 of 6 judged: 83%</span>" in summary
    # no rate shown as text (the plot's SVG may say width="100%": an attribute, not a rate)
    shown = re.sub(r"<svg.*?</svg>", " ", summary, flags=re.S)
    assert "100%" not in re.sub(r"<[^>]+>", " ", shown)


def test_html_summary_in_a_browser(small):
    _, files = small
    dump = chromium.dump_dom(files["html"])
    summary = dump[dump.index('id="summary"') : dump.index('id="requirements"')]
    text = re.sub(r"<[^>]+>", " ", summary)
    assert "broker-registration 2 of 11 judged, 2 pass (under half judged: no rate)" in text
    assert "MUST requirements met" in text and "100%" not in text


def test_badge_csv_and_plot_of_a_low_coverage_target(small):
    _, files = small
    badge = " ".join(ET.fromstring(files["badge_small"].read_text()).itertext())
    assert "1.0.0: only 8 of 17 MUST judged" in badge and "%" not in badge
    with files["features_csv"].open() as f:
        rows = {r["feature"]: r for r in csv.DictReader(f)}
    broker = rows["broker-registration"]
    assert (broker["requirements"], broker["judged"], broker["passed"]) == ("11", "2", "2")
    assert broker["coverage"] == "0.1818" and broker["pass_rate"] == ""
    assert rows["protocol"]["pass_rate"] == "0.8333"
    svg = files["plot"].read_text()
    assert LOW_COVERAGE_NOTE in svg
    assert 'id="low-coverage' in svg  # the hollow marker over broker-registration's point


def test_the_plot_has_no_note_when_every_point_is_covered(tmp_path):
    model = one_run_model(write_small_broker_run(tmp_path / "runs"))
    assert model is not None
    del model["summary"][0]["features"]["broker-registration"]
    svg = render_all(model, tmp_path / "report")["plot"].read_text()
    assert LOW_COVERAGE_NOTE not in svg and 'id="low-coverage' not in svg
