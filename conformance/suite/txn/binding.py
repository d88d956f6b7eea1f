"""How the txn-producers model (``specs/models/txn-producers.json``) meets a target.

Each entity is a fresh one-partition suite topic (``provision``) whose name is also the
transactional id of the producer writing to it, so entities never share a partition and the
model can predict every offset. The binding keeps each producer's id, epoch and sequence
(``txns.TxnProducer``) and writes them into the requests the model templates; coordinator
requests go to the transactional id's coordinator and are asked again while the answer says
"not yet" (loading, moving, markers of the last transaction still being written); data requests
go to the partition's leader. After an accepted EndTxn or InitProducerId it reads the partition
until it is stable (``txns.settled``), since markers are written after those answers. Fetched
partitions gain ConsumedCount, DataRecords, MarkerCount and AbortedCount.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records import CorruptRecordError
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.models import Binding
from conformance.suite.kit.models.binding import RunView
from conformance.suite.kit.partitions import SuiteTopic, records_of
from conformance.suite.kit.records_io import quiet_version
from conformance.suite.txn import txns
from conformance.suite.txn.txns import TxnProducer

WITHIN: dict[int, str | None] = {
    ApiKey.PRODUCE: txns.CLASSIC_PRODUCE,
    ApiKey.END_TXN: txns.CLASSIC_END,
    ApiKey.FETCH: "4-12",
    ApiKey.LIST_OFFSETS: "2+",
    ApiKey.ADD_PARTITIONS_TO_TXN: txns.ADD_PARTITIONS_VERSIONS,
}
#: requests of the transaction coordinator
COORDINATOR = (ApiKey.INIT_PRODUCER_ID, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.END_TXN)


class ProducersBinding(Binding):
    """Transactional producers, each with a topic of its own, as model entities."""

    def __init__(self, harness: Harness, count: int, reqs: tuple[str, ...]) -> None:
        self.harness, self.count, self.reqs = harness, count, reqs
        self.topics: list[SuiteTopic] = []
        try:
            for i in range(count):
                self.topics.append(SuiteTopic.create(harness, f"txn-model-{i}", 1))
        except BaseException:
            self.delete()
            raise
        self.producers = [TxnProducer(harness, t.name, reqs) for t in self.topics]
        #: entities whose partition is in an open transaction (an accepted AddPartitionsToTxn)
        self.open: set[int] = set()
        #: entities whose partition did not settle once: not waited for again (the model's
        #: reads judge what the target does), so a target that never writes markers costs
        #: one wait per entity, not one per step
        self.unsettled: set[int] = set()
        self._index = {t.name: i for i, t in enumerate(self.topics)}

    def entity_id(self, index: int) -> str:
        return self.topics[index].name

    def version(self, api_key: int) -> int:
        return quiet_version(self.harness, api_key, WITHIN.get(api_key))

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        api_key = request["api_key"]
        version = self.version(api_key)
        entity = body.get("TransactionalId") or body.get("V3AndBelowTransactionalId")
        if entity is None:
            entries = body.get("Topics") or []
            entity = entries[0].get("Topic", entries[0].get("Name")) if entries else None
        index = self._index[entity]
        producer, topic = self.producers[index], self.topics[index]
        if api_key in COORDINATOR:
            return self._coordinator(index, api_key, version, body)
        if api_key == ApiKey.PRODUCE:
            part = body["TopicData"][0]["PartitionData"][0]
            values = [f"record {i}".encode() for i in range(part["Records"])]
            return {
                "Responses": [
                    {"Name": topic.name, "PartitionResponses": [producer.produce(topic, 0, values)]}
                ]
            }
        answer = topic.conn(0).request(api_key, version, body).body
        if api_key == ApiKey.FETCH:
            for t in answer["Responses"]:
                for p in t["Partitions"]:
                    self._describe_fetched(name, p, body["IsolationLevel"])
        return answer

    def _coordinator(
        self, index: int, api_key: int, version: int, body: dict[str, Any]
    ) -> dict[str, Any]:
        """A coordinator request; after one that ends an open transaction (EndTxn, or a new
        InitProducerId fencing it), the wait for its marker: the high watermark one further
        (a transaction holding no record leaves the partition stable before its marker is in),
        then the partition stable."""
        producer, topic = self.producers[index], self.topics[index]
        if api_key == ApiKey.ADD_PARTITIONS_TO_TXN:
            body["V3AndBelowProducerId"] = producer.pid
            body["V3AndBelowProducerEpoch"] = producer.epoch

            def code(answer: dict[str, Any]) -> int:
                codes = [
                    p["PartitionErrorCode"]
                    for t in answer["ResultsByTopicV3AndBelow"]
                    for p in t["ResultsByPartition"]
                ]
                return next((c for c in codes if c != ErrorCode.NONE), ErrorCode.NONE)

            answer = producer.ask(api_key, version, body, code)
            if code(answer) == ErrorCode.NONE:
                self.open.add(index)
            return answer
        if api_key == ApiKey.END_TXN:
            body["ProducerId"], body["ProducerEpoch"] = producer.pid, producer.epoch
        before = txns.fetch(topic, 0, 0, txns.READ_UNCOMMITTED, *self.reqs).high_watermark
        answer = producer.ask(api_key, version, body, lambda a: a["ErrorCode"])
        if answer["ErrorCode"] != ErrorCode.NONE:
            return answer
        if api_key == ApiKey.INIT_PRODUCER_ID:
            producer.pid, producer.epoch = answer["ProducerId"], answer["ProducerEpoch"]
            producer.sequences.clear()
        ended = index in self.open
        self.open.discard(index)
        if index in self.unsettled:
            return answer
        if ended and txns.grown(topic, 0, before + 1, *self.reqs).high_watermark <= before:
            self.unsettled.add(index)
        read = txns.settled(topic, 0, *self.reqs)
        if read.last_stable < read.high_watermark:
            self.unsettled.add(index)
        return answer

    @staticmethod
    def _describe_fetched(step: str, part: dict[str, Any], isolation: int) -> None:
        try:
            batches, _ = records_of(part["Records"])
        except CorruptRecordError as e:
            raise verify.Failed(f"{step}: fetched records do not decode: {e}") from None
        aborted = [
            (a["ProducerId"], a["FirstOffset"]) for a in part.get("AbortedTransactions") or []
        ]
        read = txns.Read(
            0, part["ErrorCode"], part["HighWatermark"], part["LastStableOffset"], aborted, batches
        )
        part["ConsumedCount"] = len(txns.consumed([read]))
        part["DataRecords"] = sum(len(b.records) for b in batches if not b.is_control)
        part["MarkerCount"] = sum(len(b.records) for b in batches if b.is_control)
        part["AbortedCount"] = len(aborted)

    def delete(self) -> None:
        for t in self.topics:
            t.delete()

    def cleanup(self, runner: RunView) -> None:
        self.delete()
