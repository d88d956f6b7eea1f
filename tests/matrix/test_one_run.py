"""One run's report without Spark: the Python engine gives the Spark job's ``matrix.json`` for
fixture runs (one run at a time; only the generation time and stage timings may differ),
leaves to Spark a run whose lines only Spark's bulk check can judge, and ``render_run_report``
starts no JVM for a plain run, nor imports pyspark."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from conformance.matrix.job import compute
from conformance.matrix.one_run import one_run_model, render_run_report
from tests.matrix.coverage_run import write_small_broker_run
from tests.matrix.spark_support import FIXTURE_RUNS

RUNS = sorted(p.name for p in FIXTURE_RUNS.iterdir() if (p / "manifest.json").is_file())
#: Compared with Spark (a Spark job per run costs seconds): a reference run (PASS, UNSUPPORTED,
#: SKIP), a tansu run with every scored and not-applicable verdict and failure details, and the
#: run with a malformed line. The other fixture runs hold nothing these do not.
COMPARED = (
    "20250303T090000Z-reference-0.1.0-1",
    "20250304T140000Z-tansu-0.5.1-1",
    "20250318T180000Z-tansu-0.6.0-3",
)
VARYING = ("generated_at", "timings")


def _comparable(model: dict) -> dict:
    """The model as matrix.json holds it, without what varies from one computation to the next."""
    plain = json.loads(json.dumps(model, default=str))
    return {k: v for k, v in plain.items() if k not in VARYING}


@pytest.mark.parametrize("name", COMPARED)
def test_python_and_spark_give_the_same_matrix(spark, tmp_path, name):
    run = FIXTURE_RUNS / name
    by_spark = _comparable(compute(spark, [run], tmp_path / "spark"))
    by_python = one_run_model(run)
    assert by_python is not None
    assert _comparable(by_python) == by_spark
    # the comparison covers what the report shows: cells, failures, the API matrix
    assert by_spark["cells"] and by_spark["api_support"]["targets"]


def test_python_and_spark_agree_on_coverage(spark, tmp_path):
    """A feature with 2 of its 11 requirements judged: both engines give the same coverage."""
    run = write_small_broker_run(tmp_path / "runs")
    by_spark = _comparable(compute(spark, [run], tmp_path / "spark"))
    by_python = one_run_model(run)
    assert by_python is not None
    assert _comparable(by_python) == by_spark
    broker = by_spark["summary"][0]["features"]["broker-registration"]
    assert (broker["judged"], broker["requirements"], broker["low_coverage"]) == (2, 11, True)


def test_the_compared_runs_cover_every_verdict_and_a_malformed_line():
    models = [one_run_model(FIXTURE_RUNS / name) for name in COMPARED]
    assert all(m is not None for m in models)
    verdicts = {c["verdict"] for m in models for c in m["cells"]}  # type: ignore[index]
    every = {c["verdict"] for n in RUNS for c in one_run_model(FIXTURE_RUNS / n)["cells"]}  # type: ignore[index]
    assert verdicts == every and {"PASS", "FAIL", "ERROR", "NONSTRICT", "SKIP"} <= verdicts
    assert any(c["details"] for m in models for c in m["cells"])  # type: ignore[index]
    assert any(m["records"]["bad"] for m in models)  # type: ignore[index]


def test_a_line_only_spark_judges_is_left_to_spark(tmp_path):
    run = tmp_path / RUNS[0]
    shutil.copytree(FIXTURE_RUNS / RUNS[0], run)
    lines = (run / "results.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    record["unexpected"] = 1  # the strict reader refuses an unknown key; Spark's reader ignores it
    lines[0] = json.dumps(record)
    (run / "results.jsonl").write_text("\n".join(lines) + "\n")
    assert one_run_model(run) is None


def test_a_runs_report_starts_no_spark(tmp_path, capsys):
    html = render_run_report(FIXTURE_RUNS / RUNS[0], tmp_path / "report")
    assert html == tmp_path / "report" / "report.html" and html.is_file()
    assert (tmp_path / "report" / "matrix.json").is_file()
    # no Spark job ran: neither its log nor its Parquet dataset is there
    assert not (tmp_path / "report" / "spark.log").exists()
    assert not (tmp_path / "report" / "results.parquet").exists()
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no Spark" in out


#: run in a fresh interpreter: this one has imported pyspark for the Spark comparisons
NO_PYSPARK = """
import sys
from pathlib import Path
from conformance.matrix.one_run import render_run_report
render_run_report(Path(sys.argv[1]), Path(sys.argv[2]))
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("pyspark", "py4j"))
print(loaded)
sys.exit(1 if loaded else 0)
"""


def test_a_runs_report_does_not_import_pyspark(tmp_path):
    """The one-run path (what ``run`` and the plugin call) imports the engine-neutral model
    only; the Spark job, and pyspark with it, stays unloaded."""
    proc = subprocess.run(
        [sys.executable, "-c", NO_PYSPARK, str(FIXTURE_RUNS / RUNS[0]), str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (tmp_path / "r" / "report.html").is_file()
    # the check can fail: the Spark job's module loads pyspark
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, conformance.matrix.job; print('pyspark' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.stdout.strip() == "True", proc.stderr
