"""A state machine over graceful stops, kill -9, starts and acks=all produces of a 3-broker
cluster, each example ending in a graceful restart of the whole cluster (issue 13): after every
step, no acknowledged record is lost or moved, and whenever every broker runs, the ISR of the
1-partition RF=3 topic is full again within seconds.

Kept small for CI: one example of four steps on one shared cluster, ending in a
leader-first restart of the whole cluster.
"""

from __future__ import annotations

import itertools
import signal
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from reference_impl.launcher import Cluster
from tests.reference.cluster.test_durability import (
    create_topic,
    leader_of,
    read_back,
    wait_full_isr,
)
from tests.reference.control_plane import new_cluster

TOPIC = "machine"
BROKERS = ("broker-1", "broker-2", "broker-3")
_values = itertools.count()


class Restarts(RuleBasedStateMachine):
    """Steps on one cluster shared by the examples (set by the test); every example ends with
    every broker running again, after a restart of the whole cluster."""

    cluster: Cluster
    #: every acknowledged record of the run: value -> offset
    acked: dict[bytes, int]

    def __init__(self) -> None:
        super().__init__()
        self.down: set[str] = set()

    def teardown(self) -> None:
        """Every example ends with a leader-first restart of the whole cluster and the checks,
        so that each one ends in the restart that used to leave the ISR short for good."""
        for broker in sorted(self.down):
            self.cluster.start_node(broker)
        if self.down:
            self.cluster.wait_ready(timeout=60)
        self.down.clear()
        self.restart_cluster()
        self.converged_and_nothing_lost()

    @rule(n=st.integers(1, 300))
    def produce(self, n: int) -> None:
        from confluent_kafka import Producer

        producer = Producer(
            {
                "bootstrap.servers": self.cluster.bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                "message.timeout.ms": 20_000,
            }
        )

        def delivered(err, msg) -> None:
            if err is None:
                self.acked[msg.value()] = msg.offset()

        try:
            for _ in range(n):
                producer.produce(TOPIC, b"m-%08d" % next(_values), on_delivery=delivered)
                producer.poll(0)
            producer.flush(30)
        finally:
            producer.close()  # its threads go now, not after the cluster is gone

    @precondition(lambda self: len(self.down) < 1)
    @rule(broker=st.sampled_from(BROKERS), graceful=st.booleans())
    def stop_broker(self, broker: str, graceful: bool) -> None:
        self.cluster.kill(broker, signal.SIGTERM if graceful else signal.SIGKILL)
        if graceful:
            code = self.cluster.nodes[broker].proc.returncode
            assert code == 0, f"{broker}: graceful stop ended with {code}"
        self.down.add(broker)

    @precondition(lambda self: self.down)
    @rule(data=st.data())
    def start_broker(self, data: st.DataObject) -> None:
        broker = data.draw(st.sampled_from(sorted(self.down)))
        self.cluster.start_node(broker)
        self.cluster.wait_ready(timeout=60, brokers=[broker])
        self.down.discard(broker)

    def restart_cluster(self) -> None:
        """Graceful stop of everything, the partition's leader first each time (every move of
        leadership starts an epoch its new leader may never write under), then a restart on
        the same data dir."""
        for _ in range(len(BROKERS) - 1 - len(self.down)):
            leader = f"broker-{leader_of(self.cluster, TOPIC)}"
            self.cluster.kill(leader, signal.SIGTERM)
            assert self.cluster.nodes[leader].proc.returncode == 0, f"{leader}: unclean stop"
        self.cluster.stop()
        for node in self.cluster.nodes.values():
            if node.name not in self.down:
                assert node.proc.returncode == 0, f"{node.name}: exit {node.proc.returncode}"
        self.cluster.start(timeout=60)
        self.down.clear()

    @invariant()
    def converged_and_nothing_lost(self) -> None:
        if not self.down:
            wait_full_isr(self.cluster, TOPIC, timeout=20)
        read = {v: o for o, v in read_back(self.cluster, TOPIC, 1)[0]}
        lost = {v: o for v, o in self.acked.items() if read.get(v) != o}
        assert not lost, f"{len(lost)} acknowledged records lost or moved: {list(lost)[:3]}"


def test_stops_kills_and_restarts_lose_nothing_and_converge(tmp_path: Path) -> None:
    cluster = new_cluster(tmp_path / "cluster", "embedded", None)
    cluster.start(timeout=60)
    try:
        create_topic(cluster, TOPIC, 1)
        machine = type("RestartsOnCluster", (Restarts,), {"cluster": cluster, "acked": {}})
        run_state_machine_as_test(machine, settings=settings(max_examples=1, stateful_step_count=4))
    finally:
        cluster.stop()
