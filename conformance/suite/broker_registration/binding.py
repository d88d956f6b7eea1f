"""How the broker-registration-lifecycle model
(``specs/models/broker-registration-lifecycle.json``) meets a target.

Entities are fake brokers: ids in a suite-owned range (far above any real broker id, a fresh
block per run of the model), registered on the controller listener with the listener names the
target's brokers report (DescribeConfigs ``listeners``; ``PLAINTEXT`` where they do not say) at
a loopback port nobody listens on, and the ``metadata.version`` feature a KRaft controller asks
for. The target's real brokers are never touched; every fake still registered at the end is
unregistered.

Views: client Metadata and DescribeCluster from the bootstrap broker (``views="bootstrap"``) or
from every broker (``views="brokers"``), and, with ``--zookeeper``, the draft's
``/cluster/brokers/N`` records.
"""

from __future__ import annotations

import itertools
import random
from dataclasses import dataclass
from functools import cache
from typing import Any

from conformance.client.ports import free_port
from conformance.client.wire import ConnectionClosed
from conformance.protocol import ApiKey
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.models import Binding, Model, ModelRunner, load_model
from conformance.suite.kit.znodes import ZooKeeperReader
from conformance.targets.base import Endpoint

#: fake broker ids start here (int32 ids; real clusters number brokers far below)
SUITE_IDS = 1_900_000_000
BLOCK = 8
_blocks = itertools.count(random.SystemRandom().randrange(20_000_000))
#: a metadata offset no registration reaches, and one below every registration
CAUGHT_UP_OFFSET = 2**62
BEHIND_OFFSET = -1
#: Kafka's broker.session.timeout.ms, where the target does not report its own
KAFKA_SESSION_TIMEOUT_MS = 9000
#: how long brokers may take to show a change the controller made
PROPAGATION = 5.0
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
#: what a KRaft controller checks a registering broker supports: every finalized feature (these,
#: and whatever else the controller's ApiVersions lists as finalized)
FEATURES = [
    {"Name": "metadata.version", "MinSupportedVersion": 1, "MaxSupportedVersion": 32767},
    *(
        {"Name": name, "MinSupportedVersion": 0, "MaxSupportedVersion": 32767}
        for name in ("kraft.version", "group.version", "transaction.version")
    ),
]


def claimed_features(harness: Harness) -> list[dict[str, Any]]:
    """FEATURES, plus every feature the controller's ApiVersions (v3+) lists as finalized,
    claimed with the widest range: Kafka 4.x finalizes features 3.9 did not know, and its
    controller answers UNSUPPORTED_VERSION to a registration that leaves one out."""
    out = list(FEATURES)
    hi = harness.advertised_on("controller").get(ApiKey.API_VERSIONS, (0, 0))[1]
    if hi < 3:
        return out
    answer = harness.connect("controller").request(
        ApiKey.API_VERSIONS,
        3,
        {"ClientSoftwareName": "kafka-conformance", "ClientSoftwareVersion": "1"},
    )
    known = {f["Name"] for f in out}
    for feature in answer.body.get("FinalizedFeatures") or []:
        if feature["Name"] not in known:
            known.add(feature["Name"])
            out.append(
                {"Name": feature["Name"], "MinSupportedVersion": 0, "MaxSupportedVersion": 32767}
            )
    return out


@cache
def model() -> Model:
    return load_model("broker-registration-lifecycle")


@dataclass
class Facts:
    """What the lifecycle tests learn of the target once per test."""

    cluster_id: str
    brokers: list[cluster.Broker]
    #: (listener name, security protocol id) of the target's brokers
    listeners: list[tuple[str, int]]
    #: whether the names came from the target (else guessed)
    listeners_learned: bool
    session_timeout: float
    dead_port: int
    #: the features each registration claims (claimed_features)
    features: list[dict[str, Any]]


def _parse_listeners(cfg: dict[str, str]) -> list[tuple[str, int]]:
    protocols: dict[str, int] = {}
    for pair in (cfg.get("listener.security.protocol.map") or "").split(","):
        name, _, proto = pair.partition(":")
        if name and proto.strip() in SECURITY_PROTOCOLS:
            protocols[name.strip()] = SECURITY_PROTOCOLS[proto.strip()]
    out = []
    for item in (cfg.get("listeners") or "").split(","):
        name = item.split("://", 1)[0].strip()
        if name and "://" in item:
            out.append((name, protocols.get(name, SECURITY_PROTOCOLS.get(name, 0))))
    return out


def learn(harness: Harness) -> Facts:
    """The controller listener's APIs, the cluster id, the brokers, their listener names and
    the broker session timeout; SKIP naming what is missing."""
    harness.endpoint("controller")  # SKIP without --controller-bootstrap
    for key in (ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT):
        harness.require(key, listener="controller")
    version = harness.pick_version(ApiKey.METADATA, "2+")
    body = cluster.metadata(harness, harness.connect(), version)
    cluster_id = body.get("ClusterId")
    if not cluster_id:
        raise MissingPrecondition(
            "the target serves no cluster id in Metadata, which BrokerRegistration must name"
        )
    found = cluster.brokers(harness, version)
    cfg = (
        cluster.broker_configs(
            harness,
            found[0],
            ["listeners", "listener.security.protocol.map", "broker.session.timeout.ms"],
        )
        if found
        else None
    ) or {}
    listeners = _parse_listeners(cfg)
    session_ms = cfg.get("broker.session.timeout.ms")
    return Facts(
        cluster_id=cluster_id,
        brokers=found,
        listeners=listeners or [("PLAINTEXT", 0)],
        listeners_learned=bool(listeners),
        session_timeout=int(session_ms) / 1000
        if session_ms and session_ms.isdigit()
        else KAFKA_SESSION_TIMEOUT_MS / 1000,
        dead_port=free_port(),
        features=claimed_features(harness),
    )


class LifecycleBinding(Binding):
    def __init__(
        self,
        harness: Harness,
        facts: Facts,
        *,
        views: str = "bootstrap",
        zk: ZooKeeperReader | None = None,
        count: int | None = None,
    ) -> None:
        self.harness, self.facts, self.zk = harness, facts, zk
        self.count = count
        self.base = SUITE_IDS + next(_blocks) * BLOCK
        if views == "brokers":
            self.views = [(str(b), b.endpoint) for b in facts.brokers]
        else:
            self.views = [(f"bootstrap {harness.target.bootstrap[0]}", harness.target.bootstrap[0])]
        self.registered: set[int] = set()
        self._conns: dict[Any, SyncConnection] = {}
        self._versions: dict[tuple[int, str], int] = {}
        self._ids: dict[int, int] = {}

    # --- the model's questions ------------------------------------------------------------

    def entity_id(self, index: int) -> int:
        self._ids[self.base + index] = index
        return self.base + index

    def context(self, name: str) -> Any:
        if name == "cluster_id":
            return self.facts.cluster_id
        if name == "listeners":
            return [
                {
                    "Name": n,
                    "Host": "127.0.0.1",
                    "Port": self.facts.dead_port,
                    "SecurityProtocol": p,
                }
                for n, p in self.facts.listeners
            ]
        if name == "features":
            return self.facts.features
        if name == "caught_up_offset":
            return CAUGHT_UP_OFFSET
        if name == "behind_offset":
            return BEHIND_OFFSET
        raise KeyError(name)

    def duration(self, name: str) -> float:
        if name == "session_timeout":
            return self.facts.session_timeout
        if name == "propagation":
            return PROPAGATION
        if name == "shutdown_bound":
            return self.facts.session_timeout + 5.0
        raise KeyError(name)

    def holds(self, precondition: str) -> bool:
        return precondition == "zookeeper" and self.zk is not None

    # --- the wire ---------------------------------------------------------------------------

    def conn(self, where: str | Endpoint) -> SyncConnection:
        conn = self._conns.get(where)
        if conn is None or conn.closed:
            conn = self._conns[where] = self.harness.connect(where)
        return conn

    def version(self, api_key: int, listener: str) -> int:
        key = (api_key, listener)
        if key not in self._versions:
            self._versions[key] = self.harness.pick_version(api_key, listener=listener)
        return self._versions[key]

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        listener, api_key = request["listener"], request["api_key"]
        version = self.version(api_key, listener)
        try:
            answer = self.conn(listener).request(api_key, version, body).body
        except ConnectionClosed:
            self._conns.pop(listener, None)
            raise
        broker_id = body.get("BrokerId")
        if answer.get("ErrorCode") == 0 and api_key == ApiKey.BROKER_REGISTRATION:
            self.registered.add(broker_id)
        elif answer.get("ErrorCode") == 0 and api_key == ApiKey.UNREGISTER_BROKER:
            self.registered.discard(broker_id)
        return answer

    def request(self, name: str, body: dict[str, Any]) -> dict:
        """One of the model's request templates with a body of the caller's."""
        return self.send(name, model().requests[name], body, None)

    # --- views --------------------------------------------------------------------------------

    def observe(self, name: str) -> dict[str, Any]:
        if name == "client_metadata_brokers":
            version = self.harness.pick_version(ApiKey.METADATA, "1+")
            return {
                label: self._ours(cluster.metadata(self.harness, self.conn(ep), version))
                for label, ep in self.views
            }
        if name == "client_describe_cluster_brokers":
            if ApiKey.DESCRIBE_CLUSTER not in self.harness.advertised:
                return {}
            version = self.harness.pick_version(ApiKey.DESCRIBE_CLUSTER)
            return {
                f"{label} DescribeCluster": self._ours(
                    cluster.describe_cluster(self.harness, self.conn(ep), version)
                )
                for label, ep in self.views
            }
        if name == "registration_records":
            assert self.zk is not None
            records: dict[int, Any] = {}
            for broker_id, index in self._ids.items():
                found = self.zk.json(f"/cluster/brokers/{broker_id}")
                records[index] = found[0] if found is not None else None
            return {"ZooKeeper /cluster/brokers": records}
        raise KeyError(name)

    def _ours(self, body: dict) -> set[int]:
        ids = {b.get("NodeId", b.get("BrokerId")) for b in body.get("Brokers") or []}
        return {self._ids[i] for i in ids if i in self._ids}

    def cleanup(self, runner: ModelRunner | None = None) -> None:
        for broker_id in sorted(self.registered):
            try:
                self.send(
                    "unregister", model().requests["unregister"], {"BrokerId": broker_id}, None
                )
            except (ConnectionError, TimeoutError, OSError):
                pass


def new_runner(
    harness: Harness,
    facts: Facts,
    allowed: tuple[str, ...],
    *,
    views: str = "bootstrap",
    invariants: list[str] | None = None,
    zk: ZooKeeperReader | None = None,
    count: int | None = None,
) -> ModelRunner:
    binding = LifecycleBinding(harness, facts, views=views, zk=zk, count=count)
    return ModelRunner(model(), binding, allowed=allowed, invariants=invariants)
