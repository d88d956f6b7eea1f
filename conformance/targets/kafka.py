"""Apache Kafka itself, a released version run as Java processes: ``kafka:VERSION[?options]``.

Options (query form, as the reference's): ``store=kraft`` (default) or ``store=zookeeper``
(3.x only: Debian's ZooKeeper is started on loopback for it), ``brokers=N`` (default 3) and
``controllers=N`` (KRaft: a quorum of controller processes of their own, default 1; the suite's
``--controller-bootstrap`` is their listener, so the BROKER-REGISTRATION requirements meet
Kafka's own controller).

The jars come from Maven Central through :mod:`conformance.targets.maven`. Each node's
settings and log are written into the run's results folder (``<run>/kafka/``). The settings suit
a test run, shortened as Kafka's own integration tests shorten them, so that a dead or frozen
node is noticed in seconds (README, "Targets"): KRaft brokers heartbeat every 400 ms and are
fenced 2 s after the last (Kafka: 2 s and 9 s); in ZooKeeper mode a broker's session lasts 6 s
(Kafka's default before 2.5; 18 s since); a follower leaves the ISR after 10 s without catching
up (``replica.lag.time.max.ms``, Kafka's default before 2.5; 30 s since); no initial rebalance
delay and a 1 s minimum member session for groups (3 s and 6 s); timed-out transactions are
looked for every second (10 s); internal topics are sized to the cluster (their replicas) and
to a test run (one partition each: Kafka's 50 cost each cluster start and broker restart CPU on
the two cores the suite shares with it); an idle metadata log gets a no-op record every 5 s
(500 ms); nodes run fewer request, network and background threads (1-2, Kafka: 3-10). The
target states how soon it notices a failure (``failure_detection_s``: the broker or ZooKeeper
session). Every process is stopped by its pid when the run ends, and dies with the
process that started it (``PR_SET_PDEATHSIG``) if that one is killed. A broker can be restarted
(KIP-78.R6, OFFSETS.R7).
Every JVM maps the release's class archive where there is one (``class_archive``: about half a
node's start-up CPU); the first broker started while there is none writes it when it stops.

``security=sasl`` (KRaft 3.5 and later: SCRAM credentials at format time, KIP-900; or ZooKeeper
mode: SCRAM credentials written into ZooKeeper before the brokers start) makes the brokers'
listener SASL_PLAINTEXT with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 enabled and StandardAuthorizer
(ZooKeeper mode: AclAuthorizer) on every node (issue 40). Two users get passwords drawn at each
start: ``admin``, a super user, and ``alice``, with no ACL (the target's ``unprivileged`` principal,
for the authorization requirements; she can log in on the controllers' listener too, which is
the target's ``controller_client``, where KIP-590.R2 sends her Envelope). The suite
authenticates as ``admin`` (PLAIN; ``SECURITY_USERS`` names the users), so every feature's
set-up and checks run as before; the SECURITY requirements open connections of their own,
unauthenticated or as ``alice``. The settings kept with the run show the passwords as
``[hidden]``; Kafka reads its own copy in the temporary folder removed at stop. The
controllers' listener is SASL_PLAINTEXT with PLAIN only (Kafka does not take SCRAM there): nodes
and the suite's ``--controller-bootstrap`` authenticate as ``admin``. SCRAM-SHA-256 sessions on the
brokers last ``REAUTH_MS`` and are re-authenticated (KIP-368: the listener's and mechanism's
``connections.max.reauth.ms``; SECURITY.R15); the suite's PLAIN ones do not expire.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs

from conformance.client.ports import free_port
from conformance.targets.base import (
    REAUTH_MECHANISM,
    REAUTH_MS,
    Endpoint,
    Sasl,
    Target,
    TargetError,
    die_with_parent,
    metadata_brokers,
    stop_process,
    wait_listening,
)
from conformance.targets.class_archive import ClassArchive, class_archive
from conformance.targets.format_nodes import MAIN, NEXT, exit_codes, helper_classes
from conformance.targets.maven import broker_classpath, check_version
from conformance.targets.zookeeper import ZooKeeperServer

STORES = ("kraft", "zookeeper")
SECURITIES = ("none", "sasl")
#: the users of ``security=sasl``: the suite's super user, then one with no ACL
SECURITY_USERS = ("admin", "alice")
SASL_MECHANISMS_ENABLED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SASL_LISTENER = "SASL_PLAINTEXT"
#: the suite's usual timings, as the reference target sets them: no delay before a new group's
#: first rebalance, a 1 s minimum member session, brokers fenced 2 s after their last heartbeat
SUITE_SETTINGS = {
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "auto.create.topics.enable": "true",
    "num.partitions": "1",
    "log.flush.interval.messages": "9223372036854775807",
}
#: failure detection, shortened for a test run (the module's docstring): how long a follower
#: may lag before it leaves the ISR, and how often timed-out transactions are aborted
FAST_FAILURES = {
    "replica.lag.time.max.ms": "10000",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": "1000",
}
#: KRaft: a broker heartbeats every 400 ms, five times a session, and is fenced 2 s after its last
#: heartbeat (Kafka: 2 s and 9 s, four and a half), as the reference. Every kill or pause waits
#: one session, and so does a restarted broker: the controller refuses its new incarnation
#: (DUPLICATE_BROKER_REGISTRATION) until the old one's session ends, even after a clean stop.
#: The longest gap between a broker's heartbeat answers in whole runs at load 8-18: about 1 s
#: (benchmarks/README.md, session 16, K); at 250 ms an idle cluster used about 0.01 CPU-s/s
#: more (session 15, K)
KRAFT_SETTINGS = {"broker.heartbeat.interval.ms": "400", "broker.session.timeout.ms": "2000"}
#: KRaft controllers (3.3 and later; older ones ignore it): the active controller appends a no-op
#: record to an idle metadata log every 5 s (Kafka: 500 ms), which every node replicates and
#: every broker loads; each change the suite makes is a record of its own and reaches the brokers
#: as soon as before
KRAFT_CONTROLLER_SETTINGS = {"metadata.max.idle.interval.ms": "5000"}
#: Kafka's internal topics at one partition each (Kafka: 50; its own integration tests often set
#: 1): a 4.4.0 cluster created the offsets and transaction topics on 3.3-4.3 CPU-s, on 0.9-1.0
#: at one partition, and a broker started again loads one partition of each, not 50 (its JVM
#: 1.2-1.3 CPU-s to 8 s after listening, 1.7-1.9 at 50), while an idle cluster's followers fetch
#: 100-150 fewer partitions (benchmarks/README.md, session 15, K). Every group's, transaction's
#: and share group's coordinator is then the leader of that one partition
INTERNAL_TOPIC_PARTITIONS = {
    "offsets.topic.num.partitions": "1",
    "transaction.state.log.num.partitions": "1",
    "share.coordinator.state.topic.num.partitions": "1",  # KIP-932 (4.x; 3.x ignores it)
}
#: KIP-848 groups (4.x; older releases ignore them): a group's consumer.session.timeout.ms may
#: be set as low as 1 s and its consumer.heartbeat.interval.ms to 0.5 s (Kafka: 45 s and 5 s);
#: the controllers check a group's configs against their own, the brokers apply them
GROUP_CONFIG_BOUNDS = {
    "group.consumer.min.session.timeout.ms": "1000",
    "group.consumer.min.heartbeat.interval.ms": "500",
    # KIP-932 share groups (4.x): share.session.timeout.ms / share.heartbeat.interval.ms alike
    "group.share.min.session.timeout.ms": "1000",
    "group.share.min.heartbeat.interval.ms": "500",
}
#: fewer of Kafka's own threads (Kafka: 3 network threads a listener, 8 request handlers, 10
#: background threads, 4 group coordinator threads in 4.x), for a test run's few connections on
#: two cores: the idle ones wake on their poll timeouts, and a restarted broker starts them all;
#: every request is still served (delayed ones wait in Kafka's purgatories, not on a handler).
#: About 3-6 CPU-s of a ~100 CPU-s whole run, the same verdicts on 4.4.0, 3.9.2 and 3.3.2 in
#: ZooKeeper mode (benchmarks/README.md, session 17, K); releases without a setting ignore it
BROKER_THREADS = {
    "num.network.threads": "1",
    "num.io.threads": "2",
    "background.threads": "2",
    "group.coordinator.threads": "1",  # KIP-848's coordinator (3.6 and later)
}
#: a KRaft controller's request threads likewise (its other threads are Kafka's fixed ones)
CONTROLLER_THREADS = {"num.network.threads": "1", "num.io.threads": "2"}
#: ZooKeeper mode: a broker's session (its /brokers/ids znode) ends 6 s after it stopped
#: (Kafka's default before KIP-537; the suite's ZooKeeper allows 1-10 s: tickTime 500 ms)
ZOOKEEPER_SETTINGS = {"zookeeper.session.timeout.ms": "6000"}
#: first node id of the KRaft controllers (brokers are 1..N)
CONTROLLER_IDS = 1000
#: JVM settings for a suite run: a few thousand small requests, where the quick compiler and a
#: one-thread collector leave the cores to the brokers' work (the same verdicts, a shorter run:
#: benchmarks/README.md, "A whole run against Apache Kafka")
TEST_JVM_OPTIONS = (
    "-Xms128m",
    "-Xmx768m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.awt.headless=true",
)
#: what Kafka's start script gives a broker, for throughput (benchmarks/bench_broker.py)
SERVER_JVM_OPTIONS = (
    "-Xms1g",
    "-Xmx1g",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
)


def _tool(cmd: list[str]) -> subprocess.Popen:
    """A short-lived Kafka tool's JVM (the quick compiler only), its output piped."""
    return subprocess.Popen(
        [cmd[0], "-XX:TieredStopAtLevel=1", *cmd[1:]],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=die_with_parent,
    )


def _now_ms() -> int:
    return int(time.time() * 1000)


def _cluster_id() -> str:
    """A new cluster id as Kafka makes them: a UUID in URL-safe Base64, 22 characters, never
    starting with "-" (Kafka draws again too: kafka-storage's --cluster-id would read it as an
    option, and formatting fails about one start in 64)."""
    for _ in range(1000):
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text
    raise TargetError("no cluster id drawn that does not start with '-'")


@dataclass
class Node:
    node_id: int
    role: str  # "broker" | "controller"
    port: int
    config: Path
    log: Path
    proc: subprocess.Popen | None = None
    #: where this node's JVM writes the release's class archive when it stops (None: it does not)
    dump: Path | None = None


@dataclass
class KafkaTarget(Target):
    kind: str = "kafka"
    name: str = "apache-kafka"
    store: str = "kraft"
    broker_count: int = 3
    controller_count: int = 1
    host: str = "127.0.0.1"
    startup_timeout: float = 120.0
    jvm_options: tuple[str, ...] = TEST_JVM_OPTIONS
    #: the internal topics' partition counts (empty: Kafka's own, 50, as the differential mode
    #: sets them to meet the reference's Kafka-sized offsets topic)
    internal_topic_partitions: dict[str, str] = field(
        default_factory=lambda: dict(INTERNAL_TOPIC_PARTITIONS)
    )
    _nodes: list[Node] = field(default_factory=list, repr=False)
    _classpath: str = field(default="", repr=False)
    _dir: Path | None = field(default=None, repr=False)
    _folder: Path | None = field(default=None, repr=False)
    _zk: ZooKeeperServer | None = field(default=None, repr=False)
    security: str = "none"
    #: ``security=sasl``: user -> password, drawn at each start
    passwords: dict[str, str] = field(default_factory=dict, repr=False)
    _archive: ClassArchive | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.failure_detection_s is None:  # the session that ends a dead broker's place
            key = "zookeeper.session.timeout.ms" if self.store == "zookeeper" else None
            session = (
                ZOOKEEPER_SETTINGS[key] if key else KRAFT_SETTINGS["broker.session.timeout.ms"]
            )
            self.failure_detection_s = int(session) / 1000

    @classmethod
    def from_spec(cls, spec: str) -> KafkaTarget:
        """``VERSION[?store=kraft|zookeeper&brokers=N&controllers=N&security=sasl]`` (after
        ``kafka:``)."""
        text, _, query = spec.partition("?")
        version = check_version(text)
        params = parse_qs(query, keep_blank_values=True)
        unknown = set(params) - {"store", "brokers", "controllers", "security"}
        if unknown:
            raise TargetError(f"kafka target: unknown option(s) {', '.join(sorted(unknown))}")
        store = params.get("store", ["kraft"])[-1]
        if store not in STORES:
            raise TargetError(f"kafka target: store must be kraft or zookeeper, not {store!r}")
        if store == "zookeeper" and int(version.split(".")[0]) >= 4:
            raise TargetError(
                f"kafka target: Apache Kafka {version} has no ZooKeeper mode (removed in 4.0); "
                "use store=kraft or a 3.x release"
            )
        counts = {}
        for key, default, top in (("brokers", "3", 9), ("controllers", "1", 5)):
            value = params.get(key, [default])[-1]
            if not value.isdigit() or not 1 <= int(value) <= top:
                raise TargetError(f"kafka target: {key} must be 1 to {top}, not {value!r}")
            counts[key] = int(value)
        if store == "zookeeper" and "controllers" in params:
            raise TargetError(
                "kafka target: controllers=N is for KRaft; in ZooKeeper mode a broker is elected"
            )
        security = params.get("security", ["none"])[-1]
        if security not in SECURITIES:
            raise TargetError(f"kafka target: security must be none or sasl, not {security!r}")
        if (
            security == "sasl"
            and store == "kraft"
            and tuple(int(x) for x in version.split(".")[:2]) < (3, 5)
        ):
            raise TargetError(
                "kafka target: security=sasl in KRaft needs Apache Kafka 3.5 or later "
                "(SCRAM credentials at format time)"
            )
        name = "apache-kafka" if store == "kraft" else "apache-kafka-zookeeper"
        return cls(
            security=security,
            kind=f"kafka:{spec}",
            name=name,
            version=version,
            store=store,
            broker_count=counts["brokers"],
            controller_count=counts["controllers"],
            client_listener_types=("broker",) if store == "kraft" else ("zkBroker",),
        )

    # --- configuration -------------------------------------------------------------------------

    def _settings(self, node: Node, voters: str, zookeeper: str | None) -> dict[str, str]:
        data = str(self._dir / f"{node.role}-{node.node_id}")
        listen = f"{self.host}:{node.port}"
        out: dict[str, str] = {"log.dirs": data}
        if self.store == "zookeeper":
            listeners = {
                "listeners": f"PLAINTEXT://{listen}",
                "advertised.listeners": f"PLAINTEXT://{listen}",
            }
            if self.security == "sasl":
                listeners = self._zookeeper_security_settings(listen)
            return {
                **out,
                "broker.id": str(node.node_id),
                "zookeeper.connect": str(zookeeper),
                **listeners,
                **self._replication(),
                **SUITE_SETTINGS,
                **GROUP_CONFIG_BOUNDS,
                **FAST_FAILURES,
                **ZOOKEEPER_SETTINGS,
                **BROKER_THREADS,
            }
        out |= {
            "node.id": str(node.node_id),
            "controller.quorum.voters": voters,
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            **KRAFT_SETTINGS,
            **GROUP_CONFIG_BOUNDS,
        }
        if self.security == "sasl":
            out |= self._security_settings(listen, node.role)
        if node.role == "controller":
            return {
                **out,
                **KRAFT_CONTROLLER_SETTINGS,
                **CONTROLLER_THREADS,
                "process.roles": "controller",
                "listeners": f"CONTROLLER://{listen}",
            }
        if self.security == "sasl":
            return {
                **out,
                "process.roles": "broker",
                **self._replication(),
                **SUITE_SETTINGS,
                **FAST_FAILURES,
                **BROKER_THREADS,
            }
        return {
            **out,
            "process.roles": "broker",
            "listeners": f"PLAINTEXT://{listen}",
            "advertised.listeners": f"PLAINTEXT://{listen}",
            "inter.broker.listener.name": "PLAINTEXT",
            **self._replication(),
            **SUITE_SETTINGS,
            **FAST_FAILURES,
            **BROKER_THREADS,
        }

    def _plain_jaas(self) -> str:
        """The PLAIN login line: the super user as whom nodes log in, and every user."""
        admin = SECURITY_USERS[0]
        users = " ".join(f'user_{u}="{p}"' for u, p in self.passwords.items())
        return (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{admin}" password="{self.passwords[admin]}" {users};'
        )

    def _broker_sasl(self, listen: str) -> dict[str, str]:
        """The brokers' one listener SASL_PLAINTEXT with PLAIN (the users in its JAAS line) and
        both SCRAMs (their users are the cluster's), brokers between themselves over it as the
        super user with PLAIN, who alone is a super user."""
        prefix = f"listener.name.{SASL_LISTENER.lower()}"
        return {
            "super.users": f"User:{SECURITY_USERS[0]}",
            "listeners": f"{SASL_LISTENER}://{listen}",
            "advertised.listeners": f"{SASL_LISTENER}://{listen}",
            "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS_ENABLED),
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            f"{prefix}.plain.sasl.jaas.config": self._plain_jaas(),
            **{
                f"{prefix}.{m.lower()}.sasl.jaas.config": (
                    "org.apache.kafka.common.security.scram.ScramLoginModule required;"
                )
                for m in SASL_MECHANISMS_ENABLED[1:]
            },
            f"{prefix}.{REAUTH_MECHANISM.lower()}.connections.max.reauth.ms": str(REAUTH_MS),
        }

    def _security_settings(self, listen: str, role: str) -> dict[str, str]:
        """``security=sasl`` in KRaft: StandardAuthorizer and the super user on every node; the
        controllers' listener SASL_PLAINTEXT with PLAIN (nodes and the suite's
        --controller-bootstrap authenticate as the super user), the brokers' as
        :meth:`_broker_sasl` (SCRAM users in the cluster metadata)."""
        out = {
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:{SECURITY_USERS[0]}",
            "listener.security.protocol.map": f"{SASL_LISTENER}:{SASL_LISTENER},"
            f"CONTROLLER:{SASL_LISTENER}",
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": self._plain_jaas(),
        }
        if role == "controller":
            return out
        return {**out, **self._broker_sasl(listen), "inter.broker.listener.name": SASL_LISTENER}

    def _zookeeper_security_settings(self, listen: str) -> dict[str, str]:
        """``security=sasl`` in ZooKeeper mode: :meth:`_broker_sasl` (SCRAM users written into
        ZooKeeper before the brokers start) and the ZooKeeper-backed AclAuthorizer."""
        return {
            **self._broker_sasl(listen),
            "security.inter.broker.protocol": SASL_LISTENER,
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        }

    def _zookeeper_scram_users(self, zookeeper: str) -> None:
        """``security=sasl`` in ZooKeeper mode: each user's SCRAM credentials written into
        ZooKeeper (``kafka-configs --zookeeper``, all users at once) before any broker starts;
        the chroot is made first, as the tool does not make it."""
        from kazoo.client import KazooClient

        hosts, _, chroot = zookeeper.partition("/")
        zk = KazooClient(hosts=hosts)
        zk.start(timeout=10)
        try:
            zk.ensure_path(f"/{chroot}")
        finally:
            zk.stop()
            zk.close()
        procs = []
        for user, password in self.passwords.items():
            config = ",".join(f"{m}=[password={password}]" for m in SASL_MECHANISMS_ENABLED[1:])
            cmd = self._java_command(
                "kafka.admin.ConfigCommand",
                "--zookeeper",
                zookeeper,
                "--alter",
                "--add-config",
                config,
                "--entity-type",
                "users",
                "--entity-name",
                user,
            )
            procs.append((user, _tool(cmd)))
        for user, proc in procs:
            out, _ = proc.communicate(timeout=120)
            if proc.returncode != 0:
                for password in self.passwords.values():
                    out = out.replace(password, "[hidden]")
                raise TargetError(
                    f"kafka {self.version}: writing the SCRAM credentials of {user} failed: "
                    f"{out.strip()[-300:]}"
                )

    def _replication(self) -> dict[str, str]:
        rf = str(min(3, self.broker_count))
        return {
            "offsets.topic.replication.factor": rf,
            "transaction.state.log.replication.factor": rf,
            "transaction.state.log.min.isr": "1",
            # KIP-932 (4.x): the share-group state topic, else a cluster of fewer than 3 brokers
            # never initializes a share partition (no assignment); 3.x ignores them
            "share.coordinator.state.topic.replication.factor": rf,
            "share.coordinator.state.topic.min.isr": "1",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            **self.internal_topic_partitions,
        }

    # --- running -------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Java on the PATH and the release's jars in the cache (fetched now if need be)."""
        java = shutil.which("java")
        if java is None:
            raise TargetError("the kafka target needs Java 17 (java on the PATH)")
        self._java = java
        self._classpath = broker_classpath(self.version)
        self._archive = class_archive(self._classpath, java)

    def start(self) -> None:
        self.prepare()
        self._dir = Path(tempfile.mkdtemp(prefix=f"kc-kafka-{self.version}-"))
        self._folder = (self.logs_dir or self._dir) / "kafka"
        self._folder.mkdir(parents=True, exist_ok=True)
        zookeeper = None
        if self.security == "sasl":
            # drawn once: a restart keeps them (the run's workers know the first ones)
            self.passwords = self.passwords or {
                u: secrets.token_urlsafe(12) for u in SECURITY_USERS
            }
            # PLAIN: the one mechanism of the controllers' listener too
            self.sasl = Sasl("PLAIN", SECURITY_USERS[0], self.passwords[SECURITY_USERS[0]])
            self.unprivileged = Sasl("PLAIN", SECURITY_USERS[1], self.passwords[SECURITY_USERS[1]])
        try:
            if self.store == "zookeeper":
                self._zk = ZooKeeperServer(self.host)
                self._zk.start()
                zookeeper = f"{self._zk.connect}/kafka"
                self.zookeeper = self.zookeeper or zookeeper
            self._nodes = self._plan()
            first = next(n for n in self._nodes if n.role == "broker")
            first.dump = self._archive.writer(f"broker{first.node_id}") if self._archive else None
            controllers = [n for n in self._nodes if n.role == "controller"]
            voters = ",".join(f"{n.node_id}@{self.host}:{n.port}" for n in controllers)
            for node in self._nodes:
                settings = self._settings(node, voters, zookeeper)
                node.config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
                if self.passwords:  # kept with the run without its secrets
                    text = node.config.read_text()
                    for password in self.passwords.values():
                        text = text.replace(password, "[hidden]")
                    node.config = self._dir / node.config.name
                    node.config.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))
                    (self._folder / node.config.name).write_text(text)
            if self.store == "kraft":
                self._format(_cluster_id())
            elif self.passwords:
                self._zookeeper_scram_users(str(zookeeper))
            spawned = _now_ms()
            for node in controllers:
                self._spawn(node)
            for node in self._nodes:
                if node.role == "broker":
                    self._spawn(node)
            self._wait_ready(self.startup_timeout)
        except BaseException:
            self.stop()
            raise
        brokers = [n for n in self._nodes if n.role == "broker"]
        self.bootstrap = [Endpoint(self.host, n.port) for n in brokers]
        self.restartable = {n.node_id: Endpoint(self.host, n.port) for n in brokers}
        self.started = {n.node_id: (spawned, _now_ms()) for n in brokers}
        if controllers:
            self.controllers = [Endpoint(self.host, n.port) for n in controllers]
            self.controller = self.controller or self.controllers[0]
            if self.security == "sasl":  # where alice, a client principal, can log in too
                self.controller_client = self.controllers[0]

    def _plan(self) -> list[Node]:
        assert self._folder is not None
        nodes = []
        if self.store == "kraft":
            for i in range(self.controller_count):
                nodes.append(self._node(CONTROLLER_IDS + i, "controller"))
        for i in range(1, self.broker_count + 1):
            nodes.append(self._node(i, "broker"))
        return nodes

    def _node(self, node_id: int, role: str) -> Node:
        assert self._folder is not None
        base = self._folder / f"{role}-{node_id}"
        return Node(
            node_id,
            role,
            free_port(self.host),
            base.with_suffix(".properties"),
            base.with_suffix(".log"),
        )

    def _java_command(
        self, main: str, *args: str, dump: Path | None = None, classpath_tail: str = ""
    ) -> list[str]:
        level = os.environ.get("KC_KAFKA_LOG_LEVEL", "warn")
        if dump is not None:  # the class archive written at exit (``class_archive``)
            sharing: tuple[str, ...] = (f"-XX:ArchiveClassesAtExit={dump}",)
        else:
            sharing = self._archive.options() if self._archive is not None else ()
        return [
            self._java,
            *self.jvm_options,
            *sharing,
            f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}",
            "-Dorg.slf4j.simpleLogger.showDateTime=true",
            "-cp",
            f"{self._classpath}:{classpath_tail}" if classpath_tail else self._classpath,
            main,
            *args,
        ]

    def _format_args(self, node: Node, cluster_id: str) -> list[str]:
        args = ["format", "-t", cluster_id, "-c", str(node.config)]
        for user, password in self.passwords.items():  # security=sasl: SCRAM users
            for mech in SASL_MECHANISMS_ENABLED[1:]:
                args += ["--add-scram", f"{mech}=[name={user},password={password}]"]
        return args

    def _format(self, cluster_id: str) -> None:
        """Format every node's storage for KRaft (what ``kafka-storage.sh format`` does): all
        nodes in one JVM (``format_nodes``), or where that cannot be, each in a short JVM of its
        own, all at once."""
        helper = helper_classes()
        if helper is not None and self._format_in_one(helper, cluster_id):
            return
        procs = []
        for node in self._nodes:
            cmd = self._java_command(
                "kafka.tools.StorageTool", *self._format_args(node, cluster_id)
            )
            procs.append((node, _tool(cmd)))
        failed = None
        for node, proc in procs:
            try:
                out, _ = proc.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()
                out, _ = proc.communicate()
            if proc.returncode != 0 and failed is None:
                failed = (node, " ".join((out or "").split())[-300:])
        if failed is not None:
            node, why = failed
            raise TargetError(
                f"kafka {self.version}: formatting the storage of {node.role} "
                f"{node.node_id} failed: {why}"
            )

    def _format_in_one(self, helper: Path, cluster_id: str) -> bool:
        """False where the helper formatted nothing (it could not run Kafka's tool)."""
        args: list[str] = []
        for node in self._nodes:
            args += ([NEXT] if args else []) + self._format_args(node, cluster_id)
        # after the release's jars: the class archive maps only with its classpath first
        cmd = self._java_command(MAIN, *args, classpath_tail=str(helper))
        proc = _tool(cmd)
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
        if proc.returncode == 0:
            return True
        codes = exit_codes(out or "")
        if not codes:
            return False
        node = next((n for i, n in enumerate(self._nodes) if codes.get(i, 1) != 0), self._nodes[0])
        for password in self.passwords.values():
            out = (out or "").replace(password, "[hidden]")
        raise TargetError(
            f"kafka {self.version}: formatting the storage of {node.role} {node.node_id} "
            f"failed: {' '.join((out or '').split())[-300:]}"
        )

    def _spawn(self, node: Node) -> None:
        if node.dump is not None and node.proc is not None and self._archive is not None:
            self._archive.keep(node.dump, node.proc)  # what its last process wrote, if it did
            node.dump = self._archive.writer(f"{node.role}{node.node_id}")
        with node.log.open("ab") as out:
            node.proc = subprocess.Popen(
                self._java_command("kafka.Kafka", str(node.config), dump=node.dump),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=die_with_parent,
            )

    def _wait_ready(self, timeout: float) -> None:
        """Every node listens and Metadata on each broker lists every broker."""
        deadline = time.monotonic() + timeout
        for node in self._nodes:
            self._wait_node(node, deadline)
        brokers = [n for n in self._nodes if n.role == "broker"]
        for node in brokers:
            ep = Endpoint(self.host, node.port)
            while metadata_brokers(ep, 5.0, self.sasl) < len(brokers):
                self._check_alive(node)
                if time.monotonic() >= deadline:
                    self._failed(node, f"its Metadata did not list {len(brokers)} brokers")
                time.sleep(0.2)

    def _wait_node(self, node: Node, deadline: float) -> None:
        ep = Endpoint(self.host, node.port)
        while not wait_listening(ep, 0.5):
            self._check_alive(node)
            if time.monotonic() >= deadline:
                self._failed(node, f"did not listen on {ep}")

    def _check_alive(self, node: Node) -> None:
        if node.proc is not None and node.proc.poll() is not None:
            self._failed(node, f"exited with code {node.proc.returncode}")

    def _failed(self, node: Node, why: str) -> None:
        last = ""
        if node.log.exists():
            lines = [x for x in node.log.read_text(errors="replace").splitlines() if x.strip()]
            last = next((x for x in reversed(lines) if "ERROR" in x or "Exception" in x), "")
            last = last or (lines[-1] if lines else "")
        raise TargetError(
            f"Apache Kafka {self.version} {node.role} {node.node_id} {why} within "
            f"{self.startup_timeout:.0f} s; its log: {node.log}"
            + (f" (last: {last.strip()[:200]})" if last else "")
        )

    def restart_broker(self, node_id: int) -> None:
        node = next((n for n in self._nodes if n.role == "broker" and n.node_id == node_id), None)
        if node is None:
            raise TargetError(f"Apache Kafka {self.version} has no broker {node_id}")
        stop_process(node.proc, 60)
        spawned = _now_ms()
        self._spawn(node)
        self._wait_ready(self.startup_timeout)
        self.started[node_id] = (spawned, _now_ms())

    def _fault_node(self, node_id: int) -> Node:
        node = next((n for n in self._nodes if n.node_id == node_id), None)
        if node is None:
            raise TargetError(f"Apache Kafka {self.version} has no node {node_id}")
        return node

    def fault_nodes(self, role: str = "broker") -> list[int]:
        return sorted(n.node_id for n in self._nodes if n.role == role)

    def signal_node(self, node_id: int, sig: int) -> None:
        node = self._fault_node(node_id)
        if node.proc is None or node.proc.poll() is not None:
            return
        os.kill(node.proc.pid, sig)
        if sig == signal.SIGKILL:
            node.proc.wait(30)

    def start_node(self, node_id: int) -> None:
        node = self._fault_node(node_id)
        if node.proc is not None and node.proc.poll() is None:
            raise TargetError(f"Apache Kafka {node.role} {node_id} is already running")
        spawned = _now_ms()
        deadline = time.monotonic() + self.startup_timeout
        while True:
            this_spawn = _now_ms()
            self._spawn(node)
            try:
                self._wait_node(node, deadline)
                if self.store == "zookeeper" and node.role == "broker":
                    self._wait_registered(node, this_spawn, deadline)
                break
            except TargetError:
                # ZooKeeper mode: a broker killed with SIGKILL leaves its /brokers/ids znode
                # until its ZooKeeper session expires, and a new process finding it exits at
                # once; started again until then, as a supervisor would
                retry = self.store == "zookeeper" and node.proc is not None
                if not retry or node.proc.poll() is None or time.monotonic() >= deadline:
                    raise
                time.sleep(1.0)
        if node.role == "broker":
            self.started[node_id] = (spawned, _now_ms())

    def _wait_registered(self, node: Node, since_ms: int, deadline: float) -> None:
        """ZooKeeper mode: until the broker's /brokers/ids znode is its own (the broker JSON's
        timestamp is when this process registered). A broker listens before it registers, and
        one that finds the znode of its killed predecessor exits then (NodeExists: that
        session has not ended yet), so listening alone does not say it started: 2.8.2's
        cluster-kill lost broker 1 so under load (issue 41)."""
        from kazoo.client import KazooClient
        from kazoo.exceptions import NoNodeError

        zk = KazooClient(hosts=str(self.zookeeper), read_only=True)
        zk.start(timeout=max(1.0, deadline - time.monotonic()))
        try:
            while True:
                self._check_alive(node)
                try:
                    data, _ = zk.get(f"/brokers/ids/{node.node_id}")
                    if int(json.loads(data).get("timestamp", 0)) >= since_ms:
                        return
                except NoNodeError:
                    pass
                if time.monotonic() >= deadline:
                    self._failed(node, "did not register in ZooKeeper")
                time.sleep(0.2)
        finally:
            zk.stop()
            zk.close()

    def start_nodes(self, node_ids: list[int]) -> None:
        """KRaft: every JVM spawned from this thread, then each waited for (their starts
        overlap). ZooKeeper mode starts them one by one: a broker may need starting again
        until its old znode's session expires (``start_node``)."""
        if self.store == "zookeeper":
            super().start_nodes(node_ids)
            return
        nodes = [self._fault_node(i) for i in node_ids]
        for node in nodes:
            if node.proc is not None and node.proc.poll() is None:
                raise TargetError(f"Apache Kafka {node.role} {node.node_id} is already running")
        spawned = _now_ms()
        deadline = time.monotonic() + self.startup_timeout
        for node in nodes:
            self._spawn(node)
        for node in nodes:
            self._wait_node(node, deadline)
            if node.role == "broker":
                self.started[node.node_id] = (spawned, _now_ms())

    def node_running(self, node_id: int) -> bool:
        proc = self._fault_node(node_id).proc
        return proc is not None and proc.poll() is None

    @property
    def pids(self) -> list[int]:
        return [n.proc.pid for n in self._nodes if n.proc is not None and n.proc.poll() is None]

    def stop(self) -> None:
        """Brokers first (all at once), then the controllers, each by its pid."""
        for role in ("broker", "controller"):
            group = [n for n in self._nodes if n.role == role and n.proc is not None]
            for node in group:
                if node.proc is not None and node.proc.poll() is None:
                    os.kill(node.proc.pid, signal.SIGTERM)
            for node in group:
                stop_process(node.proc, 20)
                if node.dump is not None and self._archive is not None:
                    self._archive.keep(node.dump, node.proc)
                    node.dump = None
                node.proc = None
        if self._zk is not None:
            self._zk.stop()
            self._zk = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None
