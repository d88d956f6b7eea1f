"""AddPartitionsToTxn (24): partitions a transactional producer is about to write to.

Behaviour / version notes (Kafka's KafkaApis.handleAddPartitionsToTxnRequest and the
coordinator's handleAddPartitionsToTransaction / handleVerifyPartitionsInTransaction):

* v0-v3 (the clients' form, one transaction): WRITE on the TRANSACTIONAL_ID, or every partition
  is TRANSACTIONAL_ID_AUTHORIZATION_FAILED; then per partition WRITE on its TOPIC (internal
  topics are never authorised here: TOPIC_AUTHORIZATION_FAILED);
* v4+ (KIP-890, the brokers' form: several transactions, each possibly VerifyOnly): CLUSTER_ACTION
  on the cluster, or the top-level ErrorCode is CLUSTER_AUTHORIZATION_FAILED; no TOPIC check;
* every version: a partition the metadata does not know is UNKNOWN_TOPIC_OR_PARTITION; one failed
  partition fails its transaction, the others are OPERATION_NOT_ATTEMPTED;
* the coordinator's answer applies to every partition of the transaction:
  INVALID_PRODUCER_ID_MAPPING (unknown id or another producer id), PRODUCER_FENCED (another epoch;
  v0-v1: INVALID_PRODUCER_EPOCH), CONCURRENT_TRANSACTIONS (being prepared or completed),
  NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS; NONE once the partitions are durably in the
  transaction. VerifyOnly adds nothing: NONE for a partition in the ongoing transaction,
  TRANSACTION_ABORTABLE for one that is not (v4 and v5 answer alike, as Kafka's coordinator does);
* v5 without VerifyOnly is a partition leader adding a transaction-version-2 client's partition
  (KIP-890 part 2: Produce v12+, TxnOffsetCommit v5+): the transaction then ends with an epoch
  bump (``end_txn.py``).
"""

from __future__ import annotations

from collections.abc import Callable

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.internal_topics import INTERNAL_TOPICS
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for

TopicPartition = tuple[str, int]
ErrorOf = Callable[[TopicPartition], int]


def api(node: BrokerView) -> Api:
    service = service_for(node)

    async def one(
        ctx: RequestContext, tid: str, pid: int, epoch: int, topics: list[dict], verify: bool
    ) -> tuple[dict[str, list[int]], ErrorOf]:
        """One transaction's partitions and how each is answered."""
        wanted: dict[str, list[int]] = {}
        for t in topics:
            parts = wanted.setdefault(t["Name"], [])
            parts.extend(p for p in t["Partitions"] if p not in parts)
        client = ctx.version < 4
        if client and not node.authorize(ctx.session, "WRITE", ("TRANSACTIONAL_ID", tid)):
            return wanted, lambda tp: int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        errors: dict[TopicPartition, int] = {}
        for topic, parts in wanted.items():
            writable = not client or (
                topic not in INTERNAL_TOPICS
                and node.authorize(ctx.session, "WRITE", ("TOPIC", topic))
            )
            for p in parts:
                if not writable:
                    errors[(topic, p)] = int(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                elif node.metadata_cache.partition(topic, p) is None:
                    errors[(topic, p)] = int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        if errors:
            # answered from a map of partitions to errors: a topic listed with no partition
            # is left out, where the other answers list the request's topics (Kafka's
            # resultForTransaction and errorResponseForTransaction; seen on Kafka 4.4.0)
            not_tried = int(ErrorCode.OPERATION_NOT_ATTEMPTED)
            listed = {topic: parts for topic, parts in wanted.items() if parts}
            return listed, lambda tp: errors.get(tp, not_tried)
        partitions = {(t, p) for t, parts in wanted.items() for p in parts}
        if verify:
            verified = service.coordinator.verify_partitions(tid, pid, epoch, partitions)
            return wanted, verified.__getitem__
        # v5 without VerifyOnly: a broker adding a TV2 client's partition (Kafka's
        # transactionVersionForAddPartitionsToTxn)
        tv = 2 if ctx.version >= 5 else 1
        error = await service.coordinator.add_partitions(tid, pid, epoch, partitions, client_tv=tv)
        if error == ErrorCode.PRODUCER_FENCED and ctx.version < 2:
            error = int(ErrorCode.INVALID_PRODUCER_EPOCH)
        return wanted, lambda tp: error

    async def handle(ctx: RequestContext, body: dict) -> dict:
        if ctx.version < 4:
            wanted, error_of = await one(
                ctx,
                body["V3AndBelowTransactionalId"],
                body["V3AndBelowProducerId"],
                body["V3AndBelowProducerEpoch"],
                body["V3AndBelowTopics"],
                False,
            )
            return {"ThrottleTimeMs": 0, "ResultsByTopicV3AndBelow": _topics(wanted, error_of)}
        if not node.authorize(ctx.session, "CLUSTER_ACTION", ("CLUSTER", "kafka-cluster")):
            return {
                "ThrottleTimeMs": 0,
                "ResultsByTransaction": [],
                "ErrorCode": int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED),
            }
        results = []
        for txn in body["Transactions"]:
            tid = txn["TransactionalId"]
            wanted, error_of = await one(
                ctx, tid, txn["ProducerId"], txn["ProducerEpoch"], txn["Topics"], txn["VerifyOnly"]
            )
            results.append({"TransactionalId": tid, "TopicResults": _topics(wanted, error_of)})
        return {"ThrottleTimeMs": 0, "ErrorCode": 0, "ResultsByTransaction": results}

    return Api(ApiKey.ADD_PARTITIONS_TO_TXN, handle)


def _topics(wanted: dict[str, list[int]], error_of: ErrorOf) -> list[dict]:
    return [
        {
            "Name": topic,
            "ResultsByPartition": [
                {"PartitionIndex": p, "PartitionErrorCode": error_of((topic, p))} for p in parts
            ],
        }
        for topic, parts in wanted.items()
    ]
