"""DescribeCluster (60): the KIP-78 cluster id and the live brokers, with KIP-536 start times.

On a broker: from its metadata cache, brokers with an endpoint on the request's listener;
EndpointType CONTROLLER (2) is MISMATCHED_ENDPOINT_TYPE there (clients do not reach the
controller through brokers). On the controller listener: EndpointType BROKER (1, and v0) lists
the visible brokers of the controller's image with their inter-broker endpoint (it is how a new
broker learns the cluster id, and where fenced brokers can be seen missing), CONTROLLER (2)
lists the controllers. Unknown endpoint types are UNSUPPORTED_ENDPOINT_TYPE.

v2 (KIP-1073, Kafka 4.4.0): IncludeFencedBrokers also lists the registered brokers that are
fenced, each with IsFenced. The controller's listener serves it (its image knows every
registration); a broker's stays at v1, because a reference broker learns only the live brokers
(UpdateMetadata carries no fenced ones) and could not list the others.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from reference_impl import extensions
from reference_impl.handlers.common import CLUSTER_OPERATIONS, authorized_operations
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView, ControllerView, NodeView, is_broker, is_controller
from reference_impl.security_hooks import CLUSTER

ROLES = ("broker", "controller")
BROKERS, CONTROLLERS = 1, 2


def api(node: NodeView) -> Api:
    if is_broker(node):
        broker = node
        return Api(
            ApiKey.DESCRIBE_CLUSTER, lambda ctx, body: _broker(broker, ctx, body), max_version=1
        )
    assert is_controller(node)
    controller = node
    return Api(ApiKey.DESCRIBE_CLUSTER, lambda ctx, body: _controller(controller, ctx, body))


def _error(node: NodeView, code: int, message: str, endpoint_type: int) -> dict[str, Any]:
    """A refusal as Kafka answers it: the error, and every other field its spec default (so
    EndpointType 1 and an empty ClusterId whatever the request asked for)."""
    return {
        "ErrorCode": code,
        "ErrorMessage": message,
        "EndpointType": BROKERS,
        "ClusterId": "",
        "ControllerId": -1,
        "Brokers": [],
    }


def _finish(node: NodeView, ctx: RequestContext, body: dict, response: dict) -> dict:
    if body["IncludeClusterAuthorizedOperations"]:
        response["ClusterAuthorizedOperations"] = authorized_operations(
            node, ctx.session, CLUSTER, CLUSTER_OPERATIONS
        )
    return response


async def _broker(node: BrokerView, ctx: RequestContext, body: dict) -> dict:
    endpoint_type = body["EndpointType"]
    if endpoint_type == CONTROLLERS:
        return _error(
            node,
            ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            "brokers do not list controllers",
            endpoint_type,
        )
    if endpoint_type != BROKERS:
        return _error(
            node, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "unknown endpoint type", endpoint_type
        )
    cache = node.metadata_cache
    brokers = []
    for broker_id, info in sorted(cache.brokers.items()):
        endpoint = info.endpoints.get(ctx.listener.name)
        if endpoint is not None:
            entry = {
                "BrokerId": broker_id,
                "Host": endpoint.host,
                "Port": endpoint.port,
                "Rack": info.rack,
            }
            brokers.append(extensions.with_start_time(entry, info.start_time_ms, True))
    response = {
        "ErrorCode": 0,
        "EndpointType": endpoint_type,
        "ClusterId": cache.cluster_id or node.cluster_id,
        "ControllerId": min(cache.brokers) if cache.brokers else -1,
        "Brokers": brokers,
    }
    return _finish(node, ctx, body, response)


async def _controller(node: ControllerView, ctx: RequestContext, body: dict) -> dict:
    endpoint_type = body["EndpointType"]
    if endpoint_type not in (BROKERS, CONTROLLERS):
        return _error(
            node, ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, "unknown endpoint type", endpoint_type
        )
    if endpoint_type == CONTROLLERS:
        brokers = [
            {"BrokerId": c.node_id, "Host": c.host, "Port": c.port, "Rack": None}
            for c in node.config.controllers
        ]
        controller_id = node.node_id if node.active else -1
    else:
        if not node.active or node.image is None:
            return _error(
                node, ErrorCode.NOT_CONTROLLER, "not the active controller", endpoint_type
            )
        brokers = []
        fenced_too = ctx.version >= 2 and body["IncludeFencedBrokers"]
        for _, reg in sorted(node.image.brokers.items()):
            if not (reg.state.visible or fenced_too):
                continue
            lst = node.propagator.endpoint_of(reg)
            entry = {
                "BrokerId": reg.broker_id,
                "Host": lst["host"],
                "Port": lst["port"],
                "Rack": reg.rack,
                "IsFenced": not reg.state.visible,
            }
            brokers.append(extensions.with_start_time(entry, reg.start_time_ms, True))
        controller_id = node.node_id
    response = {
        "ErrorCode": 0,
        "EndpointType": endpoint_type,
        "ClusterId": node.cluster_id,
        "ControllerId": controller_id,
        "Brokers": brokers,
    }
    return _finish(node, ctx, body, response)
