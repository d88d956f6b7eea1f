"""The pass-rate plot along Apache Kafka's release axis (21 releases, as published) in Chromium at
common widths: every label drawn inside the window, nothing cut off at the right edge, and a
screenshot that shows the plot (issue 41: the published plot was cut off at the right)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from PIL import Image

from conformance.report.plots import pass_rate_svg
from tests.report import chromium

RELEASES = [
    "2.8.2", "3.0.2", "3.1.2", "3.2.3", "3.3.2", "3.4.1", "3.5.2", "3.6.2", "3.7.2", "3.8.1",
    "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0",
]  # fmt: skip
FEATURES = ["groups", "txn", "durability"]
#: writes, after layout, how far right the plot and its rightmost text reach, and the window's width
MEASURE = """<script>
const svg = document.querySelector('svg');
const texts = [...svg.querySelectorAll('text')].map(t => t.getBoundingClientRect().right);
document.body.dataset.measured = JSON.stringify({
  window: document.documentElement.clientWidth, svg: svg.getBoundingClientRect().right,
  text: Math.max(...texts), labels: [...svg.querySelectorAll('text')].map(t => t.textContent)});
</script>"""


def model() -> dict:
    """Two implementations, one of them with the release axis (KRaft), rates made up."""
    targets, summary = [], []
    for impl, versions in (("apache-kafka", RELEASES), ("reference", ["0.1.0"])):
        for rank, version in enumerate(versions):
            targets.append({"implementation": impl, "version": version, "rank": rank})
            features = {
                f: {
                    "pass_rate": (rank + k) % 10 / 10,
                    "passed": 8,
                    "scored": 10,
                    "requirements": 10,
                }
                for k, f in enumerate(FEATURES)
            }
            summary.append({"implementation": impl, "version": version, "features": features})
    return {"targets": targets, "summary": summary, "features": FEATURES}


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    svg = pass_rate_svg(model())
    assert svg is not None
    path = tmp_path_factory.mktemp("plot") / "plot.html"
    path.write_text(f"<!doctype html><html><body>{svg}{MEASURE}</body></html>")
    return path


def test_the_release_axis_fits_a_narrow_window(page: Path) -> None:
    """800 px: narrower than the plot's own size (about 1300 px for 16 releases)."""
    result = chromium.run(
        "--window-size=800,900", "--virtual-time-budget=2000", "--dump-dom", page.as_uri()
    )
    found = re.search(r'data-measured="([^"]*)"', result.stdout)
    assert found, result.stderr[-2000:]
    got = json.loads(found.group(1).replace("&quot;", '"'))
    assert got["svg"] <= got["window"] + 0.5, got
    assert got["text"] <= got["window"] + 0.5, got  # no label beyond the right edge
    assert set(RELEASES) <= set(got["labels"]), "a release missing on the axis"


def test_a_screenshot_shows_the_whole_plot(page: Path, tmp_path: Path) -> None:
    png = tmp_path / "plot.png"
    chromium.screenshot(page, png, 1280, 900)
    with Image.open(png) as image:
        rgb = image.convert("RGB")
        colours = rgb.getcolors(maxcolors=1 << 20)
        # the legend is the plot's rightmost part: drawn (not white) in the right fifth
        right = rgb.crop((int(0.8 * image.width), 0, image.width, image.height))
        right_colours = right.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 20  # a drawn plot, not a blank page
    assert right_colours is not None and len(right_colours) > 5
