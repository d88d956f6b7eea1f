"""KIP-590.R4: with a ZooKeeper metadata store, only the controller writes what a forwarded
mutation changes.

A suite topic's retention is altered through a broker that is not the controller (``/controller``
names it). The topic is created and deleted through the controller where the controller is a
listed broker (ZooKeeper-mode Kafka, whose other brokers refuse CreateTopics NOT_CONTROLLER
rather than forward it: KIP-590.R1 judges that), else through the same broker.
ZooKeeper's transaction log (``znodes.writes``) says which session wrote each znode under
``/brokers/topics/<topic>`` and ``/config/topics/<topic>``: all of them must be sessions that
held ``/controller``, none the receiving broker's. SKIP without ``--zookeeper``, or where the
log cannot be read on this machine.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kip590 import binding as rb
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify, znodes
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.znodes import zookeeper

R4 = "KIP-590.R4"


@conformance("kip-590/zookeeper/only-controller-writes", R4, api=ApiKey.INCREMENTAL_ALTER_CONFIGS)
def test_only_the_controller_writes_to_zookeeper(harness: Harness) -> None:
    with zookeeper(harness) as zk:
        rb.require_event(harness, "alter-retention")
        found = zk.json("/controller")
        controller = found[0].get("brokerid") if found and isinstance(found[0], dict) else None
        brokers = cluster.brokers(harness)
        receivers = [i for i, b in enumerate(brokers) if b.node_id != controller]
        if not receivers:
            raise MissingPrecondition(f"every listed broker is the controller ({controller})")
        via = receivers[0]
        around = next((i for i, b in enumerate(brokers) if b.node_id == controller), via)
        runner = rb.new_runner(harness, brokers, (R4,), count=1)
        topic = runner.entities[0].id
        try:
            runner.step("create", 0, {"broker": around})
            runner.step("alter-retention", 0, {"broker": via, "value": "7200000"})
            runner.check_invariants()
            runner.step("delete", 0, {"broker": around})
        finally:
            runner.cleanup()
        log = znodes.writes(zk)
        controllers = znodes.controller_sessions(zk, log)
        verify.check(controllers, "no session ever held /controller", R4)
        receiver = brokers[via]
        theirs = znodes.broker_sessions(zk, log).get(str(receiver.node_id), set()) - controllers
        written = znodes.written_under(
            zk, log, f"/brokers/topics/{topic}", f"/config/topics/{topic}"
        )
        configs = [w for w in written if w.path == zk.full(f"/config/topics/{topic}")]
        verify.check(
            configs,
            f"retention.ms of {topic}, altered through {receiver}, never reached ZooKeeper "
            f"(no write of {zk.full(f'/config/topics/{topic}')} in the transaction log)",
            R4,
        )
        by_receiver = [str(w) for w in written if w.session in theirs]
        verify.check(
            not by_receiver,
            f"{receiver}, which received the mutations, wrote to ZooKeeper: {by_receiver[:5]}",
            R4,
        )
        strangers = [str(w) for w in written if w.session not in controllers]
        verify.check(
            not strangers,
            f"written by sessions that never held /controller "
            f"({sorted(hex(s) for s in controllers)}): {strangers[:5]}",
            R4,
        )
