"""The bundled reference cluster (``reference_impl``): one controller and three brokers as OS
processes on loopback, with either metadata store (embedded, or a ZooKeeper the target starts).
``reference:zookeeper?controllers=3`` runs two standby controllers beside the active one (only
the ZooKeeper store elects among several). ``reference?release=3.9.1`` makes the brokers' client
listeners advertise and serve exactly the API ranges of that Apache Kafka release (the release
table, ``conformance/matrix/kafka_releases.json``; a patch release speaks its minor's protocol)
where the reference implements them, with its transaction.version (2 from 4.0 on).
``reference?security=sasl`` (either store) makes every listener SASL_PLAINTEXT with PLAIN,
SCRAM-SHA-256 and SCRAM-SHA-512 and turns on the ACL authorizer, as ``kafka:V?security=sasl``
does (issue 40): passwords drawn at each start for ``admin`` (a super user, as whom the suite
authenticates with PLAIN), ``alice`` (no ACL: the target's ``unprivileged`` principal) and
``broker`` (the nodes' own principal, SCRAM-SHA-512 between nodes); they live only in the node
configs of the temporary data dir, removed at stop (the nodes' principal ``User:broker`` is the
launcher's). SCRAM-SHA-256 sessions last ``REAUTH_MS`` and are re-authenticated (KIP-368), as
on ``kafka:V?security=sasl``.

Started with ``reference_impl.launcher.Cluster`` in a temporary data dir and stopped gracefully
(brokers through Stopping, then the controller); a broker can be restarted for the suite's
restart checks (KIP-78 immutability, KIP-536 start time).

Test-run settings, so that failures are noticed in seconds (as Kafka's own integration tests
shorten them; README, "Targets"): broker heartbeats every 250 ms and a 2 s broker session (Kafka:
2 s and 9 s; the reference's own cluster tests run 1.5-2 s sessions), a 4 s ZooKeeper session
(the reference's default 6 s; Kafka's 18 s), a follower leaves the ISR after 10 s without
catching up (``replica.lag.time.max.ms``, Kafka's default before 2.5; since then 30 s), no
initial rebalance delay and a 1 s minimum member session for groups (Kafka: 3 s and 6 s);
timed-out transactions are looked for every second (the reference's own default; Kafka: 10 s).
A killed or frozen broker is fenced, and its leaderships and ISR places
moved, within ``failure_detection_s`` (the broker session; the ZooKeeper session's where longer).
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from conformance.targets import base
from conformance.targets.base import Endpoint, Sasl, Target, TargetError, wait_listening
from conformance.targets.zookeeper import ZooKeeperServer

#: the reference brokers' client listeners are ZooKeeper-mode-style brokers (see its README) that
#: also serve the KIP-932 share group APIs, which Kafka's specs expose on KRaft brokers only
#: (issue 39): what else of "broker" they do not serve is UNSUPPORTED (not advertised)
REFERENCE_CLIENT_TYPES = ("zkBroker", "broker")
#: broker heartbeats and the controller's broker session: short, so that the suite's fencing
#: check and DURABILITY's failovers wait seconds, not Kafka's 9 s (each failure detection of a
#: whole run's side clusters is paced by it: 3 -> 2 s took a quiet run from 31 to 29 s); eight
#: heartbeats fit in a session (the longest gap seen: 1.09 s, whole runs at load 12-18); the
#: controller does not count its own stalls against a session (reference_impl README)
SUITE_TIMINGS = {
    "heartbeat_interval_ms": 250,
    "session_timeout_ms": 2000,
    "zk_session_timeout_ms": 4000,
}
#: the group coordinator's timings (broker settings): no delay before a new group's first
#: rebalance and a 1 s minimum member session, so that the suite's group checks (session
#: expiry included) wait about a second rather than Kafka's 3 s delay and 6 s minimum; the
#: brokers report them (group.initial.rebalance.delay.ms, group.min.session.timeout.ms)
SUITE_GROUP_TIMINGS = {
    "initial_rebalance_delay_ms": 0,
    "min_session_timeout_ms": 1000,
    # KIP-848 groups: a group's consumer.session.timeout.ms may be set as low as 1 s and its
    # consumer.heartbeat.interval.ms to 0.5 s (Kafka: 45 s and 5 s; the controller checks them)
    "consumer_min_session_timeout_ms": 1000,
    "consumer_min_heartbeat_interval_ms": 500,
    # KIP-932 share groups: share.session.timeout.ms / share.heartbeat.interval.ms alike
    "share_min_session_timeout_ms": 1000,
    "share_min_heartbeat_interval_ms": 500,
}
#: replication (a broker's ``replication`` section, ``replica.lag.time.max.ms``): a follower that
#: has not caught up for 10 s leaves the ISR (Kafka's default before KIP-537 raised it to 30 s)
SUITE_REPLICATION = {"replica_lag_time_max_ms": 10_000}
#: timed-out transactions looked for every second (``transaction.abort.timed.out.transaction.
#: cleanup.interval.ms``; the reference's default, stated for the test run: Kafka's is 10 s)
SUITE_TRANSACTIONS = {"abort_interval_ms": 1000}
SECURITIES = ("none", "sasl")
#: ``security=sasl``: the suite's super user, the unprivileged user, the nodes' own principal
SECURITY_USERS = ("admin", "alice", "broker")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class ReferenceTarget(Target):
    kind: str = "reference"
    name: str = "reference"
    metadata_store: str = "embedded"
    brokers: int = 3
    #: controller processes; more than one needs the ZooKeeper store (the others are standbys)
    controller_count: int = 1
    startup_timeout: float = 60.0
    client_listener_types: tuple[str, ...] = REFERENCE_CLIENT_TYPES
    #: "sasl": every listener SASL_PLAINTEXT and the ACL authorizer (the module's docstring)
    security: str = "none"
    #: ``security=sasl``: user -> password, drawn at each start
    passwords: dict[str, str] = field(default_factory=dict, repr=False)
    overrides: dict[str, Any] = field(default_factory=lambda: dict(SUITE_TIMINGS))
    broker_overrides: dict[str, Any] = field(
        default_factory=lambda: {
            "settings": {
                "groups": dict(SUITE_GROUP_TIMINGS),
                "replication": dict(SUITE_REPLICATION),
                "transactions": dict(SUITE_TRANSACTIONS),
            }
        }
    )
    _cluster: Any = field(default=None, repr=False)
    _zk: ZooKeeperServer | None = field(default=None, repr=False)
    _dir: Path | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        try:
            from reference_impl import launcher  # noqa: F401
        except ImportError as e:
            raise TargetError(f"the bundled reference cluster is not available: {e}") from None
        if self.version == "unknown":
            from conformance.results.recorder import suite_version

            self.version = suite_version()
        if self.failure_detection_s is None:  # the broker session; ZooKeeper's where longer
            session_ms = int(self.overrides.get("session_timeout_ms", 9000))
            if self.metadata_store == "zookeeper":
                zk_ms = int(self.overrides.get("zk_session_timeout_ms", 6000))
                session_ms = max(session_ms, zk_ms)
            self.failure_detection_s = session_ms / 1000

    @classmethod
    def from_spec(cls, spec: str) -> ReferenceTarget:
        """``reference[:embedded|:zookeeper][?controllers=N&release=V&security=sasl]``; the kind
        recorded in results is the spec as written, so runs of different set-ups are told
        apart."""
        kind, _, query = spec.partition("?")
        store = "zookeeper" if kind == "reference:zookeeper" else "embedded"
        params = parse_qs(query, keep_blank_values=True)
        unknown = set(params) - {"controllers", "release", "security"}
        if unknown:
            raise TargetError(f"reference target: unknown option(s) {', '.join(sorted(unknown))}")
        text = params.get("controllers", ["1"])[-1]
        if not text.isdigit() or not 1 <= int(text) <= 9:
            raise TargetError(f"reference target: controllers must be 1 to 9, not {text!r}")
        if int(text) > 1 and store != "zookeeper":
            raise TargetError(
                "reference target: several controllers need the ZooKeeper store "
                "(--target reference:zookeeper?controllers=N)"
            )
        security = params.get("security", ["none"])[-1]
        if security not in SECURITIES:
            raise TargetError(f"reference target: security must be none or sasl, not {security!r}")
        target = cls(kind=spec, metadata_store=store, controller_count=int(text), security=security)
        if "release" in params:
            target.act_as_release(params["release"][-1])
        return target

    def act_as_release(self, release: str) -> None:
        """The brokers' client listeners as Apache Kafka ``release``'s (its API ranges, its
        transaction.version) from the release table."""
        from conformance.protocol.releases import broker_settings

        try:
            extra = broker_settings(release)
        except ValueError as e:
            raise TargetError(f"reference target: {e}") from None
        settings = self.broker_overrides.setdefault("settings", {})
        settings.update(extra)

    def start(self) -> None:
        from reference_impl.launcher import Cluster, ClusterError

        self._dir = Path(tempfile.mkdtemp(prefix="kc-reference-"))
        store = "embedded"
        if self.metadata_store == "zookeeper":
            self._zk = ZooKeeperServer()
            self._zk.start()
            store = f"zookeeper://{self._zk.connect}/kafka"
            self.zookeeper = self.zookeeper or f"{self._zk.connect}/kafka"
        overrides, super_user = dict(self.overrides), None
        if self.security == "sasl":
            overrides |= self._secured()
            super_user = ("PLAIN", SECURITY_USERS[0], self.passwords[SECURITY_USERS[0]])
        self._cluster = Cluster(
            self._dir,
            brokers=self.brokers,
            controllers=self.controller_count,
            metadata_store=store,
            client_controller_listener=True,
            overrides=overrides,
            broker_overrides=dict(self.broker_overrides),
            controller_overrides={"settings": {"groups": dict(SUITE_GROUP_TIMINGS)}},
            sasl=super_user,
        )
        spawned = _now_ms()
        try:
            self._cluster.start(timeout=self.startup_timeout)
        except ClusterError as e:
            self.stop()
            raise TargetError(f"the reference cluster did not start: {e}") from None
        nodes = self._cluster.broker_nodes()
        self.started = {n.config.node_id: (spawned, _now_ms()) for n in nodes}
        self.bootstrap = [Endpoint(*self._cluster.broker_address(n)) for n in nodes]
        self.restartable = {
            n.config.node_id: Endpoint(*self._cluster.broker_address(n)) for n in nodes
        }
        try:
            active = self._cluster.active_controller(self.startup_timeout)
        except ClusterError as e:
            self.stop()
            raise TargetError(f"the reference cluster did not start: {e}") from None
        given = self.controller
        self._point_at(active)
        for ep in self.controllers:
            if not wait_listening(ep, self.startup_timeout):
                self.stop()
                raise TargetError(f"the reference controller at {ep} does not listen")
        self.controller = given or self.controllers[0]

    def _point_at(self, active: Any) -> None:
        """The controller endpoints with ``active``'s first (``controllers``, ``controller``,
        ``controller_client``)."""
        ordered = [active, *(c for c in self._cluster.controller_nodes() if c is not active)]
        self.controllers = [
            Endpoint(*self._cluster.broker_address(c, "CONTROLLER")) for c in ordered
        ]
        self.controller = self.controllers[0]
        external = active.config.listener("EXTERNAL")
        self.controller_client = Endpoint(external.host, external.port)

    def _follow_the_active_controller(self) -> None:
        """With standbys (the ZooKeeper store, ``controllers=N``), another controller may be
        active once controllers were killed and started again: the suite's controller requests
        go to the active one, as they did before (a standby answers them NOT_CONTROLLER)."""
        from reference_impl.launcher import ClusterError

        if self.controller_count < 2 or self._cluster is None:
            return
        try:
            self._point_at(self._cluster.active_controller(self.startup_timeout))
        except ClusterError as e:
            raise TargetError(f"no reference controller became active again: {e}") from None

    def _secured(self) -> dict[str, Any]:
        """``security=sasl``: passwords (drawn at the first start, kept by a restart, which the
        run's workers do not hear of), the node settings that use them, the suite's principals
        (``sasl``: the super user; ``unprivileged``: alice)."""
        admin, alice, broker = SECURITY_USERS
        self.passwords = self.passwords or {u: secrets.token_urlsafe(12) for u in SECURITY_USERS}
        self.sasl = Sasl("PLAIN", admin, self.passwords[admin])
        self.unprivileged = Sasl("PLAIN", alice, self.passwords[alice])
        settings = dict(self.overrides.get("settings", {}))
        settings["security"] = {
            "sasl_mechanisms": list(SASL_MECHANISMS),
            "users": dict(self.passwords),
            "inter_node": {
                "mechanism": "SCRAM-SHA-512",
                "username": broker,
                "password": self.passwords[broker],
            },
            "authorizer": "acl",
            "session_lifetime_ms": base.REAUTH_MS,
            "session_lifetime_mechanisms": [base.REAUTH_MECHANISM],
        }
        return {"settings": settings, "super_users": [f"User:{admin}"]}

    def restart_broker(self, node_id: int) -> None:
        from reference_impl.launcher import ClusterError

        names = [n.name for n in self._cluster.broker_nodes() if n.config.node_id == node_id]
        if not names:
            raise TargetError(f"the reference cluster has no broker {node_id}")
        import signal

        self._cluster.kill(names[0], signal.SIGTERM)
        spawned = _now_ms()
        self._cluster.start_node(names[0])
        try:
            self._cluster.wait_ready(self.startup_timeout)
        except ClusterError as e:
            raise TargetError(f"broker {node_id} did not come back: {e}") from None
        self.started[node_id] = (spawned, _now_ms())

    def _fault_node(self, node_id: int) -> Any:
        for node in [] if self._cluster is None else self._cluster.nodes.values():
            if node.config.node_id == node_id:
                return node
        raise TargetError(f"the reference cluster has no node {node_id}")

    def fault_nodes(self, role: str = "broker") -> list[int]:
        if self._cluster is None:
            return []
        return sorted(
            n.config.node_id for n in self._cluster.nodes.values() if n.config.role == role
        )

    def signal_node(self, node_id: int, sig: int) -> None:
        self._cluster.kill(self._fault_node(node_id).name, sig)

    def start_node(self, node_id: int) -> None:
        self.start_nodes([node_id])

    def start_nodes(self, node_ids: list[int]) -> None:
        """Every node's process spawned first, then each waited for: their starts overlap."""
        nodes = [self._fault_node(i) for i in node_ids]
        spawned = _now_ms()
        for node in nodes:
            self._cluster.start_node(node.name)
        for node in nodes:
            listener = node.config.listeners[0]
            if not wait_listening(Endpoint(listener.host, listener.port), self.startup_timeout):
                raise TargetError(f"{node.name} did not listen again: {node.last_words()}")
            if node.config.role == "broker":
                self.started[node.config.node_id] = (spawned, _now_ms())
        if any(node.config.role == "controller" for node in nodes):
            self._follow_the_active_controller()

    def node_running(self, node_id: int) -> bool:
        return self._fault_node(node_id).running

    def recover(self) -> None:
        """Start again the nodes that died (same data, same ports), controllers first, and wait
        until every broker is Online; with none dead, start the cluster afresh."""
        from reference_impl.launcher import ClusterError

        cluster = self._cluster
        dead = [] if cluster is None else [n for n in cluster.nodes.values() if not n.running]
        if not dead:
            super().recover()
            return
        spawned = _now_ms()
        try:
            for node in sorted(dead, key=lambda n: n.config.role != "controller"):
                cluster.start_node(node.name)
            cluster.wait_ready(self.startup_timeout)
        except ClusterError as e:
            raise TargetError(f"the reference cluster did not come back: {e}") from None
        for node in dead:
            if node.config.role == "broker":
                self.started[node.config.node_id] = (spawned, _now_ms())
        if any(node.config.role == "controller" for node in dead):
            self._follow_the_active_controller()

    def stop(self) -> None:
        cluster, self._cluster = self._cluster, None
        try:
            if cluster is not None:
                cluster.stop(timeout=15)
        finally:
            if self._zk is not None:
                self._zk.stop()
                self._zk = None
            if self._dir is not None:
                shutil.rmtree(self._dir, ignore_errors=True)
                self._dir = None
