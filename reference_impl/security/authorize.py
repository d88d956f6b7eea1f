"""Which authorisation each API needs, applied before its handler, as Kafka's KafkaApis does.

``gated(node, api)`` wraps every handler a node serves (``Node.handler_apis``). It records the
client host in ``session.state["host"]`` (ACL host matching), then applies the API's rule from
``RULES``, if any:

- whole-request rules answer Kafka's error response for the API (``error_responses.py``):
  READ on GROUP for group membership, DESCRIBE / ALTER on CLUSTER for the ACL APIs, WRITE on
  the transactional id or IdempotentWrite for InitProducerId;
- per-resource rules take the denied topics, groups or keys out of the request, run the handler
  on the rest, and add the denied ones to the response with the API's authorisation error
  (Produce: WRITE on TOPIC; Fetch: READ on TOPIC, or ClusterAction for a follower; ListOffsets,
  OffsetFetch: DESCRIBE; OffsetCommit: READ on GROUP and TOPIC; …);
- on a broker, the forwarded APIs (KIP-590) are not checked: the controller authorises them as
  the principal the Envelope carries.

Handlers that decide themselves call ``node.authorize`` directly and have no rule here: the
control plane's Metadata (DESCRIBE on TOPIC, filtering), CreateTopics, DeleteTopics,
CreatePartitions, Describe/Alter/IncrementalAlterConfigs, the client-quota APIs, and
ClusterAction on CLUSTER for Envelope and the inter-node RPCs (UpdateMetadata, LeaderAndIsr,
StopReplica, ControlledShutdown, AlterPartition, BrokerRegistration, BrokerHeartbeat).
"""

from __future__ import annotations

import struct
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from reference_impl.error_responses import error_response
from reference_impl.net.listener import CLOSE, Api, RequestContext

TOPIC_AUTHORIZATION_FAILED = 29
GROUP_AUTHORIZATION_FAILED = 30
CLUSTER_AUTHORIZATION_FAILED = 31
TRANSACTIONAL_ID_AUTHORIZATION_FAILED = 53
CLUSTER = ("CLUSTER", "kafka-cluster")
#: APIs a broker forwards to the controller (``broker/forwarding.py``), authorised there
FORWARDED = frozenset({19, 20, 30, 31, 33, 37, 44, 49})

Handler = Callable[[RequestContext, dict], Awaitable[Any]]
Rule = Callable[[Any, RequestContext, dict, Handler], Awaitable[Any]]


def host_of(client_address: str) -> str:
    """The host part of the listener's ``host:port`` (``[v6]:port``) peer form."""
    return client_address.rsplit(":", 1)[0].strip("[]")


def allowed(node: Any, ctx: RequestContext, operation: str, rtype: str, name: str) -> bool:
    return node.authorize(ctx.session, operation, (rtype, name))


def allowed_any(node: Any, ctx: RequestContext, operation: str, rtype: str) -> bool:
    """Could ``operation`` be allowed on some resource of the type (``authorizeByResourceType``)."""
    by_type = getattr(node.authorizer, "authorize_any", None)
    if by_type is not None:
        return by_type(ctx.session, operation, rtype)
    return node.authorize(ctx.session, operation, (rtype, "*"))


def gated(node: Any, api: Api | None) -> Api | None:
    """``api`` with its handler behind the API's authorisation rule."""
    if api is None:
        return None
    bind = getattr(getattr(node, "authorizer", None), "bind", None)
    if bind is not None:
        bind(node)  # the ACL authorizer reads this node's view of the ACLs
    rule = RULES.get(api.key)
    if getattr(node, "role", None) == "broker" and api.key in FORWARDED:
        rule = None
    inner = api.handler

    async def handler(ctx: RequestContext, body: dict) -> Any:
        ctx.session.state.setdefault("host", host_of(ctx.client_address))
        if rule is None:
            return await inner(ctx, body)
        return await rule(node, ctx, body, inner)

    return replace(api, handler=handler)


# --- whole-request rules ---------------------------------------------------------------------


def _refuse(node: Any, ctx: RequestContext, body: dict, code: int, message: str | None) -> Any:
    """Kafka's whole-request error answer for the API (or CLOSE when it has no way to say it)."""
    answer = error_response(node.codec, ctx.api_key, ctx.version, body, code, message)
    return CLOSE if answer is None else answer


def _cluster(operation: str) -> Rule:
    async def rule(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
        if not allowed(node, ctx, operation, *CLUSTER):
            message = f"{ctx.session.principal} is not authorized for {operation} on the cluster"
            return _refuse(node, ctx, body, CLUSTER_AUTHORIZATION_FAILED, message)
        return await handler(ctx, body)

    return rule


async def _group_read(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    if not allowed(node, ctx, "READ", "GROUP", body["GroupId"]):
        return _refuse(node, ctx, body, GROUP_AUTHORIZATION_FAILED, None)
    return await handler(ctx, body)


async def _init_producer_id(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    tid = body["TransactionalId"]
    if tid is not None:
        if not allowed(node, ctx, "WRITE", "TRANSACTIONAL_ID", tid):
            return _refuse(node, ctx, body, TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
    elif not (
        allowed(node, ctx, "IDEMPOTENT_WRITE", *CLUSTER) or allowed_any(node, ctx, "WRITE", "TOPIC")
    ):
        return _refuse(node, ctx, body, CLUSTER_AUTHORIZATION_FAILED, None)
    return await handler(ctx, body)


# --- per-resource rules ----------------------------------------------------------------------


def _split(items: list, ok: Callable[[Any], bool]) -> tuple[list, list]:
    yes, no = [], []
    for item in items:
        (yes if ok(item) else no).append(item)
    return yes, no


async def _run(
    handler: Handler,
    ctx: RequestContext,
    body: dict,
    key: str,
    allowed_items: list,
    skeleton: dict,
) -> Any:
    """The handler's answer to ``body`` with only ``allowed_items`` under ``key``; when nothing is
    left, ``skeleton`` (an empty answer) without calling it."""
    if not allowed_items and body[key]:
        return dict(skeleton)
    return await handler(ctx, {**body, key: allowed_items})


def _merge(response: Any, key: str, extra: list) -> Any:
    if not extra or response is None or response is CLOSE:
        return response
    return {**response, key: [*response.get(key, []), *extra]}


_BATCH_MAGIC, _BATCH_ATTRIBUTES = 16, 21
_TRANSACTIONAL = 0x10


def _has_transactional_records(body: dict) -> bool:
    for topic in body["TopicData"]:
        for part in topic["PartitionData"]:
            raw = part["Records"] or b""
            pos = 0
            while pos + _BATCH_ATTRIBUTES + 2 <= len(raw):
                (length,) = struct.unpack_from(">i", raw, pos + 8)
                if raw[pos + _BATCH_MAGIC] >= 2:
                    (attributes,) = struct.unpack_from(">h", raw, pos + _BATCH_ATTRIBUTES)
                    if attributes & _TRANSACTIONAL:
                        return True
                if length <= 0:
                    break
                pos += 12 + length
    return False


async def _produce(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    if _has_transactional_records(body):
        tid = body["TransactionalId"]
        if tid is None or not allowed(node, ctx, "WRITE", "TRANSACTIONAL_ID", tid):
            if body["Acks"] == 0:
                return CLOSE
            return {"Responses": _all_partitions(body, TRANSACTIONAL_ID_AUTHORIZATION_FAILED)}
    ok, denied = _split(
        body["TopicData"], lambda t: allowed(node, ctx, "WRITE", "TOPIC", t["Name"])
    )
    if not denied:
        return await handler(ctx, body)
    response = await _run(handler, ctx, body, "TopicData", ok, {"Responses": []})
    if body["Acks"] == 0:
        return CLOSE  # Kafka closes an acks=0 connection whose produce had errors
    extra = [
        {
            "Name": t["Name"],
            "PartitionResponses": [
                {"Index": p["Index"], "ErrorCode": TOPIC_AUTHORIZATION_FAILED, "BaseOffset": -1}
                for p in t["PartitionData"]
            ],
        }
        for t in denied
    ]
    return _merge(response, "Responses", extra)


def _all_partitions(body: dict, code: int) -> list[dict]:
    return [
        {
            "Name": t["Name"],
            "PartitionResponses": [
                {"Index": p["Index"], "ErrorCode": code, "BaseOffset": -1}
                for p in t["PartitionData"]
            ],
        }
        for t in body["TopicData"]
    ]


def _topic_name(node: Any, topic: dict, key: str = "Topic") -> str | None:
    name = topic.get(key)
    if name:
        return name
    topic_id = topic.get("TopicId")
    image = getattr(node, "image", None)
    if image is not None:
        return image.topic_ids.get(topic_id)
    cache = getattr(node, "metadata_cache", None)
    return cache.topic_ids.get(topic_id) if cache is not None else None


def _fetch_denied(topics: list, code: int) -> list[dict]:
    return [
        {
            "Topic": t.get("Topic") or "",
            "TopicId": t["TopicId"],
            "Partitions": [
                {"PartitionIndex": p["Partition"], "ErrorCode": code, "HighWatermark": -1}
                for p in t["Partitions"]
            ],
        }
        for t in topics
    ]


async def _fetch(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    replica_id = body["ReplicaId"] if ctx.version < 15 else body["ReplicaState"]["ReplicaId"]
    if replica_id >= 0:
        if allowed(node, ctx, "CLUSTER_ACTION", *CLUSTER):
            return await handler(ctx, body)
        denied = _fetch_denied(body["Topics"], TOPIC_AUTHORIZATION_FAILED)
        return {"ErrorCode": 0, "SessionId": 0, "Responses": denied}

    def ok(t: dict) -> bool:
        name = _topic_name(node, t)
        return name is None or allowed(node, ctx, "READ", "TOPIC", name)

    ok_topics, denied_topics = _split(body["Topics"], ok)
    if not denied_topics:
        return await handler(ctx, body)
    skeleton = {"ErrorCode": 0, "SessionId": 0, "Responses": []}
    response = await _run(handler, ctx, body, "Topics", ok_topics, skeleton)
    return _merge(response, "Responses", _fetch_denied(denied_topics, TOPIC_AUTHORIZATION_FAILED))


def _partition_errors(topics: list, code: int, index: str, **fields: Any) -> list[dict]:
    return [
        {
            "Name": t["Name"],
            "Partitions": [
                {"PartitionIndex": p[index] if index else p, "ErrorCode": code, **fields}
                for p in t["Partitions" if index else "PartitionIndexes"]
            ],
        }
        for t in topics
    ]


async def _list_offsets(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    ok, denied = _split(
        body["Topics"], lambda t: allowed(node, ctx, "DESCRIBE", "TOPIC", t["Name"])
    )
    if not denied:
        return await handler(ctx, body)
    response = await _run(handler, ctx, body, "Topics", ok, {"Topics": []})
    extra = _partition_errors(denied, TOPIC_AUTHORIZATION_FAILED, "PartitionIndex")
    return _merge(response, "Topics", extra)


async def _offset_commit(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    if not allowed(node, ctx, "READ", "GROUP", body["GroupId"]):
        errors = _partition_errors(body["Topics"], GROUP_AUTHORIZATION_FAILED, "PartitionIndex")
        return {"Topics": errors}
    ok, denied = _split(body["Topics"], lambda t: allowed(node, ctx, "READ", "TOPIC", t["Name"]))
    if not denied:
        return await handler(ctx, body)
    response = await _run(handler, ctx, body, "Topics", ok, {"Topics": []})
    extra = _partition_errors(denied, TOPIC_AUTHORIZATION_FAILED, "PartitionIndex")
    return _merge(response, "Topics", extra)


_NO_OFFSET = {"CommittedOffset": -1, "Metadata": ""}


async def _offset_fetch_one(
    node: Any, ctx: RequestContext, group: str, topics: list | None, run: Callable
) -> tuple[int, list]:
    """(group error, topics) of one group's OffsetFetch; ``run(topics)`` asks the handler."""
    if not allowed(node, ctx, "DESCRIBE", "GROUP", group):
        return GROUP_AUTHORIZATION_FAILED, []
    if topics is None:
        code, got = await run(None)
        got = [t for t in got if allowed(node, ctx, "DESCRIBE", "TOPIC", t["Name"])]
        return code, got
    ok, denied = _split(topics, lambda t: allowed(node, ctx, "DESCRIBE", "TOPIC", t["Name"]))
    code, got = await run(ok) if ok or not topics else (0, [])
    return code, [*got, *_partition_errors(denied, TOPIC_AUTHORIZATION_FAILED, "", **_NO_OFFSET)]


async def _offset_fetch(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    if ctx.version < 8:

        async def run(topics: list | None) -> tuple[int, list]:
            r = await handler(ctx, {**body, "Topics": topics})
            return r.get("ErrorCode", 0), r["Topics"]

        code, topics = await _offset_fetch_one(node, ctx, body["GroupId"], body["Topics"], run)
        if code == GROUP_AUTHORIZATION_FAILED and ctx.version < 2:
            topics = _partition_errors(body["Topics"] or [], code, "", **_NO_OFFSET)
        return {"ErrorCode": code, "Topics": topics}
    groups = []
    for g in body["Groups"]:

        async def run(topics: list | None, g: dict = g) -> tuple[int, list]:
            r = await handler(ctx, {**body, "Groups": [{**g, "Topics": topics}]})
            answer = r["Groups"][0]
            return answer["ErrorCode"], answer["Topics"]

        code, topics = await _offset_fetch_one(node, ctx, g["GroupId"], g["Topics"], run)
        groups.append({"GroupId": g["GroupId"], "ErrorCode": code, "Topics": topics})
    return {"Groups": groups}


async def _find_coordinator(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    if body["KeyType"] == 1:
        rtype, code = "TRANSACTIONAL_ID", TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        rtype, code = "GROUP", GROUP_AUTHORIZATION_FAILED
    if ctx.version < 4:
        if not allowed(node, ctx, "DESCRIBE", rtype, body["Key"]):
            return {"ErrorCode": code, "NodeId": -1, "Host": "", "Port": -1}
        return await handler(ctx, body)
    ok, denied = _split(body["CoordinatorKeys"], lambda k: allowed(node, ctx, "DESCRIBE", rtype, k))
    if not denied:
        return await handler(ctx, body)
    response = await _run(handler, ctx, body, "CoordinatorKeys", ok, {"Coordinators": []})
    extra = [{"Key": k, "NodeId": -1, "Host": "", "Port": -1, "ErrorCode": code} for k in denied]
    return _merge(response, "Coordinators", extra)


async def _describe_groups(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    ok, denied = _split(body["Groups"], lambda g: allowed(node, ctx, "DESCRIBE", "GROUP", g))
    if not denied:
        return await handler(ctx, body)
    response = await _run(handler, ctx, body, "Groups", ok, {"Groups": []})
    extra = [
        {
            "ErrorCode": GROUP_AUTHORIZATION_FAILED,
            "GroupId": g,
            "GroupState": "",
            "ProtocolType": "",
            "ProtocolData": "",
        }
        for g in denied
    ]
    return _merge(response, "Groups", extra)


async def _list_groups(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    response = await handler(ctx, body)
    if allowed(node, ctx, "DESCRIBE", *CLUSTER) or not isinstance(response, dict):
        return response
    shown = [g for g in response["Groups"] if allowed(node, ctx, "DESCRIBE", "GROUP", g["GroupId"])]
    return {**response, "Groups": shown}


async def _delete_groups(node: Any, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    ok, denied = _split(body["GroupsNames"], lambda g: allowed(node, ctx, "DELETE", "GROUP", g))
    if not denied:
        return await handler(ctx, body)
    response = await _run(handler, ctx, body, "GroupsNames", ok, {"Results": []})
    extra = [{"GroupId": g, "ErrorCode": GROUP_AUTHORIZATION_FAILED} for g in denied]
    return _merge(response, "Results", extra)


RULES: dict[int, Rule] = {
    0: _produce,
    1: _fetch,
    2: _list_offsets,
    8: _offset_commit,
    9: _offset_fetch,
    10: _find_coordinator,
    11: _group_read,
    12: _group_read,
    13: _group_read,
    14: _group_read,
    15: _describe_groups,
    16: _list_groups,
    22: _init_producer_id,
    29: _cluster("DESCRIBE"),
    30: _cluster("ALTER"),
    31: _cluster("ALTER"),
    42: _delete_groups,
}
