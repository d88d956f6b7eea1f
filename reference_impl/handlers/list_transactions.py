"""ListTransactions (66, KIP-664): the transactions this broker coordinates.

Behaviour / version notes (Kafka's KafkaApis.handleListTransactionsRequest): every transactional
id of the ``__transaction_state`` partitions this broker leads, filtered by state names (unknown
names come back in UnknownStateFilters and match nothing), producer ids and (v1+, KIP-994)
DurationFilter (only transactions running longer than that many ms; -1 none), leaving out ids the
caller may not DESCRIBE; COORDINATOR_LOAD_IN_PROGRESS while a partition is loading. v2's
TransactionalIdPattern (Kafka 4.x) is not served: ApiVersions advertises 0-1.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for

MAX_VERSION = 1


def api(node: BrokerView) -> Api:
    service = service_for(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        duration = body["DurationFilter"] if ctx.version >= 1 else -1
        error, unknown, found = service.coordinator.list(
            body["StateFilters"], body["ProducerIdFilters"], duration
        )
        states = [
            {"TransactionalId": tid, "ProducerId": pid, "TransactionState": state}
            for tid, pid, state in found
            if node.authorize(ctx.session, "DESCRIBE", ("TRANSACTIONAL_ID", tid))
        ]
        return {
            "ThrottleTimeMs": 0,
            "ErrorCode": error,
            "UnknownStateFilters": unknown,
            "TransactionStates": states,
        }

    return Api(ApiKey.LIST_TRANSACTIONS, handle, max_version=MAX_VERSION)
