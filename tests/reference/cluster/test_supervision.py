"""Supervision: nodes die with their ``serve`` however it dies, and ``serve --restart-failed``
restarts a node that died, saying how it died (issue 13).

The nodes' stdin is a pipe only ``serve`` holds (the lifeline): after kill -9 of ``serve`` the
nodes read end of file and stop, so the data dir is free for the next ``serve`` (its lock,
the one a node takes, can be taken).
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.protocol import ApiKey
from reference_impl.launcher import describe_exit
from tests.reference.control_plane import call, wait_until


def alive(pid: int) -> bool:
    """Running (a zombie nobody reaped yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def lock_free(path: Path) -> bool:
    """Whether the data dir lock a node takes can be taken (a process whose main thread is
    already a zombie may still be closing its files in other threads: hence a wait)."""
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)
    return True


def serve(args: list[str], log: Path) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "conformance", "serve", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )


def ready_info(ready: Path) -> dict:
    wait_until(ready.exists, timeout=60, interval=0.05)
    return json.loads(ready.read_text())


def _pid(node_dir: Path) -> int | None:
    try:
        return json.loads((node_dir / "data" / "node.json").read_text())["pid"]
    except (OSError, ValueError, KeyError):
        return None


def _node_pids(data: Path) -> list[int]:
    return [pid for d in data.iterdir() if d.is_dir() and (pid := _pid(d)) is not None]


def broker_online(info: dict) -> bool:
    b = info["brokers"][0]
    body = call((b["host"], b["port"]), ApiKey.METADATA, 9, {"Topics": []})
    return {x["NodeId"] for x in body["Brokers"]} == {1}


@pytest.mark.parametrize(
    ("code", "words"),
    [
        (-9, "killed by signal 9 (SIGKILL)"),
        (-15, "killed by signal 15 (SIGTERM)"),
        (1, "exited with code 1"),
        (0, "exited with code 0"),
    ],
)
def test_how_a_node_died_is_said_in_words(code: int, words: str) -> None:
    assert describe_exit(code) == words


def test_a_killed_node_is_restarted_and_the_nodes_die_with_a_killed_serve(tmp_path: Path) -> None:
    data, ready, log = tmp_path / "data", tmp_path / "ready.json", tmp_path / "serve.log"
    args = ["--brokers", "1", "--data-dir", str(data), "--ready-file", str(ready)]
    proc = serve([*args, "--restart-failed"], log)
    try:
        info = ready_info(ready)
        controller_pid, broker_pid = info["pids"]["controller-0"], info["pids"]["broker-1"]
        os.kill(controller_pid, signal.SIGKILL)
        wait_until(lambda: "controller-0 restarted" in log.read_text(), timeout=30)
        assert "controller-0 killed by signal 9 (SIGKILL)" in log.read_text()
        node_log = (data / "controller-0" / "node.log").read_text()
        assert "supervisor: controller-0 killed by signal 9 (SIGKILL)" in node_log
        wait_until(lambda: _pid(data / "controller-0") not in (None, controller_pid))
        new_pid = _pid(data / "controller-0")
        wait_until(lambda: broker_online(info), timeout=60)
        assert new_pid is not None and alive(new_pid) and alive(broker_pid)

        proc.kill()  # the supervisor itself, kill -9: its nodes must not outlive it
        proc.wait(10)
        wait_until(lambda: not alive(new_pid) and not alive(broker_pid), timeout=40)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pid in _node_pids(data):  # whatever outlived serve (a failure here): stopped by pid
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    for node in ("controller-0", "broker-1"):  # the data dirs are free again
        wait_until(lambda node=node: lock_free(data / node / "data" / ".lock"), timeout=30)
