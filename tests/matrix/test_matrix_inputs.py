"""Malformed inputs through the Spark job and the CLI: bad lines named by file and line, the
rest counted; a run without a manifest is one clear error."""

from __future__ import annotations

import json
import shutil

import pytest

from conformance.cli import main
from conformance.matrix.ingest import ingest
from conformance.results.schema import RunError
from tests.matrix.spark_support import FIXTURE_RUNS

RUN = "20250304T140000Z-tansu-0.5.1-1"


@pytest.fixture
def broken_run(tmp_path):
    """A copy of a fixture run with one bad line of each kind and a blank line."""
    run = tmp_path / "runs" / RUN
    shutil.copytree(FIXTURE_RUNS / RUN, run)
    path = run / "results.jsonl"
    lines = path.read_text().splitlines()
    records = [json.loads(line) for line in lines]

    def changed(i: int, **kw) -> str:
        return json.dumps({**records[i], **kw})

    without_seed = dict(records[6])
    del without_seed["seed"]
    lines[1] = "{not json"
    lines[2] = changed(2, verdict="FLAKY")  # only arises in aggregation
    lines[3] = changed(3, api_version="3")  # text where a number belongs
    lines[4] = changed(4, run_id="another-run")  # not the manifest's run
    lines[5] = changed(5, api_key=None)  # api_name without api_key
    lines[6] = json.dumps(without_seed)  # a required key missing (null would be fine)
    lines[7] = changed(7, surplus=True)  # a key the schema does not know
    lines[8] = "[1, 2]"  # JSON, but not an object
    lines.insert(10, "")  # blank lines are ignored
    path.write_text("\n".join(lines) + "\n")
    return run


def test_spark_check_refuses_what_the_schema_refuses(spark, broken_run, tmp_path):
    got = ingest(spark, [broken_run], tmp_path / "out.parquet")
    # The bulk check sees every bad value; a missing nullable key (read as null) and an unknown
    # key (ignored) get through it, and the line-by-line reader names them all the same.
    assert (got.total_lines, got.bad_lines) == (29, 6)
    where = [(p.line, p.message.split(":")[0]) for p in got.problems]
    assert where == [
        (2, "malformed JSON"),
        (3, "verdict"),
        (4, "api_version"),
        (5, "run_id"),
        (6, "api_name"),
        (7, "record"),
        (8, "record"),
        (9, "record"),
        (0, "2 of the lines listed are counted"),
    ]
    assert "'seed' is a required property" in got.problems[5].message
    assert "'surplus' was unexpected" in got.problems[6].message
    assert all(p.file == str(broken_run / "results.jsonl") for p in got.problems[:-1])
    counted = spark.read.parquet(str(tmp_path / "out.parquet"))
    assert counted.count() == 29 - 6


def test_cli_reports_bad_lines_and_counts_the_rest(broken_run, tmp_path, capsys, spark):
    code = main(["matrix", str(broken_run.parent), "--out", str(tmp_path / "report")])
    out, err = capsys.readouterr()
    assert code == 0
    bad = [line for line in err.splitlines() if "results.jsonl:" in line]
    assert len(bad) == 8
    assert bad[0].startswith(f"{broken_run / 'results.jsonl'}:2: malformed JSON")
    assert "1 runs, 23 result records counted, 6 bad lines skipped" in out
    model = json.loads((tmp_path / "report" / "matrix.json").read_text())
    assert model["records"]["counted"] == 23
    assert (tmp_path / "report" / "report.html").is_file()
    assert spark.sparkContext._jsc is not None  # the shared session was not stopped


def test_missing_manifest_is_one_clear_error(tmp_path, capsys):
    run = tmp_path / "runs" / RUN
    shutil.copytree(FIXTURE_RUNS / RUN, run)
    (run / "manifest.json").unlink()
    code = main(["matrix", str(tmp_path / "runs"), "--out", str(tmp_path / "report")])
    _, err = capsys.readouterr()
    assert code == 2
    assert err.strip().splitlines() == [
        f"kafka-conformance: error: {run}: results.jsonl without manifest.json"
    ]
    assert not (tmp_path / "report").exists()


def test_two_runs_with_one_id_are_refused(spark, tmp_path):
    for name in ("a", "b"):
        shutil.copytree(FIXTURE_RUNS / RUN, tmp_path / name)
    with pytest.raises(RunError, match="is also the id of"):
        ingest(spark, [tmp_path / "a", tmp_path / "b"], tmp_path / "out.parquet")
