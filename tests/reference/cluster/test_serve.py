"""``kafka-conformance serve``: the ready file (only while ready), graceful SIGTERM, a signal
during start-up, and a refusal in one line."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.protocol import ApiKey
from tests.reference.control_plane import STORES, call, store_url, wait_until


def serve(args: list[str], log: Path) -> subprocess.Popen:
    out = open(log, "wb")
    try:
        return subprocess.Popen(
            [sys.executable, "-m", "conformance", "serve", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    finally:
        out.close()


@pytest.mark.parametrize("store", STORES)
def test_serve_writes_the_ready_file_and_stops_gracefully(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    zookeeper = request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    ready = tmp_path / "ready.json"
    ready.write_text(json.dumps({"bootstrap_servers": "127.0.0.1:1", "stale": True}))
    data = tmp_path / "data"
    started = time.monotonic()
    proc = serve(
        [
            "--brokers",
            "3",
            "--metadata-store",
            store_url(store, zookeeper),
            "--data-dir",
            str(data),
            "--ready-file",
            str(ready),
        ],
        tmp_path / "serve.log",
    )
    try:
        # the stale file goes at once; the new one appears whole (one read parses it)
        wait_until(lambda: not ready.exists(), timeout=30, interval=0.01)
        wait_until(ready.exists, timeout=60, interval=0.01)
        elapsed = time.monotonic() - started
        info = json.loads(ready.read_text())
        assert "stale" not in info
        print(
            f"serve ({store}): 3 brokers Online after {elapsed:.2f} s "
            f"(cluster start {info['startup_seconds']} s)"
        )
        assert {"bootstrap_servers", "controller", "cluster_id", "brokers"} <= set(info)
        assert [b["node_id"] for b in info["brokers"]] == [1, 2, 3]
        for b in info["brokers"]:
            body = call((b["host"], b["port"]), ApiKey.METADATA, 9, {"Topics": []})
            assert body["ClusterId"] == info["cluster_id"]
            assert {x["NodeId"] for x in body["Brokers"]} == {1, 2, 3}
        pids = [p for p in info["pids"].values()]
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
        assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "serve.log"]
        for pid in pids:
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)
        for i in (1, 2, 3):
            log = (data / f"broker-{i}" / "node.log").read_text()
            assert "ONLINE -> STOPPING" in log and "STOPPING -> OFFLINE" in log
            assert "controller answered ShouldShutDown" in log
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def _spawned(data: Path) -> list[int]:
    """Pids of the live node processes whose config lies under ``data`` (from /proc)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and any(arg.startswith(str(data).encode()) for arg in cmdline):
            pids.append(int(entry.name))
    return pids


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_during_start_up_stops_it_at_once(sig: int, tmp_path: Path) -> None:
    """Sent as soon as the last node is spawned (long before the cluster can be ready): serve
    stops every spawned node and exits 128 + signal, with no ready file and no "ready" line."""
    ready = tmp_path / "ready.json"
    ready.write_text("{}")
    data = tmp_path / "data"
    log = tmp_path / "serve.log"
    proc = serve(["--brokers", "3", "--data-dir", str(data), "--ready-file", str(ready)], log)
    try:
        wait_until(lambda: (data / "broker-3" / "node.log").exists(), timeout=60, interval=0.01)
        wait_until(lambda: _spawned(data), timeout=10, interval=0.01)
        proc.send_signal(sig)
        assert proc.wait(20) == 128 + sig
        assert not ready.exists()
        assert _spawned(data) == []
        output = log.read_text()
        assert "ready in" not in output and f"stopped during start-up by signal {sig}" in output
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        for pid in _spawned(data):
            os.kill(pid, signal.SIGKILL)


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _taken_port_base() -> socket.socket:
    """A listening socket on P where the broker's ports (P+101, P+201, P+300, P+301) are free."""
    for _ in range(50):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        s.listen()
        base = s.getsockname()[1]
        if base + 301 < 65536 and all(_bindable(base + k) for k in (101, 201, 300, 301)):
            return s
        s.close()
    raise AssertionError("no free port range found")


def test_a_node_that_cannot_bind_its_port_is_reported_in_one_line(tmp_path: Path) -> None:
    """The controller's port (--port-base) is taken; the broker's ports are free."""
    with _taken_port_base() as taken:
        port_base = taken.getsockname()[1]
        proc = serve(
            [
                "--brokers",
                "1",
                "--port-base",
                str(port_base),
                "--data-dir",
                str(tmp_path / "data"),
                "--timeout",
                "30",
            ],
            tmp_path / "serve.log",
        )
        try:
            assert proc.wait(60) == 2
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    errors = [
        line
        for line in (tmp_path / "serve.log").read_text().splitlines()
        if line.startswith("kafka-conformance: error:")
    ]
    assert len(errors) == 1
    assert "controller-0 exited" in errors[0] and "cannot bind listener CONTROLLER" in errors[0]
