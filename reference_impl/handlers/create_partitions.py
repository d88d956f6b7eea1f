"""CreatePartitions (37): brokers forward it (KIP-590); the controller adds partitions.

A topic can only grow; new partitions get the replication factor of partition 0, spread over
the Online brokers, or the given assignment (one broker list per new partition).
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.forwarded import mutation_api
from reference_impl.handlers.common import MAX_PARTITIONS
from reference_impl.metadata.placement import assign_replicas, new_partition
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView, NodeView

ROLES = ("broker", "controller")


def api(node: NodeView) -> Api:
    return mutation_api(node, ApiKey.CREATE_PARTITIONS, create_partitions)


def _plan(image: Any, t: dict) -> list[list[int]]:
    topic = image.topics.get(t["Name"])
    if topic is None:
        raise KafkaError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic '{t['Name']}' does not exist."
        )
    current = len(topic.partitions)
    count = t["Count"]
    if count == current:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partitions.")
    if count < current:
        raise KafkaError(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {current} partitions, which is higher than the requested "
            f"{count}.",
        )
    if count > MAX_PARTITIONS:
        raise KafkaError(
            ErrorCode.INVALID_PARTITIONS,
            f"the reference allows at most {MAX_PARTITIONS} partitions",
        )
    added = count - current
    if t["Assignments"] is not None:
        if len(t["Assignments"]) != added:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Increasing the number of partitions by {added} but "
                f"{len(t['Assignments'])} assignments provided.",
            )
        out = []
        for a in t["Assignments"]:
            ids = a["BrokerIds"]
            if not ids or len(set(ids)) != len(ids) or any(b not in image.brokers for b in ids):
                raise KafkaError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"invalid assignment {ids}")
            out.append(ids)
        return out
    rf = len(topic.partitions[0].replicas) if 0 in topic.partitions else 1
    active = image.active_brokers()
    if rf > len(active):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {rf} with {len(active)} available brokers",
        )
    return assign_replicas(active, added, rf, first_partition=current)


async def create_partitions(node: ControllerView, ctx: RequestContext, body: dict) -> dict:
    image = node.require_active()
    counts: dict[str, int] = {}
    for t in body["Topics"]:
        counts[t["Name"]] = counts.get(t["Name"], 0) + 1
    results = []
    records: list[dict[str, Any]] = []
    for t in body["Topics"]:
        name = t["Name"]
        result: dict[str, Any] = {"Name": name, "ErrorCode": 0, "ErrorMessage": None}
        results.append(result)
        if counts[name] > 1:
            result.update(ErrorCode=int(ErrorCode.INVALID_REQUEST), ErrorMessage="duplicate topic")
            continue
        if not node.authorize(ctx.session, "ALTER", ("TOPIC", name)):
            result.update(ErrorCode=int(ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            continue
        try:
            plan = _plan(image, t)
        except KafkaError as e:
            result.update(ErrorCode=int(e.code), ErrorMessage=e.message)
            continue
        if not body["ValidateOnly"]:
            first = len(image.topics[name].partitions)
            records.extend(new_partition(r).record(name, first + i) for i, r in enumerate(plan))
    if records:
        offset = await node.commit(records)
        await node.wait_propagated(offset, body["TimeoutMs"])
    return {"ThrottleTimeMs": 0, "Results": results}
