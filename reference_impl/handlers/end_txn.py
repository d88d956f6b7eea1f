"""EndTxn (26): commit or abort a transaction.

Behaviour / version notes (Kafka's KafkaApis.handleEndTxnRequest and the coordinator's
handleEndTransaction, transaction version 1):

* WRITE on the TRANSACTIONAL_ID (TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
* "" is INVALID_REQUEST; an unknown id or another producer id INVALID_PRODUCER_ID_MAPPING; another
  epoch PRODUCER_FENCED (v0-v1: INVALID_PRODUCER_EPOCH);
* Ongoing -> PrepareCommit / PrepareAbort, answered NONE once that record is durable in
  ``__transaction_state``; the coordinator then sends WriteTxnMarkers to every partition's leader
  and writes CompleteCommit / CompleteAbort when all are written;
* while markers are pending: the same result again is CONCURRENT_TRANSACTIONS, the other one
  INVALID_TXN_STATE; after completion the same result is NONE (a retry), the other
  INVALID_TXN_STATE; no transaction (Empty) INVALID_TXN_STATE;
* v5 (KIP-890 transaction version 2: the epoch bumped on every EndTxn, the new id and epoch in the
  answer) is not served: ApiVersions advertises 0-4, Kafka 3.9's range.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for

MAX_VERSION = 4


def api(node: BrokerView) -> Api:
    service = service_for(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        tid = body["TransactionalId"]
        if not node.authorize(ctx.session, "WRITE", ("TRANSACTIONAL_ID", tid)):
            error = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        else:
            error = await service.coordinator.end_txn(
                tid, body["ProducerId"], body["ProducerEpoch"], body["Committed"]
            )
            if error == ErrorCode.PRODUCER_FENCED and ctx.version < 2:
                error = int(ErrorCode.INVALID_PRODUCER_EPOCH)
        return {"ThrottleTimeMs": 0, "ErrorCode": error, "ProducerId": -1, "ProducerEpoch": -1}

    return Api(ApiKey.END_TXN, handle, max_version=MAX_VERSION)
