"""The Python reader of runs: line-numbered problems, clear errors for unusable runs."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import pytest

from conformance.results.schema import (
    NOT_SCORED,
    SCORED,
    VERDICTS,
    RunError,
    find_runs,
    load_run,
    manifest_errors,
    read_manifest,
    record_errors,
)
from tests.matrix.spark_support import FIXTURE_RUNS

GOOD = {
    "run_id": "r1",
    "test_id": "kip-78/metadata/v2+/cluster-id/format",
    "requirement_id": "KIP-78.R3",
    "level": "MUST",
    "feature": "kip-78",
    "api_key": 3,
    "api_name": "Metadata",
    "api_version": 12,
    "verdict": "PASS",
    "message": "",
    "duration_ms": 12.5,
    "seed": 123,
}


def test_fixture_runs_load_with_exactly_one_bad_line():
    runs = [load_run(d) for d in find_runs([FIXTURE_RUNS])]
    assert len(runs) == 9
    problems = [p for r in runs for p in r.problems]
    assert len(problems) == 1
    assert problems[0].file.endswith("tansu-0.6.0-3/results.jsonl")
    assert problems[0].line == 28
    assert "malformed JSON" in problems[0].message
    assert sum(len(r.records) for r in runs) == 9 * 29 - 1


def test_fixture_runs_are_what_their_script_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("make_runs", FIXTURE_RUNS / "make_runs.py")
    make_runs = importlib.util.module_from_spec(spec)
    sys.modules["make_runs"] = make_runs  # its dataclasses look their module up there
    try:
        spec.loader.exec_module(make_runs)
        make_runs.main(tmp_path)
    finally:
        del sys.modules["make_runs"]
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    kept = sorted(p.relative_to(FIXTURE_RUNS) for p in FIXTURE_RUNS.rglob("*.json*") if p.is_file())
    assert written == kept
    for name in written:
        assert (tmp_path / name).read_bytes() == (FIXTURE_RUNS / name).read_bytes(), name


def test_verdict_sets_follow_the_schema():
    assert "FLAKY" not in VERDICTS  # only in aggregation
    assert set(SCORED) | set(NOT_SCORED) == set(VERDICTS)
    assert set(NOT_SCORED) == {
        "UNSUPPORTED",
        "NOT_EXPOSED",
        "PROPOSAL_ABSENT",
        "SKIP",
        "NOT_EVALUATED",
    }


def test_a_good_record_is_valid():
    assert record_errors(GOOD, "r1") == []
    assert record_errors({**GOOD, "seed": str(2**100), "api_version": None}) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"verdict": "FLAKY"}, "verdict"),
        ({"level": "MAY_BE"}, "level"),
        ({"api_version": "3"}, "api_version"),
        ({"test_id": 5}, "test_id"),
        ({"requirement_id": "kip-78.r1"}, "requirement_id"),
        ({"duration_ms": -1}, "duration_ms"),
        ({"extra": 1}, "extra"),
        ({"api_key": None}, "api_name"),
        ({"run_id": "r2"}, "run_id"),
    ],
)
def test_bad_records_are_named(change, expected):
    errors = record_errors({**GOOD, **change}, "r1")
    assert errors and expected in errors[0]


def test_a_missing_key_is_an_error_even_where_null_is_allowed():
    record = dict(GOOD)
    del record["seed"]
    assert "seed" in record_errors(record)[0]


def _copy_run(tmp_path: Path, name: str = "20250303T090000Z-reference-0.1.0-1") -> Path:
    target = tmp_path / name
    shutil.copytree(FIXTURE_RUNS / name, target)
    return target


def test_bad_lines_are_reported_with_their_line_and_the_rest_kept(tmp_path):
    run = _copy_run(tmp_path)
    path = run / "results.jsonl"
    lines = path.read_text().splitlines()
    bad = json.loads(lines[3])
    bad["verdict"] = "MAYBE"
    lines[3] = json.dumps(bad)
    lines[5] = lines[5][:-1]
    lines.insert(7, "   ")
    path.write_text("\n".join(lines) + "\n")
    loaded = load_run(run)
    assert [(p.line, p.message.split(":")[0]) for p in loaded.problems] == [
        (4, "verdict"),
        (6, "malformed JSON"),
    ]
    assert len(loaded.records) == 29 - 2


def test_missing_manifest_is_one_clear_error(tmp_path):
    run = _copy_run(tmp_path)
    (run / "manifest.json").unlink()
    with pytest.raises(RunError, match=r"results.jsonl without manifest.json"):
        find_runs([tmp_path])
    with pytest.raises(RunError, match=r"no manifest.json"):
        load_run(run)


def test_bad_manifest_names_the_field(tmp_path):
    run = _copy_run(tmp_path)
    manifest = json.loads((run / "manifest.json").read_text())
    manifest["api_versions"]["3"] = [0]
    (run / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(RunError, match=r"api_versions\.3"):
        read_manifest(run)
    manifest["api_versions"]["3"] = [0, 12]
    manifest["ended_at"] = "2025-03-03T08:00:00Z"
    assert "before started_at" in manifest_errors(manifest)[0]


def test_find_runs_takes_run_dirs_and_folders_of_them(tmp_path):
    assert find_runs([FIXTURE_RUNS / "20250303T090000Z-reference-0.1.0-1"]) == [
        (FIXTURE_RUNS / "20250303T090000Z-reference-0.1.0-1").resolve()
    ]
    with pytest.raises(RunError, match="no such file"):
        find_runs([tmp_path / "absent"])
    with pytest.raises(RunError, match="holds no run"):
        find_runs([tmp_path])
