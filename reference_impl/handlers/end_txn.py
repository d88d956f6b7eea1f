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
* v5 (KIP-890 part 2, transaction version 2: Kafka 4.x reads the version off the request):
  every EndTxn bumps the epoch (the markers carry the new one, so a late write at the old epoch is
  refused) and the answer carries the producer id and epoch the client goes on with (a new id at
  epoch 0 once the epoch is exhausted); a retry is the epoch just below the current one (NONE with
  the current ids once complete, CONCURRENT_TRANSACTIONS while the markers are written); an abort
  with nothing ongoing (Empty, Complete*) is an "empty abort" that bumps the epoch too; a pending
  transition is CONCURRENT_TRANSACTIONS before the epoch is checked; an error answers -1/-1.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for

MAX_VERSION = 5
#: the first version of a transaction-version-2 client
TV2_VERSION = 5


def api(node: BrokerView) -> Api:
    service = service_for(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        tid = body["TransactionalId"]
        if not node.authorize(ctx.session, "WRITE", ("TRANSACTIONAL_ID", tid)):
            error = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            pid = epoch = -1
        else:
            error, pid, epoch = await service.coordinator.end_transaction(
                tid,
                body["ProducerId"],
                body["ProducerEpoch"],
                body["Committed"],
                tv2=ctx.version >= TV2_VERSION,
            )
            if error == ErrorCode.PRODUCER_FENCED and ctx.version < 2:
                error = int(ErrorCode.INVALID_PRODUCER_EPOCH)
        return {"ThrottleTimeMs": 0, "ErrorCode": error, "ProducerId": pid, "ProducerEpoch": epoch}

    return Api(ApiKey.END_TXN, handle, max_version=MAX_VERSION)
