"""How the controller-routing model (``specs/models/kip-590-controller-routing.json``) meets a
target.

Entities are suite-owned topics (``kc-suite-590-<run>-<n>``); each mutation goes to the broker
the step names (an index into the brokers the bootstrap's Metadata lists). A view is what one
broker says of the topics: Metadata (present or UNKNOWN_TOPIC_OR_PARTITION, partition count)
and DescribeConfigs (``retention.ms``). Every topic still present at the end is deleted.
"""

from __future__ import annotations

import uuid
from functools import cache
from typing import Any

from conformance.client.create_topics import create_body
from conformance.client.wire import ConnectionClosed
from conformance.protocol import ApiKey, ConfigResourceType, ErrorCode
from conformance.protocol.errors import DecodeError
from conformance.protocol.spec import ZERO_UUID
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.models import Binding, Model, ModelRunner, load_model
from conformance.suite.kit.records_io import skip_if_refused
from conformance.targets.base import Endpoint

#: the topic mutations whose answers say whether the suite may change topics at all
TOPIC_MUTATIONS = frozenset({ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS})

PROPAGATION = 10.0
TIMEOUT_MS = 15000


@cache
def model() -> Model:
    return load_model("kip-590-controller-routing")


def api_of(event: str) -> int:
    m = model()
    return m.requests[m.events[event].request or ""]["api_key"]


def available(harness: Harness) -> list[str]:
    """The model's events whose API the target advertises (creating and deleting topics are
    needed by every test: UNSUPPORTED without them; retention needs DescribeConfigs too)."""
    harness.require(ApiKey.CREATE_TOPICS)
    harness.require(ApiKey.DELETE_TOPICS)
    out = []
    for name in model().events:
        key = api_of(name)
        if key not in harness.advertised:
            continue
        if name == "alter-retention" and ApiKey.DESCRIBE_CONFIGS not in harness.advertised:
            continue
        out.append(name)
    return out


def require_event(harness: Harness, event: str) -> None:
    """UNSUPPORTED unless the event's API (and what observes its effect) is advertised."""
    harness.require(ApiKey.CREATE_TOPICS)
    harness.require(ApiKey.DELETE_TOPICS)
    harness.require(api_of(event))
    if event == "alter-retention":
        harness.require(ApiKey.DESCRIBE_CONFIGS)


def forwarding_brokers(harness: Harness, brokers: list[cluster.Broker]) -> list[cluster.Broker]:
    """The brokers through which a mutation is forwarded to a controller elsewhere: on a target
    with more than one broker, every broker but the one Metadata names as the controller
    (ZooKeeper-mode Kafka names its real controller there; KRaft names a broker it picked, and
    all its brokers forward), and but those that refuse a mutation NOT_CONTROLLER themselves
    (ZooKeeper-mode Kafka 3.x forwards nothing: clients send it to the controller). A single
    node is its own controller: it forwards nothing."""
    if len(brokers) < 2:
        return []
    controller = cluster.controller_id(harness)
    return [b for b in brokers if b.node_id != controller and not refuses_itself(harness, b)]


def setup_broker(harness: Harness, brokers: list[cluster.Broker]) -> int:
    """The broker (an index into ``brokers``) to create a test's topic through before the
    mutation under test: the one Metadata names as the controller where it is listed (in
    ZooKeeper mode the only broker that creates topics), else the first."""
    controller = cluster.controller_id(harness)
    return next((i for i, b in enumerate(brokers) if b.node_id == controller), 0)


def refuses_itself(harness: Harness, broker: cluster.Broker) -> bool:
    """Whether ``broker`` answers a validate-only CreateTopics of a fresh suite topic with
    NOT_CONTROLLER instead of passing it on (nothing is created either way)."""
    version = harness.pick_version(ApiKey.CREATE_TOPICS)
    topic = f"kc-suite-590-probe-{uuid.uuid4().hex[:10]}"
    body = create_body({topic: 1}, timeout_ms=TIMEOUT_MS, validate_only=True)
    answer = harness.connect(broker.endpoint).request(ApiKey.CREATE_TOPICS, version, body).body
    return any(t.get("ErrorCode") == ErrorCode.NOT_CONTROLLER for t in answer.get("Topics") or [])


def no_forwarding(brokers: list[cluster.Broker]) -> str:
    if len(brokers) < 2:
        return (
            f"nothing is forwarded: the target lists {len(brokers)} broker(s), and a single node "
            "is its own controller (KIP-590.R3 is judged on an answer passed back by a broker "
            "that forwarded the request)"
        )
    return (
        "nothing is forwarded: every broker but the controller answers a mutation "
        "NOT_CONTROLLER itself (KIP-590.R1 is failed for that; R3 is judged on an answer passed "
        "back by a broker that forwarded the request)"
    )


class RoutingBinding(Binding):
    def __init__(self, harness: Harness, brokers: list[cluster.Broker], count: int | None = None):
        self.harness, self.brokers, self.count = harness, brokers, count
        self.prefix = f"kc-suite-590-{uuid.uuid4().hex[:10]}-"
        self.created: set[str] = set()
        self._conns: dict[Endpoint, SyncConnection] = {}
        self.metadata_version = harness.pick_version(ApiKey.METADATA, "1+")

    def entity_id(self, index: int) -> str:
        return f"{self.prefix}{index}"

    def context(self, name: str) -> Any:
        if name == "brokers":
            return list(range(len(self.brokers)))
        if name == "replication_factor":
            return 1
        if name == "timeout_ms":
            return TIMEOUT_MS
        if name == "zero_uuid":
            return ZERO_UUID
        raise KeyError(name)

    def duration(self, name: str) -> float:
        if name == "propagation":
            return PROPAGATION
        raise KeyError(name)

    def endpoint(self, to: int | None) -> Endpoint:
        return self.brokers[to].endpoint if to is not None else self.harness.target.bootstrap[0]

    def conn(self, ep: Endpoint) -> SyncConnection:
        conn = self._conns.get(ep)
        if conn is None or conn.closed:
            conn = self._conns[ep] = self.harness.connect(ep)
        return conn

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        api_key = request["api_key"]
        version = self.harness.pick_version(api_key)
        ep = self.endpoint(to)
        try:
            answer = self.conn(ep).request(api_key, version, body).body
        except ConnectionClosed:
            self._conns.pop(ep, None)
            raise
        if api_key in TOPIC_MUTATIONS:
            # refused for authorization everywhere: the forwarding cannot be judged here
            skip_if_refused(self.harness, api_key, version, answer)
        if api_key == ApiKey.CREATE_TOPICS:
            for t in answer.get("Topics") or []:
                if t.get("ErrorCode") == 0:
                    self.created.add(t["Name"])
        return answer

    def observe(self, name: str) -> dict[str, Any]:
        if name != "topic_views":
            raise KeyError(name)
        names = [self.entity_id(i) for i in range(self.count or model().count)]
        views: dict[str, dict[int, Any]] = {}
        for broker in self.brokers:
            conn = self.conn(broker.endpoint)
            body = cluster.metadata(self.harness, conn, self.metadata_version, names)
            records: dict[int, Any] = {}
            for t in body["Topics"]:
                if t["Name"] in names and t["ErrorCode"] != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                    records[names.index(t["Name"])] = {"partitions": len(t["Partitions"])}
            if records and ApiKey.DESCRIBE_CONFIGS in self.harness.advertised:
                for index, value in self._retention(conn, [names[i] for i in records]).items():
                    records[names.index(index)]["retention.ms"] = value
            views[str(broker)] = records
        return views

    def _retention(self, conn: SyncConnection, topics: list[str]) -> dict[str, str | None]:
        version = self.harness.pick_version(ApiKey.DESCRIBE_CONFIGS)
        body = {
            "Resources": [
                {
                    "ResourceType": ConfigResourceType.TOPIC,
                    "ResourceName": t,
                    "ConfigurationKeys": None,
                }
                for t in topics
            ],
            "IncludeSynonyms": False,
            "IncludeDocumentation": False,
        }
        answer = conn.request(ApiKey.DESCRIBE_CONFIGS, version, body).body
        out: dict[str, str | None] = {}
        for r in answer.get("Results") or []:
            if r.get("ErrorCode") == 0:
                values = {c["Name"]: c["Value"] for c in r.get("Configs") or []}
                out[r["ResourceName"]] = values.get("retention.ms")
        return out

    def cleanup(self, runner: ModelRunner | None = None) -> None:
        if not self.created:
            return
        version = self.harness.pick_version(ApiKey.DELETE_TOPICS)
        names = sorted(self.created)
        body = {
            "TopicNames": names,
            "Topics": [{"Name": n, "TopicId": ZERO_UUID} for n in names],
            "TimeoutMs": TIMEOUT_MS,
        }
        # through the bootstrap, then through each broker while some are refused NOT_CONTROLLER
        # (ZooKeeper-mode brokers other than the controller delete nothing themselves)
        for ep in [self.endpoint(None), *(b.endpoint for b in self.brokers)]:
            try:
                answer = self.conn(ep).request(ApiKey.DELETE_TOPICS, version, body).body
            except (ConnectionError, TimeoutError, OSError, DecodeError):
                continue
            results = answer.get("Responses") or []
            if not any(r.get("ErrorCode") == ErrorCode.NOT_CONTROLLER for r in results):
                break
        self.created.clear()


def new_runner(
    harness: Harness,
    brokers: list[cluster.Broker],
    allowed: tuple[str, ...],
    count: int | None = None,
) -> ModelRunner:
    return ModelRunner(model(), RoutingBinding(harness, brokers, count), allowed=allowed)
