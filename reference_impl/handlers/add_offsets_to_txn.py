"""AddOffsetsToTxn (25): a consumer group's offsets become part of a transaction.

Behaviour / version notes (Kafka's KafkaApis.handleAddOffsetsToTxnRequest): WRITE on the
TRANSACTIONAL_ID (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then READ on the GROUP
(GROUP_AUTHORIZATION_FAILED); the group's ``__consumer_offsets`` partition (the one its
coordinator leads, ``groups/placement.py``) is added to the transaction exactly as
AddPartitionsToTxn adds a partition, with the same coordinator errors (PRODUCER_FENCED is
INVALID_PRODUCER_EPOCH for v0-v1). EndTxn then writes a marker on that partition too, which is
what makes the group coordinator's pending transactional offsets visible or drops them.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.internal_topics import OFFSETS_TOPIC
from reference_impl.handlers.group_common import groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for


def api(node: BrokerView) -> Api:
    service = service_for(node)
    group_service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        tid, group = body["TransactionalId"], body["GroupId"]
        if not node.authorize(ctx.session, "WRITE", ("TRANSACTIONAL_ID", tid)):
            error = int(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
        elif not node.authorize(ctx.session, "READ", ("GROUP", group)):
            error = int(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        else:
            partition = (OFFSETS_TOPIC, group_service.coordinator.partition_for(group))
            error = await service.coordinator.add_partitions(
                tid, body["ProducerId"], body["ProducerEpoch"], {partition}
            )
            if error == ErrorCode.PRODUCER_FENCED and ctx.version < 2:
                error = int(ErrorCode.INVALID_PRODUCER_EPOCH)
        return {"ThrottleTimeMs": 0, "ErrorCode": error}

    return Api(ApiKey.ADD_OFFSETS_TO_TXN, handle)
