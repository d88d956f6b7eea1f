"""DeleteRecords (21): on each partition's leader, move the log start offset up to the offset
asked (-1: the high watermark), deleting whole segments below it (KIP-107).

An offset above the high watermark (or below -1) is OFFSET_OUT_OF_RANGE; a topic whose
cleanup.policy has no ``delete`` is POLICY_VIOLATION; the caller needs DELETE on the topic.
The answer's LowWatermark is the leader's new log start offset; followers learn it from the
LogStartOffset of the leader's Fetch answers (the reply does not wait for them).
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        return delete_records(node, ctx, body)

    return Api(ApiKey.DELETE_RECORDS, handle)


def delete_records(node: BrokerView, ctx: RequestContext, body: dict) -> dict:
    rm = node.replica_manager
    topics = []
    for name, offsets in _merged(body["Topics"]).items():
        allowed = node.authorize(ctx.session, "DELETE", ("TOPIC", name))
        parts = []
        for index, offset in offsets.items():
            entry = {"PartitionIndex": index, "LowWatermark": -1, "ErrorCode": 0}
            if not allowed:
                entry["ErrorCode"] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            else:
                try:
                    entry["LowWatermark"] = rm.delete_records(name, index, offset)
                except KafkaError as e:
                    entry["ErrorCode"] = int(e.code)
            parts.append(entry)
        if parts:  # Kafka answers per partition: a topic listed with none is not answered
            topics.append({"Name": name, "Partitions": parts})
    return {"ThrottleTimeMs": 0, "Topics": topics}


def _merged(topics: list[dict]) -> dict[str, dict[int, int]]:
    """The request's partitions by topic name, each once: Kafka reads a request into one map
    by topic-partition (the last offset given wins) and answers each topic once, so entries
    naming the same topic twice are merged (seen on Kafka 4.4.0: diff, DeleteRecords v2)."""
    merged: dict[str, dict[int, int]] = {}
    for t in topics:
        offsets = merged.setdefault(t["Name"], {})
        for p in t["Partitions"]:
            offsets[p["PartitionIndex"]] = p["Offset"]
    return merged
