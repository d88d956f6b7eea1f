"""``kafka-conformance run``: bad options are one line and exit code 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.cli import main
from conformance.client.ports import free_port


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bootstrap-server", "localhost"], "malformed bootstrap server 'localhost'"),
        (["--target", "kafka-on-mars"], "unknown target 'kafka-on-mars'"),
        (["--target", "external"], "needs --bootstrap-server"),
        (["--bootstrap-server", f"127.0.0.1:{free_port()}"], "cannot reach 127.0.0.1:"),
        (["--target", "docker:apache/kafka:3.9.1"], "no Docker engine reachable"),
        (["--target", "tansu", "--examples", "0"], "--examples must be at least 1"),
    ],
)
def test_bad_options_exit_2_with_one_line(
    args, message, capsys, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/docker.sock")
    code = main(["run", "--results-dir", str(tmp_path), *args])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("kafka-conformance: error: ")
    assert message in err
    assert "Traceback" not in err
    assert not any(tmp_path.iterdir())  # nothing ran, nothing recorded
