"""A ZooKeeper a run started dies with it when the run is killed without stopping it (SIGKILL,
an OOM), as Kafka's JVMs do (``base.die_with_parent``): session 16's publication found a
ZooKeeper JVM of a stopped kafka:3.2.3?store=zookeeper run still running."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

STARTS = "from conformance.targets.zookeeper import ZooKeeperServer as Z; z = Z(); z.start(); "
SAYS = "print(z.proc.pid, flush=True); import time; time.sleep(120)"


def test_a_killed_runs_zookeeper_is_gone() -> None:
    run = subprocess.Popen([sys.executable, "-c", STARTS + SAYS], stdout=subprocess.PIPE, text=True)
    try:
        assert run.stdout is not None
        zookeeper = int(run.stdout.readline())
        os.kill(run.pid, signal.SIGKILL)
        run.wait(10)
        deadline = time.monotonic() + 10
        while _alive(zookeeper) and time.monotonic() < deadline:
            time.sleep(0.1)
        alive = _alive(zookeeper)
        if alive:
            os.kill(zookeeper, signal.SIGKILL)
        assert not alive, f"ZooKeeper {zookeeper} outlived the process that started it"
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(10)


def _alive(pid: int) -> bool:
    """Running, not a zombie (its parent, init, may not have reaped it yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
