"""The draft's persistent registration record, ``/cluster/brokers/N`` (BROKER-REGISTRATION.R8).

With ``--zookeeper``: the model's registration-record invariant follows a fake broker through
its states (settings, epoch, state and version as the draft's znode shows them), the real
brokers' records say ONLINE with their endpoints, and the server's transaction log shows that
only the controller's ZooKeeper session ever wrote them. SKIP without a connect string (or, for
the last, where the transaction log cannot be read here).

Both tests are ``disruptive``, as the lifecycle's: their fake broker is Online, so listed in every
broker's Metadata, at a port nobody listens on. Run beside them (``--jobs``), a test that
connects to every listed broker (CONFIGS.R10/R12, BROKER-REGISTRATION.R11, KIP-536 …) got
ECONNREFUSED from it: the ZooKeeper store's CI flake of sessions 11-12.
"""

from __future__ import annotations

from conformance.suite.broker_registration import binding as lb
from conformance.suite.broker_registration.shared import walk
from conformance.suite.kit import verify, znodes
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.znodes import zookeeper

R8 = "BROKER-REGISTRATION.R8"


@conformance("broker-registration/zookeeper/registration-record", R8, disruptive=True)
def test_registration_record_follows_the_states(harness: Harness) -> None:
    with zookeeper(harness) as zk:
        facts = lb.learn(harness)
        for broker in facts.brokers:
            found = zk.json(f"/cluster/brokers/{broker.node_id}")
            verify.check(
                found is not None, f"no /cluster/brokers/{broker.node_id} for {broker}", R8
            )
            record = found[0]
            verify.check(
                isinstance(record, dict), f"{broker}: the record is not JSON: {record!r}", R8
            )
            verify.check(
                str(record.get("state", "")).upper() == "ONLINE",
                f"{broker} is listed to clients, but its record says {record.get('state')!r}",
                R8,
            )
            endpoints = (record.get("settings") or {}).get("endpoints") or []
            verify.check(
                any(str(e).endswith(f"//{broker.endpoint}") for e in endpoints),
                f"{broker}: the record's endpoints {endpoints} do not include {broker.endpoint}",
                R8,
            )
            verify.check(
                record.get("version") == 1, f"{broker}: version {record.get('version')}", R8
            )
            verify.check(
                isinstance(record.get("epoch"), int), f"{broker}: epoch {record.get('epoch')!r}", R8
            )
        runner = lb.new_runner(
            harness, facts, (R8,), invariants=["registration-record"], zk=zk, count=1
        )
        try:
            runner.check_invariants()
            walk(
                runner,
                0,
                [
                    ("register", {"Fenced"}),
                    ("heartbeat-caught-up", {"Online"}),
                    ("want-shutdown", {"Stopping", "Offline"}),
                ],
            )
            runner.drive("stopping-shuts-down", 0)
            runner.check_invariants()
            walk(runner, 0, [("register", {"Fenced"}), ("unregister", {"Offline"})])
        finally:
            runner.cleanup()


@conformance("broker-registration/zookeeper/written-by-controller-only", R8, disruptive=True)
def test_only_the_controller_writes_registration_records(harness: Harness) -> None:
    with zookeeper(harness) as zk:
        facts = lb.learn(harness)
        runner = lb.new_runner(harness, facts, (R8,), invariants=[], zk=zk, count=1)
        try:
            walk(runner, 0, [("register", {"Fenced"}), ("heartbeat-caught-up", {"Online"})])
            ours = zk.full(f"/cluster/brokers/{runner.entities[0].id}")
        finally:
            runner.cleanup()
        log = znodes.writes(zk)
        controllers = znodes.controller_sessions(zk, log)
        verify.check(controllers, "no session ever held /controller", R8)
        # the per-broker records: the /cluster/brokers container itself may be created by any
        # controller as it starts, a standby included (it holds no record)
        container = zk.full("/cluster/brokers")
        records = [
            w for w in znodes.written_under(zk, log, "/cluster/brokers") if w.path != container
        ]
        verify.check(
            any(w.path == ours for w in records),
            f"the transaction log shows no write of {ours}, though the broker registered",
            R8,
        )
        strangers = [str(w) for w in records if w.session not in controllers]
        brokers = {i: sorted(hex(s) for s in v) for i, v in znodes.broker_sessions(zk, log).items()}
        verify.check(
            not strangers,
            f"written by sessions that never held /controller (controller sessions "
            f"{sorted(hex(s) for s in controllers)}; brokers' sessions {brokers}): {strangers[:5]}",
            R8,
        )
