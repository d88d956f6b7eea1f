"""The controller's broker sessions count only time in which the controller could hear a broker.

A controller process that is not scheduled (a loaded machine; here SIGSTOP) reads no heartbeats
until it runs again, and its session sweep then wakes late. That lag is the controller's, not
the brokers': a stall longer than the session fences no live broker. A broker that really
stopped (SIGSTOP) is still fenced once a session passes, as the DURABILITY and registration
tests expect.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest

from reference_impl.launcher import Cluster, NodeProcess
from tests.reference.control_plane import FAST, new_cluster, scrape, wait_until

SESSION_S = FAST["session_timeout_ms"] / 1000
#: twice the session: before the sweep forgave its own lag, every broker was fenced after it
STALL_S = 2 * SESSION_S
FENCE_LINE = "missed heartbeats for the session timeout"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    cluster = new_cluster(tmp_path_factory.mktemp("stall"), "embedded", None, brokers=2)
    cluster.start(timeout=60)
    try:
        yield cluster
    finally:
        cluster.stop()


def controller(cluster: Cluster) -> NodeProcess:
    (node,) = cluster.controller_nodes()
    return node


def fences(cluster: Cluster) -> list[str]:
    text = Path(controller(cluster).log_path).read_text(encoding="utf-8", errors="replace")
    return [line for line in text.splitlines() if FENCE_LINE in line]


def states(cluster: Cluster) -> dict[str, str]:
    """The controller's view: broker id -> state (its kafka_controller_broker_state gauge)."""
    samples = scrape(controller(cluster).config.metrics_port)
    return {
        dict(labels)["broker_id"]: dict(labels)["state"]
        for (name, labels), value in samples.items()
        if name == "kafka_controller_broker_state" and value == 1
    }


def paused(cluster: Cluster, name: str, seconds: float) -> float:
    """SIGSTOP the node for ``seconds``; the wall-clock time it was resumed."""
    cluster.kill(name, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        cluster.kill(name, signal.SIGCONT)
    return time.time()


def logged_at(line: str) -> float:
    """A node.log line's time (the log's local-time stamp, as ``time.time()`` counts)."""
    return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()


def test_a_stalled_controller_fences_no_live_broker(cluster: Cluster) -> None:
    before = len(fences(cluster))
    resumed = paused(cluster, controller(cluster).name, STALL_S)
    wait_until(lambda: states(cluster) == {"1": "online", "2": "online"}, timeout=10)
    time.sleep(SESSION_S / 2)
    # the stall's fences come at the first sweep after it (a sweep every 0.15 s); a later one
    # would be a broker's own lag on a loaded machine, which this test is not about
    stall = [line for line in fences(cluster)[before:] if logged_at(line) < resumed + 1.0]
    assert not stall, (
        f"a {STALL_S} s stall of the controller (session {SESSION_S} s) fenced live brokers "
        f"when it ran again: {stall}"
    )
    text = Path(controller(cluster).log_path).read_text(encoding="utf-8", errors="replace")
    assert "did not run for" in text, "the controller did not notice its own stall"


def test_a_stopped_broker_is_still_fenced_after_a_session(cluster: Cluster) -> None:
    wait_until(lambda: states(cluster) == {"1": "online", "2": "online"}, timeout=10)
    before = len(fences(cluster))
    cluster.kill("broker-2", signal.SIGSTOP)
    try:
        fenced = wait_until(lambda: states(cluster).get("2") == "fenced", timeout=SESSION_S + 5)
    finally:
        cluster.kill("broker-2", signal.SIGCONT)
    assert fenced
    assert any("broker 2 " in line for line in fences(cluster)[before:]), fences(cluster)
    # resumed, it heartbeats again and is Online (the cluster is whole for the next test)
    wait_until(lambda: states(cluster) == {"1": "online", "2": "online"}, timeout=10)
