"""What the data-plane handlers share: where a partition's leader is (KIP-951 hints)."""

from __future__ import annotations

from typing import Any

from reference_impl.net.listener import RequestContext
from reference_impl.roles import BrokerView


def current_leader(node: BrokerView, topic: str, index: int) -> dict[str, int] | None:
    """``{LeaderId, LeaderEpoch}`` of a partition as the metadata cache knows it."""
    p = node.metadata_cache.partition(topic, index)
    if p is None or p.leader < 0:
        return None
    return {"LeaderId": p.leader, "LeaderEpoch": p.leader_epoch}


def node_endpoints(
    node: BrokerView, ctx: RequestContext, broker_ids: set[int]
) -> list[dict[str, Any]]:
    """The endpoints, on the listener the request came in on, of the brokers named."""
    out = []
    cache = node.metadata_cache
    for b in sorted(broker_ids):
        info = cache.brokers.get(b)
        if info is None:
            continue
        ep = info.endpoints.get(ctx.listener.name)
        if ep is not None:
            out.append({"NodeId": b, "Host": ep.host, "Port": ep.port, "Rack": info.rack})
    return out
