"""A run that did not complete is no run for publication (issue 41): ``run`` stopped by SIGTERM
still writes the manifest of the tests it ran (exit code 130); session 13's publication nearly
published such a reference run of 59 tests as a whole one. A real reference run, stopped."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conformance.matrix import publish


@pytest.mark.publication
def test_a_run_stopped_by_sigterm_is_not_returned(tmp_path: Path, monkeypatch) -> None:
    started: list[subprocess.Popen] = []
    real_popen = subprocess.Popen

    def spawn(cmd, **kw):  # the run's own process, kept to be signalled
        proc = real_popen(cmd, **kw)
        if "run" in cmd:
            started.append(proc)
        return proc

    def stop_when_testing() -> None:  # once its folder exists, the tests are under way
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if started and any(tmp_path.rglob("*")):
                time.sleep(5)
                os.kill(started[0].pid, signal.SIGTERM)
                return
            time.sleep(0.2)

    monkeypatch.setattr(publish.subprocess, "Popen", spawn)
    stopper = threading.Thread(target=stop_when_testing)
    stopper.start()
    made = publish.suite_runner(echo=False)("reference", (), None, tmp_path)
    stopper.join()
    assert started and started[0].returncode == 130
    assert made is None
    assert not list(tmp_path.rglob(publish.MANIFEST_FILE))
