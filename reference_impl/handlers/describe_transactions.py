"""DescribeTransactions (65, KIP-664): the coordinator's state of each transactional id.

Behaviour / version notes (Kafka's KafkaApis.handleDescribeTransactionsRequest): per id,
DESCRIBE on the TRANSACTIONAL_ID (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); "" INVALID_REQUEST; an id
this broker does not coordinate NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while loading); an
unknown one TRANSACTIONAL_ID_NOT_FOUND; otherwise its state name (Empty, Ongoing, PrepareCommit
…), timeout, start time (-1 before the first transaction), producer id and epoch, and the
transaction's partitions, leaving out topics the caller may not DESCRIBE.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for


def api(node: BrokerView) -> Api:
    service = service_for(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        states = []
        for tid in body["TransactionalIds"]:
            if not node.authorize(ctx.session, "DESCRIBE", ("TRANSACTIONAL_ID", tid)):
                state = service.coordinator.describe("")
                state.update(
                    TransactionalId=tid,
                    ErrorCode=int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
                )
            else:
                state = service.coordinator.describe(tid)
            state["Topics"] = [
                t
                for t in state["Topics"]
                if node.authorize(ctx.session, "DESCRIBE", ("TOPIC", t["Topic"]))
            ]
            states.append(state)
        return {"ThrottleTimeMs": 0, "TransactionStates": states}

    return Api(ApiKey.DESCRIBE_TRANSACTIONS, handle)
