"""Headless Chromium (the Debian package) for the report tests: a DOM dump after scripts ran,
and screenshots. Each call starts one browser and waits for it; on timeout its whole process
group is killed by pid."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
from pathlib import Path

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        message = "chromium (Debian package) not installed: ./dev.sh setup installs it as root"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return found


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="kc-chromium-") as profile:
        proc = subprocess.Popen(
            [chromium(), *FLAGS, f"--user-data-dir={profile}", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def dump_dom(page: Path) -> str:
    result = run("--virtual-time-budget=2000", "--dump-dom", page.resolve().as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def screenshot(page: Path, png: Path, width: int, height: int) -> None:
    result = run(f"--screenshot={png}", f"--window-size={width},{height}", page.resolve().as_uri())
    assert result.returncode == 0, result.stderr[-2000:]
