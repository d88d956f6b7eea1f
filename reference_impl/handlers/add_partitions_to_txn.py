"""AddPartitionsToTxn (24): partitions a transactional producer is about to write to.

Behaviour / version notes (Kafka's KafkaApis.handleAddPartitionsToTxnRequest and the
coordinator's handleAddPartitionsToTransaction):

* v0-v3 (the clients' form): WRITE on the TRANSACTIONAL_ID, or every partition is
  TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then per partition WRITE on its TOPIC (internal topics are
  never authorised here: TOPIC_AUTHORIZATION_FAILED) and its existence (UNKNOWN_TOPIC_OR_PARTITION);
  one failed partition fails the request, the others are OPERATION_NOT_ATTEMPTED;
* the coordinator's answer applies to every partition: INVALID_PRODUCER_ID_MAPPING (unknown id or
  another producer id), PRODUCER_FENCED (another epoch; v0-v1: INVALID_PRODUCER_EPOCH),
  CONCURRENT_TRANSACTIONS (the transaction is being prepared or completed), NOT_COORDINATOR,
  COORDINATOR_LOAD_IN_PROGRESS; NONE once the partitions are durably in the transaction;
* v4+ (brokers' batched and verify-only form, KIP-890) is not served: the reference's partition
  leaders do not verify transactions, and ApiVersions advertises 0-3.
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.config import INTERNAL_TOPICS
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for

#: the client form only (see the notes)
MAX_VERSION = 3


def api(node: BrokerView) -> Api:
    service = service_for(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        tid = body["V3AndBelowTransactionalId"]
        wanted: dict[str, list[int]] = {}
        for t in body["V3AndBelowTopics"]:
            parts = wanted.setdefault(t["Name"], [])
            parts.extend(p for p in t["Partitions"] if p not in parts)
        if not node.authorize(ctx.session, "WRITE", ("TRANSACTIONAL_ID", tid)):
            return _answer(wanted, lambda tp: int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
        errors: dict[tuple[str, int], int] = {}
        for topic, parts in wanted.items():
            writable = topic not in INTERNAL_TOPICS and node.authorize(
                ctx.session, "WRITE", ("TOPIC", topic)
            )
            for p in parts:
                if not writable:
                    errors[(topic, p)] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                elif node.metadata_cache.partition(topic, p) is None:
                    errors[(topic, p)] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if errors:
            not_tried = int(ErrorCode.OPERATION_NOT_ATTEMPTED)
            return _answer(wanted, lambda tp: errors.get(tp, not_tried))
        error = await service.coordinator.add_partitions(
            tid,
            body["V3AndBelowProducerId"],
            body["V3AndBelowProducerEpoch"],
            {(t, p) for t, parts in wanted.items() for p in parts},
        )
        if error == ErrorCode.PRODUCER_FENCED and ctx.version < 2:
            error = int(ErrorCode.INVALID_PRODUCER_EPOCH)
        return _answer(wanted, lambda tp: error)

    return Api(ApiKey.ADD_PARTITIONS_TO_TXN, handle, max_version=MAX_VERSION)


def _answer(wanted: dict[str, list[int]], error_of: Callable[[tuple[str, int]], int]) -> dict:
    return {
        "ThrottleTimeMs": 0,
        "ResultsByTopicV3AndBelow": [
            {
                "Name": topic,
                "ResultsByPartition": [
                    {"PartitionIndex": p, "PartitionErrorCode": error_of((topic, p))} for p in parts
                ],
            }
            for topic, parts in wanted.items()
        ],
    }
