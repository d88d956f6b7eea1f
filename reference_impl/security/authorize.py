"""Kafka's per-API authorisation (KafkaApis), where handlers do not do it themselves.

``gated(node, api)`` wraps every handler a node serves (``Node.handler_apis``). It records the
client host in ``session.state["host"]`` (ACL host matching for every ``node.authorize``), binds
the ACL authorizer to the node's view of the ACLs, then applies the API's rule from ``RULES``:

==================  ===================================================================
API                 rule (the answer when denied)
==================  ===================================================================
Produce (0)         transactional records need WRITE on the TRANSACTIONAL_ID
                    (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition; acks=0: close)
InitProducerId(22)  WRITE on the TRANSACTIONAL_ID; without one IDEMPOTENT_WRITE on CLUSTER or
                    WRITE on some topic (TRANSACTIONAL_ID_ / CLUSTER_AUTHORIZATION_FAILED)
DescribeAcls (29)   DESCRIBE on CLUSTER (CLUSTER_AUTHORIZATION_FAILED)
CreateAcls (30)     ALTER on CLUSTER, on the controller (every result refused)
DeleteAcls (31)     ALTER on CLUSTER, on the controller (every filter result refused)
DescribeUserScram-  DESCRIBE on CLUSTER (CLUSTER_AUTHORIZATION_FAILED, a nameless result per
Credentials (50)    user asked, as Kafka's)
AlterUserScram-     ALTER on CLUSTER, on the controller (every user's result refused)
Credentials (51)
==================  ===================================================================

On a broker the forwarded APIs (KIP-590) are not checked: the controller authorises them as
the principal the Envelope carries. Every other API's handler calls ``node.authorize`` itself,
with Kafka's rules: Produce WRITE / Fetch READ (followers: CLUSTER_ACTION) / ListOffsets and
Metadata DESCRIBE on each TOPIC; the group APIs READ or DESCRIBE or DELETE on the GROUP (and
READ / DESCRIBE on topics for offsets); CreateTopics CREATE on CLUSTER or TOPIC, DeleteTopics
and DeleteRecords DELETE, CreatePartitions ALTER, configs DESCRIBE_CONFIGS / ALTER_CONFIGS,
quotas on CLUSTER; the transaction APIs WRITE on the TRANSACTIONAL_ID (AddPartitionsToTxn v0-3,
AddOffsetsToTxn with READ on the GROUP, EndTxn) or DESCRIBE on it (FindCoordinator key type 1,
DescribeTransactions, ListTransactions' entries), AddPartitionsToTxn v4+ CLUSTER_ACTION;
CLUSTER_ACTION on CLUSTER for Envelope and the inter-node RPCs.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any

from conformance.protocol import ErrorCode
from conformance.protocol.records.entries import LOG_OVERHEAD, MAGIC_OFFSET
from conformance.protocol.records.header import (
    ATTRIBUTES_OFFSET,
    MAGIC,
    TRANSACTIONAL_BIT,
    attributes_at,
    offset_and_length,
)
from reference_impl.error_responses import error_response
from reference_impl.forwarded import FORWARDED
from reference_impl.net.listener import CLOSE, Api, RequestContext
from reference_impl.roles import NodeView

CLUSTER = ("CLUSTER", "kafka-cluster")

Handler = Callable[[RequestContext, dict], Awaitable[Any]]
Rule = Callable[[Any, RequestContext, dict, Handler], Awaitable[Any]]


def host_of(client_address: str) -> str:
    """The host part of the listener's ``host:port`` (``[v6]:port``) peer form."""
    return client_address.rsplit(":", 1)[0].strip("[]")


def allowed(node: NodeView, ctx: RequestContext, operation: str, rtype: str, name: str) -> bool:
    return node.authorize(ctx.session, operation, (rtype, name))


def allowed_any(node: NodeView, ctx: RequestContext, operation: str, rtype: str) -> bool:
    """Could ``operation`` be allowed on some resource of the type (``authorizeByResourceType``)."""
    by_type = getattr(node.authorizer, "authorize_any", None)
    if by_type is not None:
        return by_type(ctx.session, operation, rtype)
    return node.authorize(ctx.session, operation, (rtype, "*"))


def gated(node: NodeView, api: Api | None) -> Api | None:
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


def _refuse(node: NodeView, ctx: RequestContext, body: dict, code: int, message: str | None) -> Any:
    """Kafka's whole-request error answer for the API (or CLOSE when it has no way to say it)."""
    answer = error_response(node.codec, ctx.api_key, ctx.version, body, code, message)
    return CLOSE if answer is None else answer


def _cluster(operation: str) -> Rule:
    async def rule(node: NodeView, ctx: RequestContext, body: dict, handler: Handler) -> Any:
        if not allowed(node, ctx, operation, *CLUSTER):
            message = f"{ctx.session.principal} is not authorized for {operation} on the cluster"
            return _refuse(node, ctx, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, message)
        return await handler(ctx, body)

    return rule


async def _init_producer_id(
    node: NodeView, ctx: RequestContext, body: dict, handler: Handler
) -> Any:
    tid = body["TransactionalId"]
    if tid is not None:
        if not allowed(node, ctx, "WRITE", "TRANSACTIONAL_ID", tid):
            return _refuse(node, ctx, body, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, None)
    elif not (
        allowed(node, ctx, "IDEMPOTENT_WRITE", *CLUSTER) or allowed_any(node, ctx, "WRITE", "TOPIC")
    ):
        return _refuse(node, ctx, body, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
    return await handler(ctx, body)


# --- Produce: only its transactional-id check (the handler checks WRITE on each topic) --------


def _has_transactional_records(body: dict) -> bool:
    for topic in body["TopicData"]:
        for part in topic["PartitionData"]:
            raw = part["Records"] or b""
            pos = 0
            while pos + ATTRIBUTES_OFFSET + 2 <= len(raw):
                _, length = offset_and_length(raw, pos)
                if raw[pos + MAGIC_OFFSET] >= MAGIC:
                    if attributes_at(raw, pos) & TRANSACTIONAL_BIT:
                        return True
                if length <= LOG_OVERHEAD:
                    break
                pos += length
    return False


async def _produce(node: NodeView, ctx: RequestContext, body: dict, handler: Handler) -> Any:
    if _has_transactional_records(body):
        tid = body["TransactionalId"]
        if tid is None or not allowed(node, ctx, "WRITE", "TRANSACTIONAL_ID", tid):
            if body["Acks"] == 0:
                return CLOSE  # as Kafka closes an acks=0 connection whose produce failed
            code = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            return {
                "Responses": [
                    {
                        "Name": t["Name"],
                        "PartitionResponses": [
                            {"Index": p["Index"], "ErrorCode": code, "BaseOffset": -1}
                            for p in t["PartitionData"]
                        ],
                    }
                    for t in body["TopicData"]
                ]
            }
    return await handler(ctx, body)


RULES: dict[int, Rule] = {
    0: _produce,
    22: _init_producer_id,
    29: _cluster("DESCRIBE"),
    30: _cluster("ALTER"),
    31: _cluster("ALTER"),
    50: _cluster("DESCRIBE"),
    51: _cluster("ALTER"),
}
