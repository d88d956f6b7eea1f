"""DescribeProducers (61): the producers a partition's log knows (KIP-664), from its producer state.

Behaviour / version notes (Kafka 3.9's KafkaApis.handleDescribeProducersRequest and
ReplicaManager.activeProducerState):

- Per topic, in this order: an illegal topic name INVALID_TOPIC_EXCEPTION (with Kafka's
  message), no READ on the TOPIC TOPIC_AUTHORIZATION_FAILED, a topic the metadata does not know
  UNKNOWN_TOPIC_OR_PARTITION, each on every partition asked.
- Per partition: not hosted here UNKNOWN_TOPIC_OR_PARTITION (NOT_LEADER_OR_FOLLOWER when the
  metadata knows it); any replica answers, leader or follower, from its own log's state.
- Each producer: id, epoch, last sequence (-1 after a new epoch or a marker with none since),
  last timestamp (of its last batch or marker), the coordinator epoch of its last marker (-1:
  none), and the first offset of its open transaction (CurrentTxnStartOffset, -1: none), in
  producer id order.
- Version 0 only (flexible).
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.handlers.common import topic_name_error
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        return describe_producers(node, ctx, body)

    return Api(ApiKey.DESCRIBE_PRODUCERS, handle)


def describe_producers(node: BrokerView, ctx: RequestContext, body: dict) -> dict:
    topics = []
    for t in body["Topics"]:
        name = t["Name"]
        message = topic_name_error(name)
        if message is not None:
            error: tuple[int, str | None] | None = (int(ErrorCode.INVALID_TOPIC_EXCEPTION), message)
        elif not node.authorize(ctx.session, "READ", ("TOPIC", name)):
            error = (int(ErrorCode.TOPIC_AUTHORIZATION_FAILED), None)
        elif name not in node.metadata_cache.topics:
            error = (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), None)
        else:
            error = None
        parts = [
            _partition(node, name, index) if error is None else _failed(index, *error)
            for index in t["PartitionIndexes"]
        ]
        topics.append({"Name": name, "Partitions": parts})
    return {"ThrottleTimeMs": 0, "Topics": topics}


def _failed(index: int, code: int, message: str | None = None) -> dict[str, Any]:
    return {
        "PartitionIndex": index,
        "ErrorCode": code,
        "ErrorMessage": message,
        "ActiveProducers": [],
    }


def _partition(node: BrokerView, topic: str, index: int) -> dict[str, Any]:
    try:
        p = node.replica_manager.partition_or_error(topic, index, leader=False)
    except KafkaError as e:
        return _failed(index, int(e.code))
    producers = p.log.producers.producers
    active = [
        {
            "ProducerId": pid,
            "ProducerEpoch": e.epoch,
            "LastSequence": e.last_seq,
            "LastTimestamp": e.last_timestamp,
            "CoordinatorEpoch": e.coordinator_epoch,
            "CurrentTxnStartOffset": -1 if e.txn_first_offset is None else e.txn_first_offset,
        }
        for pid, e in sorted(producers.items())
    ]
    return {
        "PartitionIndex": index,
        "ErrorCode": 0,
        "ErrorMessage": None,
        "ActiveProducers": active,
    }
