"""Publication stopped by SIGTERM stops the run under way, and the run stops its target: no
process is left (session 16: a stopped ``publish`` left its child run, then a ZooKeeper,
running). ``publish.sh`` SIGTERMs its step by pid, the step (``conformance.matrix.publish``) its
run, the run (``run.py``: SIGTERM as ^C) its target and side runs. The reference, stopped while
its brokers start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_publication_stopped_while_a_target_starts_leaves_no_process(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    cmd = [sys.executable, "-m", "conformance.matrix.publish", str(runs), "reference"]
    helper = [sys.executable, "-m", "tests.support.leftovers", "reference_impl.broker"]
    proc = subprocess.run(
        [*helper, str(tmp_path), *cmd, "--runs", "1"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    got = json.loads(proc.stdout.splitlines()[-1])
    assert any("reference_impl.broker" in c for c in got["seen"]), got  # stopped as it started
    assert got["exit"] is not None and got["exit"] != 0, got
    assert got["left"] == [], got
    assert not list(runs.rglob("manifest.json")), got  # no run published of it
