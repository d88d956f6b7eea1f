"""CreateTopics (19): brokers forward it (KIP-590); the controller creates the topics.

Per topic, Kafka's checks in Kafka's order: a duplicate name in the request, a legal name,
CREATE permission, not existing yet, either NumPartitions/ReplicationFactor or Assignments
(then a valid assignment), enough Online brokers for the replication factor, known configs with
valid values. The valid topics are committed in one batch; the answer waits (up to timeoutMs)
until every Online broker has them, so a client can use a topic as soon as it is created.
"""

from __future__ import annotations

import uuid
from typing import Any

from conformance.protocol import ApiKey, ConfigResourceType, ErrorCode, KafkaError
from reference_impl import config as cfg
from reference_impl.forwarded import mutation_api
from reference_impl.handlers.common import (
    MAX_PARTITIONS,
    created_topic_configs,
    topic_name_error,
)
from reference_impl.metadata.image import config_record
from reference_impl.metadata.placement import assign_replicas, new_partition
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView, NodeView
from reference_impl.security_hooks import CLUSTER

ROLES = ("broker", "controller")


def api(node: NodeView) -> Api:
    return mutation_api(node, ApiKey.CREATE_TOPICS, create)


def _fail(name: str, code: int, message: str | None = None) -> dict[str, Any]:
    return {"Name": name, "ErrorCode": int(code), "ErrorMessage": message, "Configs": None}


def _check_configs(configs: list[dict]) -> dict[str, str]:
    out = {}
    for c in configs:
        d = cfg.TOPIC_CONFIGS.get(c["Name"])
        if d is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {c['Name']}")
        if c["Value"] is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for {c['Name']}")
        reason = cfg.validate_config_value(d, c["Value"])
        if reason is not None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, reason)
        out[c["Name"]] = c["Value"]
    return out


def _assignment(t: dict, active: list[int], registered: set[int], config: Any) -> list[list[int]]:
    if t["Assignments"]:
        if t["NumPartitions"] != -1 or t["ReplicationFactor"] != -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "Both numPartitions or replicationFactor and replicasAssignments were set. "
                "Both cannot be used at the same time.",
            )
        by_index = {a["PartitionIndex"]: a["BrokerIds"] for a in t["Assignments"]}
        if sorted(by_index) != list(range(len(by_index))) or len(by_index) > MAX_PARTITIONS:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions must be numbered 0, 1, 2 …"
            )
        sizes = {len(ids) for ids in by_index.values()}
        for ids in by_index.values():
            if not ids or len(set(ids)) != len(ids) or any(b not in registered for b in ids):
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"invalid replica assignment {ids}: empty, duplicate or unknown brokers",
                )
        if len(sizes) != 1:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, "all partitions need the same replica count"
            )
        return [by_index[i] for i in range(len(by_index))]
    partitions = t["NumPartitions"] if t["NumPartitions"] != -1 else config.num_partitions
    rf = (
        t["ReplicationFactor"]
        if t["ReplicationFactor"] != -1
        else config.default_replication_factor
    )
    if partitions <= 0:
        raise KafkaError(
            ErrorCode.INVALID_PARTITIONS, "Number of partitions must be larger than 0."
        )
    if partitions > MAX_PARTITIONS:
        raise KafkaError(
            ErrorCode.INVALID_PARTITIONS,
            f"the reference allows at most {MAX_PARTITIONS} partitions",
        )
    if rf <= 0:
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR, "Replication factor must be larger than 0."
        )
    if rf > len(active):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {rf} time(s): The target replication factor of "
            f"{rf} cannot be reached because only {len(active)} broker(s) are registered.",
        )
    return assign_replicas(active, partitions, rf)


async def create(node: ControllerView, ctx: RequestContext, body: dict) -> dict:
    image = node.require_active()
    v = ctx.version
    validate_only = v >= 1 and body["validateOnly"]
    counts: dict[str, int] = {}
    for t in body["Topics"]:
        counts[t["Name"]] = counts.get(t["Name"], 0) + 1
    active = image.active_brokers()
    registered = set(image.brokers)
    results = []
    planned: list[tuple[int, str, list[dict[str, Any]]]] = []  # (result index, name, records)
    may_create_any = node.authorize(ctx.session, "CREATE", CLUSTER)
    for t in body["Topics"]:
        name = t["Name"]
        if counts[name] > 1:
            results.append(
                _fail(name, ErrorCode.INVALID_REQUEST, f"Found multiple entries for topic {name}")
            )
            continue
        reason = topic_name_error(name)
        if reason is not None:
            results.append(_fail(name, ErrorCode.INVALID_TOPIC_EXCEPTION, reason))
            continue
        if not (may_create_any or node.authorize(ctx.session, "CREATE", ("TOPIC", name))):
            results.append(_fail(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        if name in image.topics:
            results.append(
                _fail(name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
            )
            continue
        try:
            assignment = _assignment(t, active, registered, node.config)
            configs = _check_configs(t["Configs"])
        except KafkaError as e:
            results.append(_fail(name, e.code, e.message))
            continue
        topic_id = uuid.uuid4()
        results.append(
            {
                "Name": name,
                "TopicId": topic_id,  # drawn in validate-only answers too, as KRaft Kafka does
                "ErrorCode": 0,
                "ErrorMessage": None,
                "NumPartitions": len(assignment),
                "ReplicationFactor": len(assignment[0]),
                "Configs": created_topic_configs(configs),
            }
        )
        if validate_only:
            continue
        topic = [{"type": "topic", "name": name, "topic_id": str(topic_id)}]
        topic.extend(new_partition(r).record(name, i) for i, r in enumerate(assignment))
        topic.extend(
            config_record(ConfigResourceType.TOPIC, name, k, val)
            for k, val in sorted(configs.items())
        )
        planned.append((len(results) - 1, name, topic))

    def records(locked: Any) -> list[dict[str, Any]]:
        """Under the controller's write lock: a topic created meanwhile by a concurrent
        request is not created twice, it is answered TOPIC_ALREADY_EXISTS."""
        out: list[dict[str, Any]] = []
        for index, name, topic in planned:
            if name in locked.topics:
                results[index] = _fail(
                    name, ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
                )
            else:
                out.extend(topic)
        return out

    if planned:
        offset = await node.commit(records)
        await node.wait_propagated(offset, body["timeoutMs"])
    return {"ThrottleTimeMs": 0, "Topics": results}
