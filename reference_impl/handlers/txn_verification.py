"""Produce's transaction verification (KIP-890 part 1): is the partition in the transaction?

Kafka 3.9 (``transaction.partition.verification.enable``, default true): before a partition
leader appends a producer's first transactional batch of a transaction (the producer has no
transaction open in that partition), it asks the transaction coordinator with AddPartitionsToTxn
v4+ VerifyOnly. What comes back becomes the Produce error (ReplicaManager and
AddPartitionsToTxnManager):

- NONE: the batch is appended (TxnOffsetCommit: the offsets are written);
- TRANSACTION_ABORTABLE (not in the transaction): itself for Produce v11+, INVALID_TXN_STATE
  for older versions; PRODUCER_FENCED: INVALID_PRODUCER_EPOCH; a whole-request
  CLUSTER_AUTHORIZATION_FAILED: INVALID_TXN_STATE;
- a coordinator not ready (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS,
  COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, no answer): NOT_ENOUGH_REPLICAS, which clients
  retry without a metadata refresh;
- anything else (INVALID_PRODUCER_ID_MAPPING ...) as it is.

Transaction version 2 (KIP-890 part 2, Kafka 4.x: Produce v12+, TxnOffsetCommit v5+): the
client no longer calls AddPartitionsToTxn; the leader asks the coordinator to *add* the partition
(AddPartitionsToTxn v5 without VerifyOnly, which the coordinator takes as a transaction-version-2
client's), and the answers map as above (``add=True``).

The coordinator is the leader of the transactional id's ``__transaction_state`` partition; this
broker asks it on the inter-broker listener as the broker principal, or calls its own
coordinator directly when it is that leader (the same answers without the round trip).
"""

from __future__ import annotations

import logging

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.internal_topics import TRANSACTION_STATE_TOPIC
from reference_impl.peers import PeerConnections
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
#: AddPartitionsToTxn: the first version with VerifyOnly (brokers' form)
VERIFY_MIN_VERSION = 4
#: AddPartitionsToTxn: the version whose non-VerifyOnly form is a TV2 client's implicit add
ADD_MIN_VERSION = 5
#: Produce: the first version of a transaction-version-2 client (partitions added implicitly)
TV2_PRODUCE_VERSION = 12
VERIFY_TIMEOUT_S = 5.0
_NOT_READY = frozenset(
    {
        ErrorCode.CONCURRENT_TRANSACTIONS,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        ErrorCode.NOT_COORDINATOR,
        ErrorCode.NETWORK_EXCEPTION,
    }
)


def manager_error(code: int, generic: bool) -> int:
    """A coordinator's verification answer as Kafka's AddPartitionsToTxnManager hands it on:
    PRODUCER_FENCED as INVALID_PRODUCER_EPOCH, TRANSACTION_ABORTABLE as INVALID_TXN_STATE for
    requests too old to know it (``generic`` False)."""
    if code == ErrorCode.PRODUCER_FENCED:
        return int(ErrorCode.INVALID_PRODUCER_EPOCH)
    if code == ErrorCode.TRANSACTION_ABORTABLE and not generic:
        return int(ErrorCode.INVALID_TXN_STATE)
    return int(code)


def produce_error(code: int, produce_version: int) -> int:
    """A verification answer as Produce reports it (0: verified)."""
    code = manager_error(code, produce_version > 10)
    if code in _NOT_READY:
        return int(ErrorCode.NOT_ENOUGH_REPLICAS)
    return code


class Verifier:
    """Asks the coordinator of a transactional id whether partitions are in its transaction."""

    def __init__(self, node: BrokerView) -> None:
        self.node = node
        self.peers = PeerConnections(
            node,
            ApiKey.ADD_PARTITIONS_TO_TXN,
            f"txn-verify-{node.node_id}",
            min_version=VERIFY_MIN_VERSION,
        )

    async def verify(
        self,
        tid: str,
        producer_id: int,
        epoch: int,
        partitions: list[TopicPartition],
        produce_version: int,
    ) -> dict[TopicPartition, int]:
        add = produce_version >= TV2_PRODUCE_VERSION
        answers = await self._ask(tid, producer_id, epoch, partitions, add=add)
        return {tp: produce_error(code, produce_version) for tp, code in answers.items()}

    async def ask(
        self,
        tid: str,
        producer_id: int,
        epoch: int,
        partitions: list[TopicPartition],
        *,
        generic: bool,
        add: bool = False,
    ) -> dict[TopicPartition, int]:
        """The coordinator's answers as ``manager_error`` hands them on (TxnOffsetCommit)."""
        answers = await self._ask(tid, producer_id, epoch, partitions, add=add)
        return {tp: manager_error(code, generic) for tp, code in answers.items()}

    async def _ask(
        self,
        tid: str,
        producer_id: int,
        epoch: int,
        partitions: list[TopicPartition],
        *,
        add: bool = False,
    ) -> dict[TopicPartition, int]:
        service = service_for(self.node)
        index = service.coordinator.partition_for(tid)
        info = self.node.metadata_cache.partition(TRANSACTION_STATE_TOPIC, index)
        if info is None or info.leader < 0:
            return dict.fromkeys(partitions, int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if info.leader == self.node.node_id:
            if add:
                error = await service.coordinator.add_partitions(
                    tid, producer_id, epoch, set(partitions), client_tv=2
                )
                return dict.fromkeys(partitions, error)
            return service.coordinator.verify_partitions(tid, producer_id, epoch, set(partitions))
        try:
            return await self._remote(info.leader, tid, producer_id, epoch, partitions, add)
        except (ConnectionError, OSError, TimeoutError) as e:
            log.info("transaction verification at broker %d failed: %r", info.leader, e)
            await self.peers.drop(info.leader)
            return dict.fromkeys(partitions, int(ErrorCode.NETWORK_EXCEPTION))

    async def _remote(
        self,
        leader: int,
        tid: str,
        producer_id: int,
        epoch: int,
        partitions: list[TopicPartition],
        add: bool,
    ) -> dict[TopicPartition, int]:
        conn, version = await self.peers.get(leader)
        if version is None or (add and version < ADD_MIN_VERSION):
            return dict.fromkeys(partitions, int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        topics: dict[str, list[int]] = {}
        for topic, p in partitions:
            topics.setdefault(topic, []).append(p)
        body = {
            "Transactions": [
                {
                    "TransactionalId": tid,
                    "ProducerId": producer_id,
                    "ProducerEpoch": epoch,
                    "VerifyOnly": not add,
                    "Topics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()],
                }
            ]
        }
        resp = await conn.request(
            ApiKey.ADD_PARTITIONS_TO_TXN, version, body, timeout=VERIFY_TIMEOUT_S
        )
        top = resp.body.get("ErrorCode", 0)
        if top:
            code = (
                ErrorCode.INVALID_TXN_STATE
                if top == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
                else top
            )
            return dict.fromkeys(partitions, int(code))
        out = dict.fromkeys(partitions, int(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        for txn in resp.body.get("ResultsByTransaction") or []:
            if txn["TransactionalId"] != tid:
                continue
            for t in txn["TopicResults"]:
                for p in t["ResultsByPartition"]:
                    key = (t["Name"], p["PartitionIndex"])
                    if key in out:
                        out[key] = p["PartitionErrorCode"]
        return out
