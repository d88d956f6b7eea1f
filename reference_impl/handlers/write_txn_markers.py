"""WriteTxnMarkers (27): the transaction coordinator has a partition leader end a transaction.

Behaviour / version notes (Kafka 3.9's KafkaApis.handleWriteTxnMarkersRequest):

- ALTER on CLUSTER, or else CLUSTER_ACTION on CLUSTER (brokers' principals): otherwise every
  partition of every marker is CLUSTER_AUTHORIZATION_FAILED.
- Per marker and partition: a partition with no log on this broker is
  UNKNOWN_TOPIC_OR_PARTITION; one this broker does not lead NOT_LEADER_OR_FOLLOWER; otherwise a
  control batch is appended (one COMMIT or ABORT record: key version 0 and type, value version 0
  and the coordinator epoch; producer id and epoch of the marker, transactional and control
  bits) with acks=all, so the coordinator hears NONE only once the ISR has it
  (NOT_ENOUGH_REPLICAS below min.insync.replicas, REQUEST_TIMED_OUT after the broker's
  request timeout). The producer state refuses a marker whose producer epoch is older than the
  last it saw (INVALID_PRODUCER_EPOCH) or whose coordinator epoch is
  (TRANSACTION_COORDINATOR_FENCED).
  A marker completes the producer's ongoing transaction in that partition; an ABORT adds its
  range to the aborted-transaction index; a repeated marker writes another control batch and
  changes nothing else.
- A marker on a ``__consumer_offsets`` partition then tells the group coordinator, which makes
  the producer's pending transactional offsets visible (COMMIT) or drops them (ABORT); while
  that partition's groups are still loading here the marker is not written and the partition
  answers NOT_LEADER_OR_FOLLOWER (Kafka's group coordinator turns its loading errors into it),
  so the transaction coordinator retries.
- The answer lists each producer id once, its partitions' errors merged (Kafka keys the answer
  by producer id). No markers: an empty answer.
- Versions 0-2 (1+ flexible), Kafka 4.4.0's range minus v0, which the reference keeps (3.9
  serves it). v2 (KIP-890) adds each marker's TransactionVersion: a version-2 marker carries
  the epoch its coordinator bumped at the end of the transaction, so the producer state takes
  it only newer than the producer's epoch, or at the same epoch once the transaction has
  completed (a retry), else INVALID_PRODUCER_EPOCH (Kafka 4.4.0's
  ProducerAppendInfo.checkProducerEpoch); v0-1 markers carry none (0: not older suffices).
"""

from __future__ import annotations

import logging
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.internal_topics import OFFSETS_TOPIC
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.security_hooks import CLUSTER, CLUSTER_ACTION

MAX_VERSION = 2
log = logging.getLogger(__name__)


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        return await write_txn_markers(node, ctx, body)

    return Api(ApiKey.WRITE_TXN_MARKERS, handle, max_version=MAX_VERSION)


async def write_txn_markers(node: BrokerView, ctx: RequestContext, body: dict) -> dict:
    allowed = node.authorize(ctx.session, "ALTER", CLUSTER) or node.authorize(
        ctx.session, CLUSTER_ACTION, CLUSTER
    )
    errors: dict[int, dict[tuple[str, int], int]] = {}
    for marker in body["Markers"]:
        pid = marker["ProducerId"]
        found = errors.setdefault(pid, {})
        if not allowed:
            for t in marker["Topics"]:
                for index in t["PartitionIndexes"]:
                    found[(t["Name"], index)] = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            continue
        appends = []
        for t in marker["Topics"]:
            for index in t["PartitionIndexes"]:
                key = (t["Name"], index)
                if key not in node.replica_manager.partitions:
                    found[key] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                    continue
                if not _groups_ready(node, *key):
                    found[key] = int(ErrorCode.NOT_LEADER_OR_FOLLOWER)
                    continue
                appends.append(
                    (
                        *key,
                        pid,
                        marker["ProducerEpoch"],
                        marker["CoordinatorEpoch"],
                        marker["TransactionResult"],
                        marker.get("TransactionVersion", 0),  # v2+; 0 before
                    )
                )
        if not appends:
            continue
        written = await node.replica_manager.append_markers(node.config.request_timeout_ms, appends)
        found.update(written)
        offsets = [key for key, code in written.items() if key[0] == OFFSETS_TOPIC and not code]
        if offsets:
            _groups_completed(node, pid, offsets, marker["TransactionResult"], found)
    return {"Markers": [_answer(pid, found) for pid, found in errors.items()]}


def _groups_ready(node: BrokerView, topic: str, index: int) -> bool:
    """A ``__consumer_offsets`` partition takes a marker only once its groups are loaded here
    (a marker applied during the replay could be missed by it): until then the coordinator is
    told NOT_LEADER_OR_FOLLOWER and retries, as Kafka's group coordinator answers markers."""
    groups = getattr(node, "groups", None)
    if topic != OFFSETS_TOPIC or groups is None:
        return True
    return groups.coordinator.loaded(index)


def _groups_completed(
    node: BrokerView,
    pid: int,
    partitions: list[tuple[str, int]],
    commit: bool,
    found: dict[tuple[str, int], int],
) -> None:
    """Tell the group coordinator a transaction ended on its partitions (Kafka's
    onTransactionCompleted); a failure there is UNKNOWN_SERVER_ERROR for those partitions."""
    groups = getattr(node, "groups", None)
    complete = getattr(groups, "transaction_completed", None)
    if complete is None:
        return
    try:
        complete(pid, [index for _, index in partitions], commit)
    except Exception:  # Kafka answers any failure there this way
        log.exception("group coordinator: transaction of producer %d", pid)
        for key in partitions:
            found[key] = int(ErrorCode.UNKNOWN_SERVER_ERROR)


def _answer(pid: int, found: dict[tuple[str, int], int]) -> dict[str, Any]:
    topics: dict[str, list[dict[str, int]]] = {}
    for (name, index), code in found.items():
        topics.setdefault(name, []).append({"PartitionIndex": index, "ErrorCode": code})
    return {
        "ProducerId": pid,
        "Topics": [{"Name": name, "Partitions": parts} for name, parts in topics.items()],
    }
