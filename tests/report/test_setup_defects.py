"""A run's set-up defects (issue 42: an API version whose answers set-up steps could not use)
open the HTML and Markdown reports, beside the outages, with how many tests they touched."""

from __future__ import annotations

import json
import shutil

from conformance.matrix.one_run import one_run_model
from conformance.report.html import render_html
from conformance.report.markdown import render_markdown
from tests.matrix.spark_support import FIXTURE_RUNS
from tests.matrix.test_one_run import COMPARED

DEFECT = {
    "api_key": 3,
    "api": "Metadata",
    "version": 12,
    "node": "127.0.0.1:9092",
    "requirement": "PROTOCOL.R3",
    "test_id": "kip-78/metadata/v2/cluster-id/format",
    "reason": "1 byte left over after the body",
    "tests": 106,
}
OUTAGE = {"test_id": "protocol/robustness/invalid-varint", "reason": "refused", "restarted": True}


def _model(tmp_path, **manifest_extra):
    run = tmp_path / COMPARED[0]
    shutil.copytree(FIXTURE_RUNS / COMPARED[0], run)
    manifest = json.loads((run / "manifest.json").read_text())
    (run / "manifest.json").write_text(json.dumps({**manifest, **manifest_extra}))
    model = one_run_model(run)
    assert model is not None
    return model


def test_setup_defects_come_first_beside_the_outages(tmp_path) -> None:
    model = _model(tmp_path, setup_defects=[DEFECT], outages=[OUTAGE])
    assert model["runs"][0]["setup_defects"] == [DEFECT]
    html = render_html(model, title="t", plot_svg=None, badges={})
    markdown = render_markdown(model, title="t")
    for text, summary in ((html, 'id="summary"'), (markdown, "## Summary")):
        defect = text.index("set-up defect: Metadata v12 from 127.0.0.1:9092")
        assert "106 test(s) touched" in text[defect : defect + 400]
        assert "PROTOCOL.R3" in text[defect : defect + 400]
        assert text.index("invalid-varint") < defect < text.index(summary)


def test_no_setup_defect_line_without_one(tmp_path) -> None:
    model = _model(tmp_path)  # an older manifest: no setup_defects key at all
    assert model["runs"][0]["setup_defects"] == []
    html = render_html(model, title="t", plot_svg=None, badges={})
    assert "set-up defect" not in html and "setup-defects" not in html
    assert "set-up defect" not in render_markdown(model, title="t")
