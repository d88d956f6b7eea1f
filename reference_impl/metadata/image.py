"""The cluster metadata the controller holds, and the records that change it.

A record is a JSON object with a ``type``; the image is what applying records in order yields.
Both metadata stores persist the same records (the embedded log as they are, ZooKeeper as
Kafka's znodes) and give them back as records on load, so everything above the store is
written once.

Record types: ``cluster_id``, ``controller_epoch``, ``register_broker``, ``broker_state``,
``unregister_broker``, ``topic``, ``partition``, ``remove_topic``, ``config``, ``quota``,
``acl`` / ``remove_acl`` (the ACL bindings, kept for the authorizer), ``scram`` /
``remove_scram`` (a user's SCRAM credential for one mechanism, KIP-554: salt, stored and server
keys in base64 and the iterations, never a password).
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from typing import Any

from conformance.protocol import ConfigResourceType
from reference_impl.broker_state import BrokerState

QuotaEntity = tuple[tuple[str, str | None], ...]


_SHARED = frozenset({int, str, float, bool, type(None), bytes, uuid.UUID, BrokerState})


def _clone(x: Any) -> Any:
    """``copy.deepcopy`` for what an image holds (dicts, lists, its dataclasses, immutable
    leaves), without deepcopy's memo and reduce protocol: it went over every partition at
    every commit, ~8 % of the main cluster's node CPU in a whole run. Anything else (a tuple,
    a type added later) still goes through ``copy.deepcopy``. Unlike deepcopy it does not
    keep two references to one list as one; nothing in an image is shared that way or
    changed in place but through :meth:`MetadataImage.apply`."""
    t = type(x)
    if t in _SHARED:
        return x
    if t is dict:
        return {k: _clone(v) for k, v in x.items()}
    if t is list:
        return [_clone(v) for v in x]
    if t in _CLONED:
        new = object.__new__(t)
        new.__dict__.update({k: _clone(v) for k, v in x.__dict__.items()})
        return new
    return copy.deepcopy(x)


@dataclass
class BrokerRegistration:
    broker_id: int
    epoch: int
    incarnation_id: str
    #: [{"name", "host", "port", "security_protocol"}]
    listeners: list[dict[str, Any]]
    rack: str | None
    start_time_ms: int
    state: BrokerState = BrokerState.FENCED

    def record(self) -> dict[str, Any]:
        return {
            "type": "register_broker",
            "broker_id": self.broker_id,
            "epoch": self.epoch,
            "incarnation_id": self.incarnation_id,
            "listeners": self.listeners,
            "rack": self.rack,
            "start_time_ms": self.start_time_ms,
            "state": self.state.value,
        }


@dataclass
class Partition:
    replicas: list[int]
    isr: list[int]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0

    def record(self, topic: str, index: int) -> dict[str, Any]:
        return {
            "type": "partition",
            "topic": topic,
            "partition": index,
            "replicas": self.replicas,
            "isr": self.isr,
            "leader": self.leader,
            "leader_epoch": self.leader_epoch,
            "partition_epoch": self.partition_epoch,
        }


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, Partition] = field(default_factory=dict)


@dataclass
class MetadataImage:
    cluster_id: str | None = None
    controller_epoch: int = 0
    #: offset of the last record applied (-1: none)
    offset: int = -1
    brokers: dict[int, BrokerRegistration] = field(default_factory=dict)
    topics: dict[str, Topic] = field(default_factory=dict)
    topic_ids: dict[uuid.UUID, str] = field(default_factory=dict)
    #: (resource type, resource name) -> config overrides; broker "" is the cluster default
    configs: dict[tuple[int, str], dict[str, str]] = field(default_factory=dict)
    quotas: dict[QuotaEntity, dict[str, float]] = field(default_factory=dict)
    acls: list[dict[str, Any]] = field(default_factory=list)
    #: user -> mechanism name -> {"salt", "stored_key", "server_key", "iterations"}
    scram: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def copy(self) -> MetadataImage:
        """A deep copy (every commit applies its records to one, so the old image stays
        whole if the store refuses the write): :func:`_clone`, not ``copy.deepcopy``."""
        return _clone(self)

    def apply(self, record: dict[str, Any], offset: int) -> None:
        getattr(self, "_apply_" + record["type"])(record)
        self.offset = offset

    def _apply_cluster_id(self, r: dict) -> None:
        self.cluster_id = r["cluster_id"]

    def _apply_controller_epoch(self, r: dict) -> None:
        self.controller_epoch = r["epoch"]

    def _apply_register_broker(self, r: dict) -> None:
        self.brokers[r["broker_id"]] = BrokerRegistration(
            r["broker_id"],
            r["epoch"],
            r["incarnation_id"],
            r["listeners"],
            r["rack"],
            r["start_time_ms"],
            BrokerState(r["state"]),
        )

    def _apply_broker_state(self, r: dict) -> None:
        broker = self.brokers.get(r["broker_id"])
        if broker is not None:
            broker.state = BrokerState(r["state"])

    def _apply_unregister_broker(self, r: dict) -> None:
        self.brokers.pop(r["broker_id"], None)

    def _apply_topic(self, r: dict) -> None:
        topic_id = uuid.UUID(r["topic_id"])
        self.topics[r["name"]] = Topic(r["name"], topic_id)
        self.topic_ids[topic_id] = r["name"]

    def _apply_partition(self, r: dict) -> None:
        self.topics[r["topic"]].partitions[r["partition"]] = Partition(
            list(r["replicas"]),
            list(r["isr"]),
            r["leader"],
            r["leader_epoch"],
            r["partition_epoch"],
        )

    def _apply_remove_topic(self, r: dict) -> None:
        topic = self.topics.pop(r["name"], None)
        if topic is not None:
            self.topic_ids.pop(topic.topic_id, None)
            self.configs.pop((ConfigResourceType.TOPIC, topic.name), None)

    def _apply_config(self, r: dict) -> None:
        key = (r["resource_type"], r["resource_name"])
        values = self.configs.setdefault(key, {})
        if r["value"] is None:
            values.pop(r["name"], None)
            if not values:
                del self.configs[key]
        else:
            values[r["name"]] = r["value"]

    def _apply_quota(self, r: dict) -> None:
        entity = quota_entity(r["entity"])
        values = self.quotas.setdefault(entity, {})
        if r["value"] is None:
            values.pop(r["key"], None)
            if not values:
                del self.quotas[entity]
        else:
            values[r["key"]] = float(r["value"])

    def _apply_acl(self, r: dict) -> None:
        if r["binding"] not in self.acls:
            self.acls.append(r["binding"])

    def _apply_remove_acl(self, r: dict) -> None:
        if r["binding"] in self.acls:
            self.acls.remove(r["binding"])

    def _apply_scram(self, r: dict) -> None:
        keys = ("salt", "stored_key", "server_key", "iterations")
        self.scram.setdefault(r["user"], {})[r["mechanism"]] = {k: r[k] for k in keys}

    def _apply_remove_scram(self, r: dict) -> None:
        held = self.scram.get(r["user"], {})
        held.pop(r["mechanism"], None)
        if not held:
            self.scram.pop(r["user"], None)

    # --- questions ---------------------------------------------------------------------

    def active_brokers(self) -> list[int]:
        """Brokers that may lead partitions and get new replicas: Online ones."""
        return sorted(b for b, r in self.brokers.items() if r.state == BrokerState.ONLINE)

    def visible_brokers(self) -> list[BrokerRegistration]:
        return [r for _, r in sorted(self.brokers.items()) if r.state.visible]

    def topic_config(self, name: str) -> dict[str, str]:
        return dict(self.configs.get((ConfigResourceType.TOPIC, name), {}))

    def records(self) -> list[dict[str, Any]]:
        """Records that rebuild this image from nothing (a snapshot)."""
        out: list[dict[str, Any]] = []
        if self.cluster_id is not None:
            out.append({"type": "cluster_id", "cluster_id": self.cluster_id})
        out.append({"type": "controller_epoch", "epoch": self.controller_epoch})
        out.extend(b.record() for _, b in sorted(self.brokers.items()))
        for name, topic in sorted(self.topics.items()):
            out.append({"type": "topic", "name": name, "topic_id": str(topic.topic_id)})
            out.extend(p.record(name, i) for i, p in sorted(topic.partitions.items()))
        for (rtype, rname), values in sorted(self.configs.items()):
            out.extend(config_record(rtype, rname, k, v) for k, v in sorted(values.items()))
        for entity, values in self.quotas.items():
            out.extend(quota_record(entity, k, v) for k, v in sorted(values.items()))
        out.extend({"type": "acl", "binding": b} for b in self.acls)
        for user, held in sorted(self.scram.items()):
            out.extend(scram_record(user, m, c) for m, c in sorted(held.items()))
        return out


def scram_record(user: str, mechanism: str, credential: dict[str, Any]) -> dict[str, Any]:
    return {"type": "scram", "user": user, "mechanism": mechanism, **credential}


def quota_entity(entity: list | tuple) -> QuotaEntity:
    return tuple(sorted((str(t), n) for t, n in entity))


def config_record(rtype: int, rname: str, name: str, value: str | None) -> dict[str, Any]:
    return {
        "type": "config",
        "resource_type": rtype,
        "resource_name": rname,
        "name": name,
        "value": value,
    }


def quota_record(entity: QuotaEntity, key: str, value: float | None) -> dict[str, Any]:
    return {"type": "quota", "entity": [list(e) for e in entity], "key": key, "value": value}


#: the image's own dataclasses, copied field by field by :func:`_clone`
_CLONED = frozenset({BrokerRegistration, Partition, Topic, MetadataImage})
