"""ListOffsets (2), v1+: earliest (-2), latest (-1), max timestamp (-3, v7+), earliest local
(-4, v8+: the log start, there being no tiered storage), latest tiered (-5, v9+, KIP-1005:
none, -1), or the first record at or after a timestamp (from the time index). v10 (KIP-1075)
adds TimeoutMs for Kafka's asynchronous remote-storage lookups: every lookup here is local and
immediate. v11 adds KIP-1023's earliest pending upload (-6): none, -1, as Kafka 4.4.0 answers it
without tiered storage (and UNSUPPORTED_VERSION below v11).

Consumers see up to the high watermark (read_uncommitted) or the last stable offset; a
replica id >= 0 sees the log end. v0 (a list of segment offsets) is not served, as in Kafka
4.0. A partition named twice is answered INVALID_REQUEST, and a negative timestamp that has no
meaning in the version UNSUPPORTED_VERSION whether the partition exists or not, as Kafka does.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MIN_VERSION = 1
#: the negative timestamps with a meaning, and the first version that has each
SPECIAL_TIMESTAMPS = {-1: 0, -2: 0, -3: 7, -4: 8, -5: 9, -6: 11}
MAX_VERSION = 11


def _special(version: int) -> set[int]:
    return {ts for ts, since in SPECIAL_TIMESTAMPS.items() if version >= since}


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        return list_offsets(node, ctx, body)

    return Api(ApiKey.LIST_OFFSETS, handle, min_version=MIN_VERSION, max_version=MAX_VERSION)


def list_offsets(node: BrokerView, ctx: RequestContext, body: dict) -> dict:
    rm = node.replica_manager
    replica_id = body["ReplicaId"]
    isolation = body["IsolationLevel"] if ctx.version >= 2 else 0
    seen: dict[tuple[str, int], int] = {}
    for t in body["Topics"]:
        for p in t["Partitions"]:
            key = (t["Name"], p["PartitionIndex"])
            seen[key] = seen.get(key, 0) + 1
    topics = []
    for t in body["Topics"]:
        name = t["Name"]
        allowed = node.authorize(ctx.session, "DESCRIBE", ("TOPIC", name))
        parts = []
        for p in t["Partitions"]:
            index = p["PartitionIndex"]
            entry: dict[str, Any] = {
                "PartitionIndex": index,
                "ErrorCode": 0,
                "Timestamp": -1,
                "Offset": -1,
                "LeaderEpoch": -1,
            }
            if seen[(name, index)] > 1:
                entry["ErrorCode"] = int(ErrorCode.INVALID_REQUEST)
            elif not allowed:
                entry["ErrorCode"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif p["Timestamp"] < 0 and p["Timestamp"] not in _special(ctx.version):
                entry["ErrorCode"] = int(ErrorCode.UNSUPPORTED_VERSION)
            else:
                a = rm.list_offset(
                    replica_id,
                    isolation,
                    name,
                    index,
                    p.get("CurrentLeaderEpoch", -1),
                    p["Timestamp"],
                )
                entry.update(
                    ErrorCode=a.error,
                    Timestamp=a.timestamp,
                    Offset=a.offset,
                    LeaderEpoch=a.leader_epoch,
                )
            parts.append(entry)
        if parts:  # Kafka answers per partition: a topic listed with none is not answered
            topics.append({"Name": name, "Partitions": parts})
    return {"ThrottleTimeMs": 0, "Topics": topics}
