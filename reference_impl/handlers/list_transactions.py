"""ListTransactions (66, KIP-664): the transactions this broker coordinates.

Behaviour / version notes (Kafka's KafkaApis.handleListTransactionsRequest): every transactional
id of the ``__transaction_state`` partitions this broker leads, filtered by state names (unknown
names come back in UnknownStateFilters and match nothing), producer ids and (v1+, KIP-994)
DurationFilter (only transactions running longer than that many ms; -1 none), leaving out ids the
caller may not DESCRIBE; COORDINATOR_LOAD_IN_PROGRESS while a partition is loading. v2 (KIP-1152):
TransactionalIdPattern, a regular expression the whole transactional id must match (null or ""
matches all; one that does not compile is INVALID_REGULAR_EXPRESSION, listing nothing). Python's
``re`` stands in for java.util.regex: the common syntax is the same.
"""

from __future__ import annotations

import re

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for

MAX_VERSION = 2


def api(node: BrokerView) -> Api:
    service = service_for(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        duration = body["DurationFilter"] if ctx.version >= 1 else -1
        pattern = body["TransactionalIdPattern"] if ctx.version >= 2 else None
        try:
            regex = re.compile(pattern) if pattern else None
        except re.error:
            return answer(int(ErrorCode.INVALID_REGULAR_EXPRESSION), [], [])
        error, unknown, found = service.coordinator.list(
            body["StateFilters"], body["ProducerIdFilters"], duration
        )
        if regex is not None:
            found = [f for f in found if regex.fullmatch(f[0])]
        states = [
            {"TransactionalId": tid, "ProducerId": pid, "TransactionState": state}
            for tid, pid, state in found
            if node.authorize(ctx.session, "DESCRIBE", ("TRANSACTIONAL_ID", tid))
        ]
        return answer(error, unknown, states)

    return Api(ApiKey.LIST_TRANSACTIONS, handle, max_version=MAX_VERSION)


def answer(error: int, unknown: list[str], states: list[dict]) -> dict:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": error,
        "UnknownStateFilters": unknown,
        "TransactionStates": states,
    }
