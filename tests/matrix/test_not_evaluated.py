"""NOT_EVALUATED (the target went down mid-run and stayed down) flows through both engines alike:
never scored, never a failure, and the run's outages reach the report model."""

from __future__ import annotations

import json
import shutil

from conformance.matrix.job import compute
from conformance.matrix.one_run import one_run_model
from tests.matrix.spark_support import FIXTURE_RUNS
from tests.matrix.test_one_run import COMPARED, _comparable

UNREACHABLE = "not evaluated: target unreachable since protocol/robustness/invalid-varint"


def test_not_evaluated_records_and_outages_give_the_same_model_in_spark_and_python(
    spark, tmp_path
) -> None:
    run = tmp_path / COMPARED[0]
    shutil.copytree(FIXTURE_RUNS / COMPARED[0], run)
    results = run / "results.jsonl"
    records = [json.loads(line) for line in results.read_text().splitlines()]
    cut = 2 * len(records) // 3  # the target went down before the last third
    for r in records[cut:]:
        r.update(verdict="NOT_EVALUATED", message=UNREACHABLE, observed=None)
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    manifest = json.loads((run / "manifest.json").read_text())
    outages = [{"test_id": records[cut - 1]["test_id"], "reason": "refused", "restarted": False}]
    manifest["outages"] = outages
    (run / "manifest.json").write_text(json.dumps(manifest))

    by_python = one_run_model(run)
    by_spark = _comparable(compute(spark, [run], tmp_path / "spark"))
    assert by_python is not None and _comparable(by_python) == by_spark
    unjudged = [c for c in by_spark["cells"] if c["verdict"] == "NOT_EVALUATED"]
    assert unjudged and all(c["scored"] == 0 and not c["failing_runs"] for c in unjudged)
    assert by_spark["runs"][0]["outages"] == outages
    [summary] = by_spark["summary"]
    assert summary["verdicts"]["NOT_EVALUATED"] == len(unjudged), summary
