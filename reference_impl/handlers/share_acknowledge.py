"""ShareAcknowledge (79): a share-group member acknowledges records it holds, outside a fetch.

Versions 1-2, as Kafka 4.4.0 (v2, KIP-1222: RENEW acknowledgements, type 4, allowed where
IsRenewAck is true, and the answer's AcquisitionLockTimeoutMs, the group's
share.record.lock.duration.ms as ShareFetch's). A null or empty GroupId
or MemberId is INVALID_REQUEST; then READ on the GROUP, else GROUP_AUTHORIZATION_FAILED. The
share session must exist and the epoch be its next one (SHARE_SESSION_NOT_FOUND,
INVALID_SHARE_SESSION_EPOCH; epoch 0 is refused as Kafka does, since only ShareFetch opens a
session); -1 closes it after the acknowledgements. Each partition's ErrorCode is its batches'
(INVALID_RECORD_STATE for records the member does not hold; INVALID_REQUEST for batches
Kafka's KafkaApis finds malformed, ``share_common.batches_invalid``).
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.handlers import share_common as sc
from reference_impl.handlers.group_common import group_allowed
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MIN_VERSION = 1
MAX_VERSION = 2


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        group, member, epoch = body["GroupId"], body["MemberId"], body["ShareSessionEpoch"]
        if not group or not member:  # Kafka 4.4.0: before the session and the ACLs
            return _top(ErrorCode.INVALID_REQUEST, [])
        if not group_allowed(node, ctx, "READ", group):
            return _top(ErrorCode.GROUP_AUTHORIZATION_FAILED, [])
        shared = sc.sessions(node)
        error, session = shared.session(group, member, epoch, [], [], acknowledge=True)
        if error or session is None:
            return _top(error, [])
        responses = []
        renew_ack = ctx.version >= 2 and body.get("IsRenewAck", False)
        renew = sc.renew_enabled(node, group)
        for t in body["Topics"]:
            parts = []
            for p in t["Partitions"]:
                batches = p["AcknowledgementBatches"]
                try:
                    if sc.batches_invalid(batches, ctx.version, renew_ack):
                        raise KafkaError(ErrorCode.INVALID_REQUEST, None)
                    _name, sp = sc.share_partition(node, group, t["TopicId"], p["PartitionIndex"])
                    code = sc.acknowledge(sp, member, batches, renew)
                except KafkaError as e:
                    code = int(e.code)
                parts.append(
                    {
                        "PartitionIndex": p["PartitionIndex"],
                        "ErrorCode": code,
                        "ErrorMessage": None,
                        "CurrentLeader": dict(sc.NO_LEADER_CHANGE),
                    }
                )
            responses.append({"TopicId": t["TopicId"], "Partitions": parts})
        if epoch == -1:
            shared.close(group, member)
        if responses or epoch == -1:
            shared.save()
        return _top(ErrorCode.NONE, responses, sc.lock_duration_ms(node, group))

    return Api(
        ApiKey.SHARE_ACKNOWLEDGE,
        handle,
        min_version=MIN_VERSION,
        max_version=MAX_VERSION,
        also_on=("zkBroker",),
    )


def _top(error: int, responses: list[dict], lock_ms: int = 0) -> dict:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": int(error),
        "ErrorMessage": None,
        "AcquisitionLockTimeoutMs": lock_ms,
        "Responses": responses,
        "NodeEndpoints": [],
    }
