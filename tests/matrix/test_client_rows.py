"""Client rows (issue 27): records whose subject is a client (KIP-42.R1-R7) are judged apart from
the broker target; both engines give the same ``clients`` rows, the broker's cells no longer
hold those requirements, and the report has a clients section with every non-PASS explained."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.matrix.job import compute
from conformance.matrix.one_run import one_run_model
from conformance.report.markdown import render_markdown
from tests.matrix.coverage_run import write_small_broker_run

JAVA = {"kind": "client", "implementation": "java", "version": "3.9.1"}
PYTHON = {"kind": "client", "implementation": "python", "version": "0.1.0"}


def _client_run(folder: Path) -> Path:
    """The small broker run plus client records: the suite's client and a Java release."""
    run = write_small_broker_run(folder)
    base = json.loads((run / "results.jsonl").read_text().splitlines()[0])
    extra = []
    for subject, verdicts in (
        (PYTHON, {"KIP-42.R2": "PASS", "KIP-42.R7": "PASS"}),
        (JAVA, {"KIP-42.R2": "FAIL", "KIP-42.R7": "UNSUPPORTED"}),
    ):
        for rid, verdict in verdicts.items():
            extra.append(
                {
                    **base,
                    "test_id": f"kip-42/client/{subject['implementation']}/{rid}",
                    "requirement_id": rid,
                    "feature": "kip-42",
                    "verdict": verdict,
                    "message": None if verdict == "PASS" else f"why {rid} is {verdict}",
                    "listener": "client-library",
                    "subject": subject,
                }
            )
    # the same requirement passing in a second test of the Java client: the worst verdict wins
    extra.append({**extra[-2], "test_id": "kip-42/client/java/other", "verdict": "PASS"})
    with (run / "results.jsonl").open("a") as out:
        out.writelines(json.dumps(r) + "\n" for r in extra)
    return run


def test_clients_are_rows_of_their_own_in_both_engines(spark, tmp_path: Path) -> None:
    run = _client_run(tmp_path / "runs")
    by_python = one_run_model(run)
    assert by_python is not None
    by_spark = compute(spark, [run], tmp_path / "spark")
    assert by_python["clients"] == by_spark["clients"]
    got = {
        (c["implementation"], c["version"], c["requirement_id"]): c for c in by_python["clients"]
    }
    assert {k: c["verdict"] for k, c in got.items()} == {
        ("java", "3.9.1", "KIP-42.R2"): "FAIL",
        ("java", "3.9.1", "KIP-42.R7"): "UNSUPPORTED",
        ("python", "0.1.0", "KIP-42.R2"): "PASS",
        ("python", "0.1.0", "KIP-42.R7"): "PASS",
    }
    assert got[("java", "3.9.1", "KIP-42.R2")]["records"] == 2
    assert got[("java", "3.9.1", "KIP-42.R2")]["message"] == "why KIP-42.R2 is FAIL"
    for model in (by_python, by_spark):
        assert not [c for c in model["cells"] if c["feature"] == "kip-42"]
        assert [c for c in model["cells"] if c["feature"] == "protocol"]
    page = render_markdown(by_python, title="t")
    clients = page[page.index("## Clients") : page.index("## API support")]
    assert "| KIP-42.R2 | MUST | FAIL | PASS |" in clients, clients
    assert "java 3.9.1 KIP-42.R7 UNSUPPORTED: why KIP-42.R7 is UNSUPPORTED" in clients


def test_a_run_without_clients_says_none_was_judged(tmp_path: Path) -> None:
    model = one_run_model(write_small_broker_run(tmp_path / "runs"))
    assert model is not None and model["clients"] == []
    assert "No client was judged" in render_markdown(model, title="t")
