"""The reference with standby controllers (``reference:zookeeper?controllers=3``) points the suite
at the active controller after controllers were killed and started again: another may have
taken over meanwhile, and a standby answers the suite's controller requests NOT_CONTROLLER
(a side run's BROKER-REGISTRATION tests FAILed so after its whole-cluster kill and restart,
in the lead's publication of session 16). A real cluster, started and stopped by this test."""

from __future__ import annotations

import signal

from conformance.targets import TargetOptions, make_target
from conformance.targets.base import Endpoint


def test_the_target_follows_the_active_controller_after_a_restart() -> None:
    target = make_target(TargetOptions(target="reference:zookeeper?controllers=3"))
    target.start()
    try:
        cluster = target._cluster
        first = target.controller

        def address(node) -> Endpoint:
            return Endpoint(*cluster.broker_address(node, "CONTROLLER"))

        (killed,) = [n for n in cluster.controller_nodes() if address(n) == first]
        target.signal_node(killed.config.node_id, signal.SIGKILL)
        # a standby takes over once the killed one's ZooKeeper session has ended (bounded)
        active = cluster.active_controller(60)
        assert active is not killed
        target.start_nodes([killed.config.node_id])
        assert target.controller == address(active) != first
        assert target.controllers[0] == target.controller and first in target.controllers[1:]
        external = active.config.listener("EXTERNAL")
        assert target.controller_client == Endpoint(external.host, external.port)
    finally:
        target.stop()
