"""AlterPartition (56), on the controller listener: a leader asks to change a partition's ISR.

The sender must be the registered broker with that epoch (else STALE_BROKER_EPOCH) and the
partition's leader (NOT_LEADER_OR_FOLLOWER) at its leader epoch (FENCED_LEADER_EPOCH) and
partition epoch (INVALID_UPDATE_VERSION). The new ISR must contain the leader and only replicas
that are Online (with the epochs given, from v3), else INELIGIBLE_REPLICA. A granted change
bumps the partition epoch and reaches every broker through LeaderAndIsr and UpdateMetadata.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from reference_impl.broker_state import BrokerState
from reference_impl.metadata.image import Partition
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView
from reference_impl.security_hooks import CLUSTER, CLUSTER_ACTION

ROLES = ("controller",)


def api(node: ControllerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not node.authorize(ctx.session, CLUSTER_ACTION, CLUSTER):
            return {"ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "Topics": []}
        return await alter(node, ctx, body)

    return Api(ApiKey.ALTER_PARTITION, handle)


def _partition_error(index: int, code: ErrorCode) -> dict[str, Any]:
    return {
        "PartitionIndex": index,
        "ErrorCode": int(code),
        "LeaderId": -1,
        "LeaderEpoch": -1,
        "Isr": [],
        "PartitionEpoch": -1,
    }


def _check(image: Any, broker_id: int, p: Partition, d: dict, v: int) -> ErrorCode | None:
    if p.leader != broker_id:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if d["LeaderEpoch"] != p.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if d["PartitionEpoch"] != p.partition_epoch:
        return ErrorCode.INVALID_UPDATE_VERSION
    if v >= 3:
        members = [(m["BrokerId"], m["BrokerEpoch"]) for m in d["NewIsrWithEpochs"]]
    else:
        members = [(b, -1) for b in d["NewIsr"]]
    isr = [b for b, _ in members]
    if broker_id not in isr or len(set(isr)) != len(isr) or any(b not in p.replicas for b in isr):
        return ErrorCode.INVALID_REQUEST
    for b, epoch in members:
        reg = image.brokers.get(b)
        if reg is None or (b != broker_id and reg.state != BrokerState.ONLINE):
            return ErrorCode.INELIGIBLE_REPLICA
        if epoch != -1 and epoch != reg.epoch:
            return ErrorCode.INELIGIBLE_REPLICA
    return None


async def alter(node: ControllerView, ctx: RequestContext, body: dict) -> dict:
    image = node.require_active()
    v = ctx.version
    broker_id = body["BrokerId"]
    reg = image.brokers.get(broker_id)
    if reg is None or body["BrokerEpoch"] not in (-1, reg.epoch):
        return {"ErrorCode": int(ErrorCode.STALE_BROKER_EPOCH), "Topics": []}
    topics = []
    records = []
    pending = []
    for t in body["Topics"]:
        name = t["TopicName"] if v < 2 else image.topic_ids.get(t["TopicId"])
        topic = image.topics.get(name) if name is not None else None
        out = {
            "TopicName": t.get("TopicName", ""),
            "TopicId": t.get("TopicId", ZERO_UUID),
            "Partitions": [],
        }
        topics.append(out)
        for d in t["Partitions"]:
            index = d["PartitionIndex"]
            p = topic.partitions.get(index) if topic is not None else None
            if p is None:
                missing = (
                    ErrorCode.UNKNOWN_TOPIC_ID
                    if v >= 2 and topic is None
                    else (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                )
                out["Partitions"].append(_partition_error(index, missing))
                continue
            error = _check(image, broker_id, p, d, v)
            if error is not None:
                out["Partitions"].append(_partition_error(index, error))
                continue
            isr = [m["BrokerId"] for m in d["NewIsrWithEpochs"]] if v >= 3 else list(d["NewIsr"])
            changed = Partition(p.replicas, isr, p.leader, p.leader_epoch, p.partition_epoch + 1)
            assert name is not None  # the topic was found by it
            records.append(changed.record(name, index))
            pending.append((out, index, changed, d.get("LeaderRecoveryState", 0)))
    if records:
        await node.commit(records)
    for out, index, p, recovery in pending:
        out["Partitions"].append(
            {
                "PartitionIndex": index,
                "ErrorCode": 0,
                "LeaderId": p.leader,
                "LeaderEpoch": p.leader_epoch,
                "Isr": p.isr,
                "LeaderRecoveryState": recovery,
                "PartitionEpoch": p.partition_epoch,
            }
        )
    return {"ThrottleTimeMs": 0, "ErrorCode": 0, "Topics": topics}
