"""InitProducerId (22): a producer id, for an idempotent or a transactional producer.

Behaviour / version notes (Kafka's KafkaApis.handleInitProducerIdRequest and the transaction
coordinator's handleInitProducerId):

* no transactional id: a new id at epoch 0 on every request, also when it names its previous id
  and epoch (v3+), as Kafka does; ids come from the broker's allocator
  (``txn/producer_ids.py``), shared with the transaction coordinator;
* a transactional id is served by its coordinator (the leader of its ``__transaction_state``
  partition: elsewhere NOT_COORDINATOR, while loading COORDINATOR_LOAD_IN_PROGRESS): "" is
  INVALID_REQUEST, a timeout outside (0, ``max_timeout_ms``] INVALID_TRANSACTION_TIMEOUT; a new id
  at epoch 0, later calls bump the epoch; an ongoing transaction is fenced and aborted first
  (CONCURRENT_TRANSACTIONS until it completes), as is a transaction being prepared;
* v3+ (KIP-360): ProducerId/ProducerEpoch both -1 or both set (one of them -1 alone:
  INVALID_REQUEST, with or without a transactional id); a producer naming a stale epoch is
  PRODUCER_FENCED, which v0-v3 answer as INVALID_PRODUCER_EPOCH (they predate the code);
* v6 (KIP-939, two-phase commit; unstable in Kafka 4.4.0, so not in its ApiVersions): the
  reference runs as Kafka does with ``transaction.two.phase.commit.enable`` false (its default):
  a transactional request with Enable2Pc is INVALID_TXN_STATE, one with KeepPreparedTxn
  UNSUPPORTED_VERSION (4.4's coordinator has no prepared-transaction recovery); otherwise as v5,
  OngoingTxnProducerId/Epoch -1;
* authorisation (``security/authorize.py``): WRITE on the TRANSACTIONAL_ID, or without one
  IDEMPOTENT_WRITE on the cluster or WRITE on some topic.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for

#: v6: KIP-939's fields, with two-phase commit disabled
MAX_VERSION = 6


def api(node: BrokerView) -> Api:
    service = service_for(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        tid = body["TransactionalId"]
        expected = None
        if ctx.version >= 3:
            pid, epoch = body["ProducerId"], body["ProducerEpoch"]
            if (pid == -1) != (epoch == -1):
                return answer(int(ErrorCode.INVALID_REQUEST), -1, -1)
            expected = None if pid == -1 else (pid, epoch)
        if tid is None:
            return answer(0, service.allocator.allocate(), 0)
        if ctx.version >= 6 and tid and body["Enable2Pc"]:
            return answer(int(ErrorCode.INVALID_TXN_STATE), -1, -1)
        if ctx.version >= 6 and tid and body["KeepPreparedTxn"]:
            return answer(int(ErrorCode.UNSUPPORTED_VERSION), -1, -1)
        error, pid, epoch = await service.coordinator.init_producer_id(
            tid, body["TransactionTimeoutMs"], expected
        )
        if error == ErrorCode.PRODUCER_FENCED and ctx.version < 4:
            error = int(ErrorCode.INVALID_PRODUCER_EPOCH)
        return answer(error, pid, epoch)

    return Api(ApiKey.INIT_PRODUCER_ID, handle, max_version=MAX_VERSION)


def answer(error: int, producer_id: int, epoch: int) -> dict:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": error,
        "ProducerId": producer_id,
        "ProducerEpoch": epoch,
        "OngoingTxnProducerId": -1,
        "OngoingTxnProducerEpoch": -1,
    }
