"""What the broker knows about the cluster: what the controller's last UpdateMetadata said.

Brokers (live ones only: fenced brokers are not in UpdateMetadata), their endpoints per
listener, rack and KIP-536 start time; topics with ids and partition states; the controller and
its epoch; dynamic configs and client quotas; the controller's metadata offset this reflects.
Read by the client-facing handlers and by the data plane (``replica/``, ``groups/``).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.protocol.spec import ZERO_UUID
from reference_impl import extensions

INCREMENTAL = 1
FULL = 2
#: Kafka's "leader during delete" marker in incremental UpdateMetadata
LEADER_DURING_DELETE = -2


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int
    security_protocol: int


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    #: listener name -> endpoint
    endpoints: dict[str, Endpoint]
    rack: str | None
    start_time_ms: int


@dataclass(frozen=True)
class PartitionInfo:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    partition_epoch: int


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)


class MetadataCache:
    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.controller_id = -1
        self.controller_epoch = -1
        self.offset = -1
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.topic_ids: dict[uuid.UUID, str] = {}
        self.topic_configs: dict[str, dict[str, str]] = {}
        self.broker_configs: dict[str, dict[str, str]] = {}
        #: group id -> its configs (KIP-848 group configs)
        self.group_configs: dict[str, dict[str, str]] = {}
        #: [(entity as ((type, name), ...), {key: value})]
        self.quotas: list[tuple[tuple[tuple[str, str | None], ...], dict[str, float]]] = []
        #: ACL bindings (JSON dicts, ``security/acl.py``'s AclBinding.to_dict)
        self.acls: list[dict[str, Any]] = []
        #: the SCRAM credentials of the cluster metadata (KIP-554), as the controller's image
        self.scram: dict[str, dict[str, dict[str, Any]]] = {}
        self._listeners: list[Callable[[MetadataCache], None]] = []

    def add_listener(self, callback: Callable[[MetadataCache], None]) -> None:
        """Called after each applied UpdateMetadata (e.g. fetchers re-resolving leaders)."""
        self._listeners.append(callback)

    # --- updates -----------------------------------------------------------------------

    def apply_update_metadata(self, body: dict[str, Any], version: int) -> None:
        self.controller_id = body["ControllerId"]
        self.controller_epoch = body["ControllerEpoch"]
        self.brokers = {b["Id"]: _broker(b, version) for b in body["LiveBrokers"]}
        offset = extensions.get_int64(body, extensions.METADATA_OFFSET_TAG, -1)
        # the reference's controller sends the offset with every body: below v8 (no Type) all
        # are full, from v8 it says which (Kafka's ZooKeeper-mode controller: incremental ones
        # carry the changed partitions only, deleted ones with leader -2)
        kind = body.get("Type")
        full = kind == FULL or (offset >= 0 and kind != INCREMENTAL)
        topics = self.topics if not full else {}
        for name, topic_id, state in _partition_states(body, version):
            existing = self.topics.get(name)
            topic = topics.get(name)
            if topic is None:
                if topic_id.int == 0 and existing is not None:
                    topic_id = existing.topic_id
                topic = topics[name] = TopicInfo(name, topic_id)
            if state["Leader"] == LEADER_DURING_DELETE:
                topic.partitions.pop(state["PartitionIndex"], None)
                if not topic.partitions:
                    topics.pop(name, None)
                continue
            index = state["PartitionIndex"]
            known = existing.partitions.get(index) if existing is not None else None
            if known is None or not _same(known, state):
                known = PartitionInfo(
                    state["Leader"],
                    state["LeaderEpoch"],
                    tuple(state["Isr"]),
                    tuple(state["Replicas"]),
                    tuple(state.get("OfflineReplicas", ())),
                    state["ZkVersion"],
                )
            topic.partitions[index] = known
        self.topics = topics
        self.topic_ids = {t.topic_id: n for n, t in topics.items()}
        configs = extensions.get_json(body, extensions.CONFIG_IMAGE_TAG)
        if isinstance(configs, dict):
            self.topic_configs = configs.get("topics", {})
            self.broker_configs = configs.get("brokers", {})
            self.group_configs = configs.get("groups", {})
            self.quotas = [
                (tuple((t, n) for t, n in entity), values)
                for entity, values in configs.get("quotas", [])
            ]
            self.acls = configs.get("acls", [])
            self.scram = configs.get("scram", {})
        if offset >= 0:
            self.offset = offset
        for callback in self._listeners:
            callback(self)

    # --- questions ---------------------------------------------------------------------

    def topic_config(self, name: str) -> dict[str, str]:
        """The topic's config overrides (Kafka names → string values)."""
        return dict(self.topic_configs.get(name, {}))

    def partition(self, topic: str, index: int) -> PartitionInfo | None:
        t = self.topics.get(topic)
        return t.partitions.get(index) if t is not None else None

    def endpoint(self, broker_id: int, listener: str) -> Endpoint | None:
        broker = self.brokers.get(broker_id)
        return broker.endpoints.get(listener) if broker is not None else None

    def alive(self, broker_id: int) -> bool:
        return broker_id in self.brokers


def _same(known: PartitionInfo, state: dict[str, Any]) -> bool:
    """``state`` says what ``known`` holds (every field): the full UpdateMetadata every round
    repeats most partitions, and comparing is ~3x cheaper than building a frozen PartitionInfo."""
    return (
        known.leader == state["Leader"]
        and known.leader_epoch == state["LeaderEpoch"]
        and known.partition_epoch == state["ZkVersion"]
        and known.isr == tuple(state["Isr"])
        and known.replicas == tuple(state["Replicas"])
        and known.offline_replicas == tuple(state.get("OfflineReplicas", ()))
    )


def _broker(b: dict[str, Any], version: int) -> BrokerInfo:
    if version == 0:
        endpoints = {"PLAINTEXT": Endpoint(b["V0Host"], b["V0Port"], 0)}
    else:
        endpoints = {
            (e["Listener"] if version >= 3 else _protocol_name(e["SecurityProtocol"])): Endpoint(
                e["Host"], e["Port"], e["SecurityProtocol"]
            )
            for e in b["Endpoints"]
        }
    return BrokerInfo(b["Id"], endpoints, b.get("Rack"), extensions.start_time(b))


def _protocol_name(code: int) -> str:
    return {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}.get(code, "PLAINTEXT")


def _partition_states(body: dict[str, Any], version: int):
    if version >= 5:
        for topic in body["TopicStates"]:
            for state in topic["PartitionStates"]:
                yield topic["TopicName"], topic.get("TopicId", ZERO_UUID), state
    else:
        for state in body["UngroupedPartitionStates"]:
            yield state["TopicName"], ZERO_UUID, state
