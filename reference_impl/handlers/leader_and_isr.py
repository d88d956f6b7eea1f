"""LeaderAndIsr (4), from the controller: the partitions this broker hosts, handed to the
data plane (``ReplicaManager.apply_leader_and_isr``)."""

from __future__ import annotations

import uuid

from conformance.protocol import ApiKey
from conformance.protocol.spec import ZERO_UUID
from reference_impl.data_plane import PartitionState
from reference_impl.handlers.common import controller_request_error
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        grouped = _states(body, v)
        error = controller_request_error(node, ctx, body, broker_epoch_since=2)
        errors: dict[tuple[str, int], int] = {}
        if not error:
            states = [s for _, s in grouped]
            errors = await node.replica_manager.apply_leader_and_isr(states)
        by_topic: dict[str, list[dict]] = {}
        ids: dict[str, uuid.UUID] = {}
        for topic_id, s in grouped:
            ids[s.topic] = topic_id
            by_topic.setdefault(s.topic, []).append(
                {
                    "TopicName": s.topic,
                    "PartitionIndex": s.partition,
                    "ErrorCode": error or errors.get((s.topic, s.partition), 0),
                }
            )
        if v >= 5:
            return {
                "ErrorCode": error,
                "Topics": [
                    {"TopicId": ids[t], "PartitionErrors": ps} for t, ps in by_topic.items()
                ],
            }
        return {"ErrorCode": error, "PartitionErrors": [p for ps in by_topic.values() for p in ps]}

    return Api(ApiKey.LEADER_AND_ISR, handle)


def _state(topic: str, topic_id: uuid.UUID, s: dict) -> PartitionState:
    return PartitionState(
        topic=topic,
        topic_id=topic_id,
        partition=s["PartitionIndex"],
        controller_epoch=s["ControllerEpoch"],
        leader=s["Leader"],
        leader_epoch=s["LeaderEpoch"],
        isr=tuple(s["Isr"]),
        partition_epoch=s["PartitionEpoch"],
        replicas=tuple(s["Replicas"]),
        is_new=s.get("IsNew", False),
        leader_recovery_state=s.get("LeaderRecoveryState", 0),
    )


def _states(body: dict, v: int) -> list[tuple[uuid.UUID, PartitionState]]:
    if v >= 2:
        return [
            (t.get("TopicId", ZERO_UUID), _state(t["TopicName"], t.get("TopicId", ZERO_UUID), s))
            for t in body["TopicStates"]
            for s in t["PartitionStates"]
        ]
    return [
        (ZERO_UUID, _state(s["TopicName"], ZERO_UUID, s)) for s in body["UngroupedPartitionStates"]
    ]
