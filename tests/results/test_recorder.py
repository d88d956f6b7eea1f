"""The recorder writes what the schemas accept (and refuses what they do not), and the summary
turns a run into run's exit code."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.results.recorder import Recorder, RecordError, fingerprint, new_run_id
from conformance.results.schema import load_run
from conformance.results.summary import summarise

MANIFEST = {
    "target_name": "tansu",
    "target_version": "0.6.0",
    "target_kind": "tansu",
    "bootstrap": "127.0.0.1:9092",
    "controller_bootstrap": None,
    "api_versions": fingerprint({18: (0, 4), 3: (0, 12)}),
    "controller_api_versions": None,
    "suite_version": "0.1.0",
    "spec_release": "3.9.0",
    "hypothesis_seed": 12345,
    "hypothesis_profile": "suite(max_examples=5)",
    "strict": False,
    "select": None,
}


def record(verdict: str, level: str = "MUST", rid: str = "PROTOCOL.R3") -> dict:
    return {
        "test_id": "protocol/spec/metadata/v12/well-formed",
        "requirement_id": rid,
        "level": level,
        "feature": "protocol",
        "api_key": 3,
        "api_name": "Metadata",
        "api_version": 12,
        "verdict": verdict,
        "message": None if verdict == "PASS" else "why",
        "duration_ms": 1.5,
        "seed": 12345,
        "listener": "client",
    }


def write_run(tmp: Path, verdicts: list[str]) -> Path:
    run_id = new_run_id("tansu")
    rec = Recorder(tmp / run_id, run_id)
    for v in verdicts:
        rec.add(record(v))
    rec.finish(**MANIFEST)
    return tmp / run_id


def test_a_recorded_run_reads_back_valid(tmp_path: Path) -> None:
    run = load_run(write_run(tmp_path, ["PASS", "FAIL", "UNSUPPORTED"]))
    assert not run.problems and len(run.records) == 3
    assert run.manifest["api_versions"] == {"3": [0, 12], "18": [0, 4]}
    assert run.manifest["hypothesis_seed"] == 12345
    assert all(r["run_id"] == run.run_id for r in run.records)


def test_a_test_id_recorded_before_ids_started_with_their_feature_reads_with_it(
    tmp_path: Path,
) -> None:
    """Runs recorded when ``spec/...`` was a PROTOCOL test id read as ``protocol/spec/...``, so
    old and new runs of a test meet under one id; a current id is left as it is."""
    run_id = new_run_id("tansu")
    rec = Recorder(tmp_path / run_id, run_id)
    rec.add({**record("PASS"), "test_id": "spec/metadata/v12/well-formed"})
    rec.add({**record("FAIL"), "test_id": "protocol/spec/metadata/v11/well-formed"})
    rec.finish(**MANIFEST)
    run = load_run(tmp_path / run_id)
    assert [r["test_id"] for r in run.records] == [
        "protocol/spec/metadata/v12/well-formed",
        "protocol/spec/metadata/v11/well-formed",
    ]


def test_a_record_outside_the_schema_is_refused(tmp_path: Path) -> None:
    rec = Recorder(tmp_path / "r", "r-1")
    with pytest.raises(RecordError, match="verdict"):
        rec.add(record("MAYBE"))
    with pytest.raises(RecordError, match="api_name"):
        rec.add({**record("PASS"), "api_key": None})


@pytest.mark.parametrize(
    ("verdicts", "code"),
    [
        (["PASS", "UNSUPPORTED", "NONSTRICT"], 0),
        (["PASS", "FAIL"], 1),
        (["PASS", "ERROR"], 1),
        (["SKIP", "UNSUPPORTED", "NOT_EXPOSED"], 1),  # nothing was checked: not a pass
    ],
)
def test_exit_codes(tmp_path: Path, verdicts: list[str], code: int) -> None:
    summary = summarise(write_run(tmp_path, verdicts))
    assert summary.exit_code() == code
    assert summary.total == len(verdicts)


def test_a_file_this_process_recorded_is_not_checked_again_unless_changed(
    tmp_path: Path, monkeypatch
) -> None:
    """The run's report and summary read the records the recorder checked as it wrote them
    (issue 36: the schema twice more on the run's tail); a byte changed since is checked."""
    from conformance.results import schema

    run_dir = write_run(tmp_path, ["PASS", "FAIL"])
    checked: list[object] = []
    real = schema._schema_errors

    def counted(name: str, obj: object) -> list[str]:
        if name == "result":
            checked.append(obj)
        return real(name, obj)

    monkeypatch.setattr(schema, "_schema_errors", counted)
    assert not load_run(run_dir).problems and checked == []
    results = run_dir / "results.jsonl"
    results.write_text(results.read_text().replace('"verdict": "FAIL"', '"verdict": "FAUL"'))
    run = load_run(run_dir)
    assert len(checked) == 2 and len(run.problems) == 1 and "FAUL" in run.problems[0].message
