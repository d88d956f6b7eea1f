"""What the consumer-group handlers share: the node's GroupService, ACL checks, client host."""

from __future__ import annotations

from reference_impl.groups.service import GroupService, service_for
from reference_impl.net.listener import RequestContext
from reference_impl.roles import BrokerView


def groups(node: BrokerView) -> GroupService:
    return service_for(node)


def allowed(
    node: BrokerView, ctx: RequestContext, operation: str, resource: tuple[str, str]
) -> bool:
    """``node.authorize`` (Kafka's operation names). Every node has one (``Node.authorize``, the
    allow-all authorizer when ACLs are off), so nothing here lets a request through unasked."""
    return node.authorize(ctx.session, operation, resource)


def group_allowed(node: BrokerView, ctx: RequestContext, operation: str, group_id: str) -> bool:
    return allowed(node, ctx, operation, ("GROUP", group_id))


def client_id(ctx: RequestContext) -> str:
    return ctx.header.get("ClientId") or ""


def client_host(ctx: RequestContext) -> str:
    """As Kafka reports a member's host: the InetAddress string, ``/127.0.0.1``."""
    host = ctx.client_address.rsplit(":", 1)[0]
    return f"/{host}"


def partition_errors(topics: list[dict], results: dict[tuple[str, int], int]) -> list[dict]:
    """An offset commit's answer (OffsetCommit, TxnOffsetCommit): every topic and partition of
    the request with its error code."""
    return [
        {
            "Name": t["Name"],
            "Partitions": [
                {
                    "PartitionIndex": p["PartitionIndex"],
                    "ErrorCode": int(results[(t["Name"], p["PartitionIndex"])]),
                }
                for p in t["Partitions"]
            ],
        }
        for t in topics
    ]
