"""The docker target's fault methods, which the DURABILITY scenarios use: in the reference
image (several node processes in one container) each node is paused, killed and started again
alone, found by the port it listens on; an image whose container is its one broker (tansu) is
paused, killed and started again as a whole."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from conformance.targets import TargetError, docker_nodes
from conformance.targets.base import metadata_brokers, wait_listening
from conformance.targets.docker import DockerTarget
from conformance.targets.tansu import NODE_ID
from tests.targets.test_reference_image import host_python_image


def _brokers_within(target: DockerTarget, node: int, want: int, timeout: float) -> int:
    """How many brokers the node's Metadata lists, asked until it is ``want`` or time is up."""
    deadline, got = time.monotonic() + timeout, 0
    while time.monotonic() < deadline and got != want:
        got = metadata_brokers(target.restartable[node], 5)
        time.sleep(0.2)
    return got


def test_reference_nodes_are_paused_killed_and_started_again_alone(
    engine, tmp_path: Path, no_leftovers
) -> None:
    image, profile = host_python_image(engine, tmp_path)
    try:
        t = DockerTarget.from_spec(f"kc-test/kafka-conformance:host?profile={profile}")
        with t:
            assert t.fault_nodes("broker") == [1, 2, 3] and t.fault_nodes("controller") == [0]
            port = t.restartable[2].port
            before = docker_nodes.find(t._container, port)
            assert before is not None and "reference_impl.broker" in " ".join(before.argv)
            t.signal_node(2, signal.SIGSTOP)
            assert docker_nodes.state(t._container, before.pid) == "T"
            assert t.node_running(2)  # stopped, not gone
            t.signal_node(2, signal.SIGCONT)
            with pytest.raises(TargetError, match="already running"):
                t.start_node(2)
            t.signal_node(2, signal.SIGKILL)
            assert not t.node_running(2)
            assert t.node_running(1) and t.node_running(3)  # the others run on
            t.start_node(2)
            after = docker_nodes.find(t._container, port)
            assert after is not None and after.pid != before.pid and after.argv == before.argv
            assert _brokers_within(t, 2, 3, 30) == 3  # back in the cluster, on its data
            t.signal_node(0, signal.SIGKILL)
            assert not t.node_running(0) and t.controller is not None
            t.start_node(0)
            assert wait_listening(t.controller, 5) and _brokers_within(t, 1, 3, 30) == 3
    finally:
        engine.images.remove(image.id, force=True)


def test_a_container_that_is_its_broker_is_paused_killed_and_started_again(
    tansu_image, no_leftovers
) -> None:
    image, _ = tansu_image
    with DockerTarget.from_spec(image) as t:
        assert t.fault_nodes("broker") == [NODE_ID] and t.fault_nodes("controller") == []
        t.signal_node(NODE_ID, signal.SIGSTOP)
        t._container.reload()
        assert t._container.status == "paused" and t.node_running(NODE_ID)
        t.signal_node(NODE_ID, signal.SIGCONT)
        with pytest.raises(TargetError, match="already running"):
            t.start_node(NODE_ID)
        t.signal_node(NODE_ID, signal.SIGKILL)
        assert not t.node_running(NODE_ID) and not wait_listening(t.bootstrap[0], 0.5)
        t.start_node(NODE_ID)
        assert t.node_running(NODE_ID) and wait_listening(t.bootstrap[0], 5)
        with pytest.raises(TargetError, match="no node 7"):
            t.signal_node(7, signal.SIGKILL)
