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


def test_a_target_that_never_answers_is_reported_within_seconds_with_why(tmp_path: Path) -> None:
    """A listener that accepts connections and reads, but never answers: the run stops at its
    first ApiVersions (v3, then v0), each bounded, and says what the target did."""
    import socket
    import subprocess
    import sys
    import threading
    import time

    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])  # kept open, never answered
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-m", "conformance", "run", "--bootstrap-server",
             f"127.0.0.1:{port}", "--results-dir", str(tmp_path / "results")],
            capture_output=True, text=True, timeout=120, cwd=tmp_path,
        )  # fmt: skip
        wall = time.monotonic() - started
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()
    assert proc.returncode != 0
    err = proc.stderr
    assert f"cannot reach the target at 127.0.0.1:{port}: accepted the connection" in err, err
    assert "did not answer ApiVersions v3 within 5 s" in err
    assert "did not answer ApiVersions v0 within 5 s" in err
    print(f"a target that never answers: reported after {wall:.1f} s")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_malformed_requirements_file_is_one_line_naming_it(
    jobs, capsys, tmp_path: Path, monkeypatch
) -> None:
    """A requirement whose basis is not a string: one line naming the file and the field, for
    a sequential and a concurrent run alike (the concurrent one used to end in xdist's
    internal error), and nothing started or recorded."""
    import json
    import shutil

    from conformance import requirements as reqs

    folder = tmp_path / "requirements"
    shutil.copytree(reqs.KIPS_DIR, folder)
    path = folder / "kip-78.json"
    feature = json.loads(path.read_text(encoding="utf-8"))
    feature["requirements"][0]["basis"] = None
    path.write_text(json.dumps(feature), encoding="utf-8")
    monkeypatch.setattr(reqs, "KIPS_DIR", folder)
    reqs.requirements.cache_clear()
    try:
        results = tmp_path / "results"
        code = main(["run", "--results-dir", str(results), "--jobs", jobs])
    finally:
        reqs.requirements.cache_clear()
    err = capsys.readouterr().err
    assert code == 2
    assert err == (
        f"kafka-conformance: error: requirements: {path}: $.requirements[0].basis: "
        "None is not of type 'string'\n"
    )
    assert not results.exists() or not any(results.iterdir())
