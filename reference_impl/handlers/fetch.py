"""Fetch (1), v4+: stored batches as they are, long-polled for MaxWaitMs until MinBytes.

Consumers (ReplicaId -1) read up to the high watermark (read_uncommitted) or the last stable
offset (read_committed: the first offset of the earliest transaction not yet complete, else the
high watermark; such a fetch also lists, as AbortedTransactions, the producer id and first offset
of every aborted transaction whose range the returned batches overlap, as Kafka's
collectAbortedTxns, so the client can drop their records; read_uncommitted answers null there).
Every answer's LastStableOffset is that offset. Followers
(ReplicaId = their broker id, in ReplicaState from v15, ClusterAction required) read up to
the log end and get a DivergingEpoch when their LastFetchedEpoch shows they hold records the
leader never had. Per-partition and per-request byte limits are honoured, except that the
first batch is always returned whole so a consumer can make progress (KIP-74).

Fetch sessions (KIP-227) are not kept: every answer has SessionId 0, which tells a client to
send full requests; an incremental request (a SessionEpoch other than 0, "new session", and -1,
"no session", as Kafka reads it) names a session the broker does not have and gets
FETCH_SESSION_ID_NOT_FOUND. A topic the request lists with no partition is not in the answer
(Kafka answers per partition). Versions below 4 are not served, as in Kafka 4.0.
"""

from __future__ import annotations

import uuid
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from reference_impl.data_plane import FetchPartition, FetchResult
from reference_impl.handlers.data_common import current_leader, node_endpoints
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.security_hooks import CLUSTER, CLUSTER_ACTION

MIN_VERSION = 4
_LEADER_HINT = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH)


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        return await fetch(node, ctx, body)

    # v18 (KIP-1166) adds a follower's high watermark to the partition request: a hint for
    # Kafka's follower-fetch wake-up, not read here (the reference's followers send v12)
    return Api(ApiKey.FETCH, handle, min_version=MIN_VERSION, max_version=18)


async def fetch(node: BrokerView, ctx: RequestContext, body: dict) -> dict:
    v = ctx.version
    replica_id = body["ReplicaId"] if v <= 14 else body["ReplicaState"]["ReplicaId"]
    if body["SessionEpoch"] not in (0, -1):
        return {
            "ThrottleTimeMs": 0,
            "ErrorCode": int(ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
            "SessionId": 0,
            "Responses": [],
        }
    cache = node.metadata_cache
    follower_ok = replica_id < 0 or node.authorize(ctx.session, CLUSTER_ACTION, CLUSTER)
    order: list[tuple[str | None, uuid.UUID, list[int]]] = []
    fixed: dict[tuple[Any, int], FetchResult] = {}
    wanted: list[FetchPartition] = []
    for t in body["Topics"]:
        topic_id = t.get("TopicId", ZERO_UUID) if v >= 13 else ZERO_UUID
        name = cache.topic_ids.get(topic_id) if v >= 13 else t["Topic"]
        indexes = [p["Partition"] for p in t["Partitions"]]
        if indexes:
            order.append((name, topic_id, indexes))
        key_name = name if name is not None else topic_id
        if name is None:
            error = ErrorCode.UNKNOWN_TOPIC_ID
        elif not follower_ok or (
            replica_id < 0 and not node.authorize(ctx.session, "READ", ("TOPIC", name))
        ):
            error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        else:
            error = None
        for p in t["Partitions"]:
            if error is not None:
                fixed[(key_name, p["Partition"])] = FetchResult(int(error))
                continue
            assert name is not None  # an unknown topic id has its error above
            wanted.append(
                FetchPartition(
                    name,
                    p["Partition"],
                    p["FetchOffset"],
                    p["PartitionMaxBytes"],
                    p.get("CurrentLeaderEpoch", -1),
                    p.get("LastFetchedEpoch", -1),
                )
            )
    if wanted:
        results = await node.replica_manager.fetch(
            replica_id,
            body["MaxWaitMs"],
            body["MinBytes"],
            body["MaxBytes"],
            body["IsolationLevel"],
            wanted,
        )
        for r, res in zip(wanted, results, strict=True):
            fixed[(r.topic, r.partition)] = res
    read_committed = body["IsolationLevel"] == 1
    leaders: set[int] = set()
    responses = []
    for name, topic_id, indexes in order:
        key_name = name if name is not None else topic_id
        parts = []
        for index in indexes:
            res = fixed[(key_name, index)]
            entry: dict[str, Any] = {
                "PartitionIndex": index,
                "ErrorCode": res.error,
                "HighWatermark": res.high_watermark,
                "LastStableOffset": res.last_stable_offset,
                "LogStartOffset": res.log_start_offset,
                "AbortedTransactions": _aborted(res) if read_committed else None,
                "PreferredReadReplica": -1,
                "Records": res.records,
            }
            if res.diverging is not None:
                entry["DivergingEpoch"] = {"Epoch": res.diverging[0], "EndOffset": res.diverging[1]}
            if res.error in _LEADER_HINT and v >= 12 and name is not None:
                leader = current_leader(node, name, index)
                if leader is not None:
                    entry["CurrentLeader"] = leader
                    leaders.add(leader["LeaderId"])
            parts.append(entry)
        responses.append({"Topic": name, "TopicId": topic_id, "Partitions": parts})
    response: dict[str, Any] = {
        "ThrottleTimeMs": 0,
        "ErrorCode": 0,
        "SessionId": 0,
        "Responses": responses,
    }
    if v >= 16 and leaders:
        response["NodeEndpoints"] = node_endpoints(node, ctx, leaders)
    return response


def _aborted(res: FetchResult) -> list[dict[str, int]]:
    return [{"ProducerId": pid, "FirstOffset": first} for pid, first in res.aborted or ()]
