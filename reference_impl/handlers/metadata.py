"""Metadata (3), served by brokers from their metadata cache.

Brokers: the live (unfenced) ones with an endpoint on the listener the request came in on,
each with its KIP-536 start time in flexible versions. ClusterId (v2+): the KIP-78 id.
ControllerId: clients cannot reach the controller (Metadata is not on its listener, and admin
requests are forwarded, KIP-590), so it names the lowest live broker id, as KRaft brokers name
a live broker. Unknown topics are created when the request and ``auto_create_topics`` allow
(through the controller) and answered LEADER_NOT_AVAILABLE meanwhile. Topic ids before v12, or
from v12 a topic with neither name nor id, are refused as Kafka refuses them (INVALID_REQUEST).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from conformance.protocol import AUTHORIZED_OPERATIONS_UNSET, ApiKey, ErrorCode
from conformance.protocol.internal_topics import INTERNAL_TOPICS
from conformance.protocol.spec import ZERO_UUID
from reference_impl import extensions
from reference_impl.handlers.common import (
    CLUSTER_OPERATIONS,
    TOPIC_OPERATIONS,
    authorized_operations,
    topic_name_error,
)
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.security_hooks import CLUSTER

log = logging.getLogger(__name__)


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        return answer(node, ctx, body)

    # v13 (KIP-1102) only adds the top-level ErrorCode: 0 here (the REBOOTSTRAP_REQUIRED it can
    # carry is for a broker that no longer belongs to the client's cluster)
    return Api(ApiKey.METADATA, handle, max_version=13)


def answer(node: BrokerView, ctx: RequestContext, body: dict) -> dict:
    cache = node.metadata_cache
    v = ctx.version
    listener = ctx.listener.name
    brokers = []
    for broker_id, info in sorted(cache.brokers.items()):
        endpoint = info.endpoints.get(listener)
        if endpoint is None:
            continue
        entry = {
            "NodeId": broker_id,
            "Host": endpoint.host,
            "Port": endpoint.port,
            "Rack": info.rack,
        }
        brokers.append(extensions.with_start_time(entry, info.start_time_ms, v >= 9))
    requested = body["Topics"]
    if _malformed(v, requested):
        return _refused(requested)
    topics = []
    if requested is None or (v == 0 and not requested):
        for name in sorted(cache.topics):
            if node.authorize(ctx.session, "DESCRIBE", ("TOPIC", name)):
                topics.append(_topic(node, ctx, name, listener))
    else:
        allow_create = v < 4 or body["AllowAutoTopicCreation"]
        for t in requested:
            topics.append(_requested(node, ctx, t, listener, allow_create))
    include_topic_ops = v >= 8 and body["IncludeTopicAuthorizedOperations"]
    for t in topics:
        if include_topic_ops and t["ErrorCode"] == 0:
            t["TopicAuthorizedOperations"] = authorized_operations(
                node, ctx.session, ("TOPIC", t["Name"]), TOPIC_OPERATIONS
            )
    response: dict[str, Any] = {
        "ThrottleTimeMs": 0,
        "ErrorCode": 0,
        "Brokers": brokers,
        "ClusterId": cache.cluster_id or node.cluster_id,
        "ControllerId": min(cache.brokers) if cache.brokers else -1,
        "Topics": topics,
    }
    if 8 <= v <= 10 and body["IncludeClusterAuthorizedOperations"]:
        response["ClusterAuthorizedOperations"] = authorized_operations(
            node, ctx.session, CLUSTER, CLUSTER_OPERATIONS
        )
    return response


def _malformed(v: int, requested: list[dict] | None) -> bool:
    """What Kafka refuses as an invalid request: topic ids before v12 (where they cannot be
    looked up), and from v12 a topic with neither a name nor an id."""
    for t in requested or []:
        topic_id = t.get("TopicId", ZERO_UUID)
        if (v < 12 and topic_id != ZERO_UUID) or (
            v >= 12 and t["Name"] is None and topic_id == ZERO_UUID
        ):
            return True
    return False


def _refused(requested: list[dict] | None) -> dict[str, Any]:
    """Kafka's answer to a refused Metadata request: INVALID_REQUEST on each named topic, no
    broker, no cluster id, no controller."""
    return {
        "ThrottleTimeMs": 0,
        "Brokers": [],
        "ClusterId": None,
        "ControllerId": -1,
        "Topics": [
            _error(t["Name"], t.get("TopicId", ZERO_UUID), ErrorCode.INVALID_REQUEST)
            for t in requested or []
            if t["Name"] is not None
        ],
    }


def _requested(
    node: BrokerView, ctx: RequestContext, t: dict, listener: str, allow_create: bool
) -> dict[str, Any]:
    cache = node.metadata_cache
    name = t["Name"]
    topic_id = t.get("TopicId", ZERO_UUID)
    if name is None:
        name = cache.topic_ids.get(topic_id)
        if name is None or not node.authorize(ctx.session, "DESCRIBE", ("TOPIC", name)):
            return _error(None, topic_id, ErrorCode.UNKNOWN_TOPIC_ID)
    if not node.authorize(ctx.session, "DESCRIBE", ("TOPIC", name)):
        return _error(name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED)
    if name in cache.topics:
        return _topic(node, ctx, name, listener)
    if topic_name_error(name) is not None:
        return _error(name, ZERO_UUID, ErrorCode.INVALID_TOPIC_EXCEPTION)
    if (
        allow_create
        and node.config.auto_create_topics
        and name not in INTERNAL_TOPICS
        and node.authorize(ctx.session, "CREATE", ("TOPIC", name))
    ):
        _auto_create(node, name)
        return _error(name, ZERO_UUID, ErrorCode.LEADER_NOT_AVAILABLE)
    return _error(name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)


def _auto_create(node: BrokerView, name: str) -> None:
    live = len(node.metadata_cache.brokers)
    rf = max(1, min(node.config.default_replication_factor, live))

    async def create() -> None:
        try:
            code = await node.create_topic(name, node.config.num_partitions, rf)
            if code not in (ErrorCode.NONE, ErrorCode.TOPIC_ALREADY_EXISTS):
                log.info("auto-creating %s: error %d", name, code)
        except Exception:
            log.exception("auto-creating %s", name)

    node.spawn(create(), f"auto-create-{name}")


def _error(name: str | None, topic_id: uuid.UUID, code: ErrorCode) -> dict[str, Any]:
    return {
        "ErrorCode": int(code),
        "Name": name,
        "TopicId": topic_id,
        "IsInternal": False,
        "Partitions": [],
        "TopicAuthorizedOperations": AUTHORIZED_OPERATIONS_UNSET,
    }


def _topic(node: BrokerView, ctx: RequestContext, name: str, listener: str) -> dict[str, Any]:
    cache = node.metadata_cache
    topic = cache.topics[name]
    v0 = ctx.version == 0
    partitions = []
    for index, p in sorted(topic.partitions.items()):
        code = ErrorCode.NONE
        leader = p.leader
        live_replicas = [b for b in p.replicas if cache.alive(b)]
        offline = [b for b in p.replicas if not cache.alive(b)]
        if not cache.alive(leader):
            code, leader = ErrorCode.LEADER_NOT_AVAILABLE, -1
        elif cache.endpoint(leader, listener) is None:
            code = ErrorCode.LEADER_NOT_AVAILABLE if v0 else ErrorCode.LISTENER_NOT_FOUND
            leader = -1
        elif v0 and offline:
            code = ErrorCode.REPLICA_NOT_AVAILABLE
        partitions.append(
            {
                "ErrorCode": int(code),
                "PartitionIndex": index,
                "LeaderId": leader,
                "LeaderEpoch": p.leader_epoch,
                "ReplicaNodes": live_replicas if v0 else list(p.replicas),
                "IsrNodes": [b for b in p.isr if cache.alive(b)] if v0 else list(p.isr),
                "OfflineReplicas": offline,
            }
        )
    return {
        "ErrorCode": 0,
        "Name": name,
        "TopicId": topic.topic_id,
        "IsInternal": name in INTERNAL_TOPICS,
        "Partitions": partitions,
        "TopicAuthorizedOperations": AUTHORIZED_OPERATIONS_UNSET,
    }
