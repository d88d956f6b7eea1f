"""StopReplica (5), from the controller: partitions this broker no longer hosts (or that are
deleted), handed to the data plane (``ReplicaManager.stop_replicas``)."""

from __future__ import annotations

from conformance.protocol import ApiKey
from reference_impl.data_plane import StopReplicaState
from reference_impl.handlers.common import controller_request_error
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        stops = _stops(body, ctx.version)
        error = controller_request_error(node, ctx, body, broker_epoch_since=1)
        errors: dict[tuple[str, int], int] = {}
        if not error:
            errors = await node.replica_manager.stop_replicas(stops)
        return {
            "ErrorCode": error,
            "PartitionErrors": [
                {
                    "TopicName": s.topic,
                    "PartitionIndex": s.partition,
                    "ErrorCode": error or errors.get((s.topic, s.partition), 0),
                }
                for s in stops
            ],
        }

    return Api(ApiKey.STOP_REPLICA, handle)


def _stops(body: dict, v: int) -> list[StopReplicaState]:
    if v >= 3:
        return [
            StopReplicaState(
                t["TopicName"], p["PartitionIndex"], p["LeaderEpoch"], p["DeletePartition"]
            )
            for t in body["TopicStates"]
            for p in t["PartitionStates"]
        ]
    delete = body["DeletePartitions"]
    if v >= 1:
        return [
            StopReplicaState(t["Name"], i, -1, delete)
            for t in body["Topics"]
            for i in t["PartitionIndexes"]
        ]
    return [
        StopReplicaState(p["TopicName"], p["PartitionIndex"], -1, delete)
        for p in body["UngroupedPartitions"]
    ]
