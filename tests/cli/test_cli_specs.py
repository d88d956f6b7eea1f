"""``kafka-conformance specs check|list``, in-process and once as ``python -m conformance``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cli import main
from conformance.protocol.spec import SPEC_DIR, SpecSet
from tests.conftest import KAFKA_SPECS

ROOT = Path(__file__).resolve().parents[2]
N_FILES = len(list(SPEC_DIR.glob("*.json")))


def test_check_project_specs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["specs", "check"]) == 0
    out, err = capsys.readouterr()
    assert out == f"ok: {N_FILES} files\n"
    assert err == ""


def test_check_reports_one_line_per_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.loads((SPEC_DIR / "ApiVersionsRequest.json").read_text())
    (tmp_path / "ApiVersionsRequest.json").write_text(json.dumps(good))
    bad = {**good, "name": "BadVersions", "apiKey": 1000, "validVersions": "4-"}
    (tmp_path / "BadVersions.json").write_text(json.dumps(bad))
    (tmp_path / "Broken.json").write_text("{ not json")
    assert main(["specs", "check", "--spec-dir", str(tmp_path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        f"{tmp_path / 'BadVersions.json'}: $.validVersions: "
        '"4-" is not a version range: none, N, N-M or N+',
        f"{tmp_path / 'Broken.json'}: $: not JSON: "
        "Expecting property name enclosed in double quotes at line 1 column 3",
    ]


def test_check_missing_folder_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["specs", "check", "--spec-dir", str(tmp_path / "absent")]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert (
        err == f"kafka-conformance: error: {tmp_path / 'absent'}: not a folder of message specs\n"
    )


@pytest.mark.corpus
def test_check_strict_and_lenient_on_upstream_release(capsys: pytest.CaptureFixture[str]) -> None:
    release = KAFKA_SPECS / "2.8.2"
    if not release.is_dir():
        pytest.skip(f"upstream release folder not found: {release}")
    assert main(["specs", "check", "--spec-dir", str(release)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith(
        f"{release / 'DescribeProducersRequest.json'}: $: unexpected content"
    )
    assert main(["specs", "check", "--lenient", "--spec-dir", str(release)]) == 0
    assert capsys.readouterr().out == f"ok: {len(list(release.glob('*.json')))} files\n"


def _table(text: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines()]


def test_list_is_a_table_of_the_apis(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["specs", "list"]) == 0
    header, *rows = _table(capsys.readouterr().out)
    assert header == ["API KEY", "NAME", "VALID", "FLEXIBLE", "LISTENERS"]
    specs = SpecSet.load(SPEC_DIR)
    assert [int(r[0]) for r in rows] == sorted(specs.apis())
    by_key = {int(r[0]): r[1:] for r in rows}
    assert by_key[3] == ["Metadata", "0-13", "9+", "zkBroker,broker"]
    assert by_key[63] == ["BrokerHeartbeat", "0-2", "0+", "controller"]
    for key, (name, valid, flexible, listeners) in by_key.items():
        spec = specs.message(key, "request")
        assert (name + "Request", valid, flexible) == (
            spec.name,
            str(spec.valid_versions),
            str(spec.flexible_versions),
        )
        assert listeners == (",".join(spec.listeners) or "-")


def test_list_of_a_bad_folder_is_one_error_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "Broken.json").write_text("[]")
    assert main(["specs", "list", "--spec-dir", str(tmp_path)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    where = tmp_path / "Broken.json"
    assert err == f"kafka-conformance: error: {where}: $: the top level must be an object\n"


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "kafka-conformance: error:" in capsys.readouterr().err
    assert main(["specs", "frobnicate"]) == 2
    assert "invalid choice: 'frobnicate'" in capsys.readouterr().err
    assert main(["--help"]) == 0
    assert "specs" in capsys.readouterr().out


def test_python_dash_m_conformance() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "conformance", "specs", "check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, f"ok: {N_FILES} files\n", "")
