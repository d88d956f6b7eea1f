"""The targets' fault methods (``fault_nodes``, ``signal_node``, ``start_node``,
``node_running``), which the DURABILITY scenarios use: an external target offers none (the
suite cannot stop its brokers); tansu, one process the suite runs, is paused, resumed, killed
and started again on its port. The reference's are exercised by tests/suite/
test_durability_faults.py, Apache Kafka's by the scenario runs against it."""

from __future__ import annotations

import signal

import pytest

from conformance.targets import TargetError, TargetOptions, make_target
from conformance.targets.base import CANNOT_STOP, wait_listening
from conformance.targets.tansu import NODE_ID, TansuTarget


def test_an_external_target_offers_no_faults() -> None:
    target = make_target(TargetOptions(bootstrap="127.0.0.1:9"))
    assert target.fault_nodes("broker") == [] and target.fault_nodes("controller") == []
    for call in (
        lambda: target.signal_node(1, signal.SIGKILL),
        lambda: target.start_node(1),
        lambda: target.start_nodes([1, 2]),
    ):
        with pytest.raises(TargetError, match=CANNOT_STOP):
            call()
    assert not target.node_running(1)


def test_tansu_is_paused_killed_and_started_again_on_its_port() -> None:
    target = TansuTarget()
    target.start()
    try:
        assert target.fault_nodes("broker") == [NODE_ID] and target.fault_nodes("controller") == []
        ep, pid = target.bootstrap[0], target.pid
        target.signal_node(NODE_ID, signal.SIGSTOP)
        assert target.node_running(NODE_ID)  # stopped, not gone
        target.signal_node(NODE_ID, signal.SIGCONT)
        with pytest.raises(TargetError, match="already running"):
            target.start_node(NODE_ID)
        target.signal_node(NODE_ID, signal.SIGKILL)
        assert not target.node_running(NODE_ID)
        target.start_node(NODE_ID)
        assert target.node_running(NODE_ID) and target.pid != pid
        assert target.bootstrap[0] == ep and wait_listening(ep, 5)
        with pytest.raises(TargetError, match="one broker"):
            target.signal_node(NODE_ID + 1, signal.SIGKILL)
    finally:
        target.stop()
