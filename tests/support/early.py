"""Suite runs started as soon as collection ends, so that they overlap the other tests.

The whole suite against tansu takes about three minutes, nearly all of it waiting on tansu (it
holds every JoinGroup for at least a second), and uses a few seconds of CPU. Started early in the
background, its wait costs CI nothing; the module that judges it then waits for the result. The
process is stopped by its pid when the session ends, whatever happened.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: the suite workers of each ``kafka-conformance run`` the project's tests start (``--jobs``; a
#: test may give its own after): two, not the machine's 'auto', as these runs overlap the other
#: tests, which ``./dev.sh test`` itself runs in several processes
RUN_JOBS = ("--jobs", "2")


class EarlyRun:
    """``kafka-conformance run ARGS --results-dir DIR/results`` in the background, in DIR."""

    def __init__(self, *args: str) -> None:
        self.dir = Path(tempfile.mkdtemp(prefix="kc-early-run-"))
        self.args = [*args, "--results-dir", str(self.dir / "results")]
        self.started = time.monotonic()
        self._out = open(self.dir / "stdout", "w+")  # kept open until stop()
        self._err = open(self.dir / "stderr", "w+")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "conformance", "run", *RUN_JOBS, *self.args],
            cwd=self.dir,
            stdout=self._out,
            stderr=self._err,
            text=True,
        )

    def result(self, timeout: float = 300) -> tuple[subprocess.CompletedProcess, float]:
        """Wait for the run (at most ``timeout`` s from its start): its outcome and wall time."""
        left = max(1.0, timeout - (time.monotonic() - self.started))
        try:
            code = self.proc.wait(left)
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        wall = time.monotonic() - self.started
        self._out.seek(0)
        self._err.seek(0)
        done = subprocess.CompletedProcess(self.proc.args, code, self._out.read(), self._err.read())
        return done, wall

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)
        self._out.close()
        self._err.close()

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


#: the whole-suite runs leave out the DURABILITY scenarios (kill -9 and restarts, a minute or
#: more per target): tests/suite/durability/test_durability_faults.py runs their CI subset
NOT_DURABILITY = "not DURABILITY"

#: runs started when collection finished, by the test module that judges them
STARTED: dict[str, EarlyRun] = {}

#: test module -> the arguments of the run it judges
WANTED: dict[str, tuple[str, ...]] = {
    "test_against_tansu.py": (
        # four suite workers, not two: this run waits (tansu holds each JoinGroup a second or
        # more) and computes little (about 20 CPU-s), and its judges are CI's longest unit:
        # 140 s wall against 270 s with two (issue 36, benchmarks/README.md)
        "--jobs",
        "4",
        "--target",
        "tansu",
        "--select",
        NOT_DURABILITY,
        "--no-report",
        "--junit-xml",
        "junit.xml",
    ),
    # Apache Kafka (the release set-up fetches) on the subset CI judges it on; the whole suite
    # against every release belongs to reports/publish.sh
    "test_against_kafka.py": (
        "--target",
        "kafka:3.9.1",
        "--select",
        "KIP-78 or BROKER-REGISTRATION or LOG or PROTOCOL.R7 or PROTOCOL.R8 or PROTOCOL.R10 or TXN",
        "--no-report",
    ),
}


#: runs that several test modules judge (each its own requirements): started by the first module
#: that asks (not at collection: they keep the CPU busy, so they would slow what they overlapped)
#: and kept for the session, so that the cluster starts and the suite is collected once
SHARED: dict[str, tuple[str, ...]] = {
    # the whole suite against the reference at the default seed
    "reference": ("--select", NOT_DURABILITY, "--no-report"),
    # the feature (broker registration, KIP-536, KIP-590), group and data-plane requirements
    # against the ZooKeeper store with two standby controllers
    "reference:zookeeper": (
        "--target",
        "reference:zookeeper?controllers=3",
        "--seed",
        "7",
        "--select",
        "((BROKER-REGISTRATION or KIP-536 or KIP-590 or GROUPS or OFFSETS or CONFIGS) and not "
        "PROTOCOL) or LOG or IDEMPOTENCE or TOPICS or CONSUMER-GROUPS or SHARE-GROUPS",
        "--no-report",
    ),
}


#: test modules that judge a run of this module's (``WANTED``, ``SHARED``), by the group of
#: them that one pytest-xdist worker runs (``tests/xdist_groups.py``): the worker that starts a
#: run is the one that judges it, and stops it when its session ends
JUDGES: dict[str, str] = {
    "test_against_tansu.py": "tansu-runs",
    "test_groups_tansu.py": "tansu-runs",
    "test_against_reference.py": "reference-runs",
    "test_features_reference.py": "reference-runs",
    "test_groups_reference.py": "reference-runs",
    "test_consumer_groups_reference.py": "reference-runs",
    "test_share_groups_reference.py": "reference-runs",
    "test_data_plane_reference.py": "reference-runs",
}


def shared(name: str) -> EarlyRun:
    """The shared run ``name`` (``SHARED``), started now if no module asked for it before."""
    key = f"shared:{name}"
    return STARTED.get(key) or STARTED.setdefault(key, EarlyRun(*SHARED[name]))


def start_wanted(module_names: set[str]) -> None:
    for module, args in WANTED.items():
        if module in module_names and module not in STARTED:
            STARTED[module] = EarlyRun(*args)


def take(module: str) -> EarlyRun:
    """The run started early for ``module``, or one started now (the module run on its own)."""
    return STARTED.get(module) or STARTED.setdefault(module, EarlyRun(*WANTED[module]))


def remove_all() -> None:
    for run in STARTED.values():
        run.remove()
    STARTED.clear()
