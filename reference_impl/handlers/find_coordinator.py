"""FindCoordinator (10): which broker coordinates a group or a transactional id (v4+: several
keys at once).

Behaviour / version notes (Kafka's KafkaApis.getCoordinator):

* key type 0 (GROUP): DESCRIBE on the GROUP (GROUP_AUTHORIZATION_FAILED), then the leader of the
  group's ``__consumer_offsets`` partition;
* key type 1 (TRANSACTION, v1+): DESCRIBE on the TRANSACTIONAL_ID
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then the leader of ``__transaction_state`` partition
  ``abs(javaHash(id)) % state_partitions`` (``txn/service.py``);
* while the internal topic does not exist yet it is created through the controller and the answer
  is COORDINATOR_NOT_AVAILABLE (clients retry); no live leader: COORDINATOR_NOT_AVAILABLE;
* other key types (2, share groups, need KIP-932): INVALID_REQUEST.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.groups.service import Coordinator
from reference_impl.handlers.group_common import (
    group_allowed,
    groups,
)
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.txn.service import service_for as transactions

GROUP, TRANSACTION = 0, 1

#: Kafka's default messages for the errors this answers with
MESSAGES = {
    0: "NONE",
    int(ErrorCode.COORDINATOR_NOT_AVAILABLE): "The coordinator is not available.",
    int(ErrorCode.INVALID_REQUEST): "This most likely occurs because of a request being malformed "
    "by the client library or the message was sent to an incompatible broker. See the broker "
    "logs for more details.",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}


def api(node: BrokerView) -> Api:
    service = groups(node)
    txn = transactions(node)

    async def locate(ctx: RequestContext, key_type: int, key: str) -> Coordinator:
        if key_type == TRANSACTION:
            if not node.authorize(ctx.session, "DESCRIBE", ("TRANSACTIONAL_ID", key)):
                return Coordinator(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
            return await txn.find(key, ctx.listener.name)
        if key_type != GROUP:
            return Coordinator(
                int(ErrorCode.INVALID_REQUEST), message=f"unknown key type {key_type}"
            )
        if not group_allowed(node, ctx, "DESCRIBE", key):
            return Coordinator(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        return await service.find(key, ctx.listener.name)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        key_type = body["KeyType"] if v >= 1 else GROUP
        if v >= 4:
            coordinators = []
            for key in body["CoordinatorKeys"]:
                c = await locate(ctx, key_type, key)
                coordinators.append({"Key": key, **_fields(c)})
            return {"ThrottleTimeMs": 0, "Coordinators": coordinators}
        c = await locate(ctx, key_type, body["Key"])
        return {"ThrottleTimeMs": 0, **_fields(c)}

    return Api(ApiKey.FIND_COORDINATOR, handle)


def _fields(c: Coordinator) -> dict:
    if c.error:
        return {
            "NodeId": -1,
            "Host": "",
            "Port": -1,
            "ErrorCode": c.error,
            "ErrorMessage": c.message or MESSAGES.get(c.error),
        }
    return {
        "NodeId": c.node_id,
        "Host": c.host,
        "Port": c.port,
        "ErrorCode": 0,
        "ErrorMessage": MESSAGES[0],
    }
