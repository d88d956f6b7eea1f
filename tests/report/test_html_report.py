"""The HTML report in a real browser: its tables, links, sorting and what it looks like."""

from __future__ import annotations

import json
import re
from html import escape
from html.parser import HTMLParser
from pathlib import Path

import pytest
from PIL import Image

from conformance import specs
from conformance.report.verdict_style import COLOURS
from tests.report import chromium


class Dom(HTMLParser):
    """The parts of a dumped DOM the tests look at."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.tables = 0
        self.sortable = 0
        self.cells: list[tuple[str, str]] = []  # (class, href) of matrix cells
        self.external: list[str] = []
        self._cell: str | None = None
        self.texts: list[str] = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.ids.add(a["id"])
        if tag == "table":
            self.tables += 1
            self.sortable += "sortable" in (a.get("class") or "")
        if tag == "td" and "cell" in (a.get("class") or "").split():
            self._cell = a["class"]
        if tag == "a" and a.get("href"):
            self.links.append(a["href"])
            if self._cell is not None:
                self.cells.append((self._cell, a["href"]))
                self._cell = None
        for key in ("src", "href"):
            value = a.get(key) or ""
            if re.match(r"(https?:)?//", value):
                self.external.append(value)
        if tag == "link" or (tag == "script" and "src" in a):
            self.external.append(f"<{tag}>")

    def handle_data(self, data):
        self.texts.append(data)


@pytest.fixture(scope="module")
def html_path(fixture_output) -> Path:
    return fixture_output.files["html"]


@pytest.fixture(scope="module")
def dom(html_path) -> Dom:
    parsed = Dom()
    parsed.feed(chromium.dump_dom(html_path))
    return parsed


def test_matrix_tables_and_cells(dom, model):
    # one sortable table per feature in the requirement matrix, plus summary, APIs, ...
    assert dom.sortable == dom.tables >= len(model["features"]) + 5
    assert len(dom.cells) == len(model["cells"]) == 88
    classes = {cls.split()[-1] for cls, _ in dom.cells}
    assert {"v-PASS", "v-FAIL", "v-FLAKY", "v-UNSUPPORTED", "v-PROPOSAL_ABSENT"} <= classes


def test_every_link_resolves_in_the_page_and_nothing_is_fetched(dom):
    assert dom.external == []
    internal = [h for h in dom.links if h.startswith("#")]
    assert internal == dom.links
    missing = sorted({h[1:] for h in internal} - dom.ids)
    assert missing == []


def test_cells_link_to_messages_and_requirement_texts(html_path, dom, model):
    page = html_path.read_text()
    # the lone failure cell -> its detail -> the failure message and the requirement text
    match = re.search(r'<td class="cell v-FLAKY"[^>]*><a href="#(cell-\d+)">FLAKY 1/3 failed '
                      r"\(lone failure\)</a>", page)  # fmt: skip
    assert match
    detail = page[page.index(f'id="{match.group(1)}"') :]
    detail = detail[: detail.index('<div class="detail"', 10)]
    assert 'href="#req-KIP-42.R1"' in detail
    assert "onSend skipped on the retry" in detail
    assert "req-KIP-42.R1" in dom.ids
    requirement = page[page.index('id="req-KIP-42.R1"') :]
    requirement = requirement[: requirement.index("</div>")]
    statement = model["requirements"]["KIP-42.R1"].get("statement")
    if statement:  # the text from specs/requirements/kip-42.json
        assert escape(statement) in requirement
    else:
        assert "No text for this requirement" in requirement


def test_flaky_tests_are_listed_and_marked_in_their_cells(html_path, dom):
    page = html_path.read_text()
    section = page[page.index('<section id="flakiness">') :]
    section = section[: section.index("</section>")]
    assert "No requirement" not in section and "Flaky tests" in section
    assert (
        "protocol/api-versions/v3/answered" in section and "FAIL -&gt; PASS -&gt; PASS" in section
    )
    # the FAIL 0/3 cell of PROTOCOL.R6 (tansu 0.6.0) carries the mark that leads there
    marked = re.findall(
        r'<td class="cell v-(\w+)"[^>]*><a href="#cell-\d+">([^<]*)</a>'
        r'(?: <span class="flag"[^>]*>[^<]*</span>)? <a class="flag" href="#flakiness"',
        page,
    )
    assert sorted(marked) == [
        ("FAIL", "FAIL 0/3"),
        ("FLAKY", "FLAKY 1/2 failed"),
        ("FLAKY", "FLAKY 1/3 failed (lone failure)"),
        ("PASS", "PASS 1/1"),
    ]


def test_requirement_without_text_is_shown_by_id(spark, tmp_path):
    from conformance.matrix.job import run_matrix
    from tests.matrix.spark_support import FIXTURE_RUNS

    kips = tmp_path / "kips"
    kips.mkdir()
    kip78 = json.loads((specs.REQUIREMENTS / "kip-78.json").read_text())
    kip78["requirements"] = [{**kip78["requirements"][0], "statement": "The cluster id is served."}]
    (kips / "kip-78.json").write_text(json.dumps(kip78))
    out = run_matrix(
        [FIXTURE_RUNS / "20250303T090000Z-reference-0.1.0-1"], tmp_path / "r", spark=spark,
        kips_dir=kips,
    )  # fmt: skip
    reqs = out.model["requirements"]
    assert reqs["KIP-78.R1"]["statement"] == "The cluster id is served."
    assert reqs["KIP-42.R1"]["known"] is False
    page = out.files["html"].read_text()
    text = page[page.index('id="req-KIP-42.R1"') :][:400]
    assert "No text for this requirement" in text
    # the single run's report went through the same renderers: every output is there
    assert {"markdown", "json", "requirements_csv", "apis_csv", "badge_reference"} <= set(out.files)


def test_sorting_by_a_column(html_path, tmp_path):
    # Click the "requirement" heading of the protocol table twice (descending) and dump.
    page = html_path.read_text().replace(
        "</body>",
        "<script>var h=document.querySelector('#feature-protocol + div th');"
        "h.click();h.click();</script></body>",
    )
    sorted_page = tmp_path / "sorted.html"
    sorted_page.write_text(page)
    dump = chromium.dump_dom(sorted_page)
    table = dump[dump.index('id="feature-protocol"') :]
    table = table[: table.index("</table>")]
    order = re.findall(r'href="#req-(PROTOCOL\.R\d+)"', table)
    assert order == sorted(order, reverse=True)
    assert "sorted-desc" in table


def test_screenshot_shows_a_coloured_report(html_path, tmp_path):
    png = tmp_path / "report.png"
    chromium.screenshot(html_path, png, 1280, 1800)
    with Image.open(png) as image:
        assert image.format == "PNG"
        assert image.size == (1280, 1800)
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50  # not a blank or uniform page
    present = {c for _, c in colours}

    def rgb_of(hex_colour: str) -> tuple[int, int, int]:
        return tuple(int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]

    # the verdict colours of the matrix are painted
    for verdict in ("PASS", "FAIL", "FLAKY", "PROPOSAL_ABSENT"):
        assert rgb_of(COLOURS[verdict][0]) in present, verdict


def test_a_single_runs_report_through_the_same_code(spark, tmp_path):
    from conformance.matrix.one_run import render_run_report
    from tests.matrix.spark_support import FIXTURE_RUNS

    run = FIXTURE_RUNS / "20250318T160000Z-tansu-0.6.0-2"
    html = render_run_report(run, tmp_path / "report", spark=spark)
    assert html == tmp_path / "report" / "report.html"
    page = html.read_text()
    assert "1 runs, 1 implementation versions, 29 result records counted" in page
    assert "FAIL 0/1" in page and "onSend skipped on the retry" in page
    assert (tmp_path / "report" / "matrix.json").is_file()
