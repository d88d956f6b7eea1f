"""ShareFetch (78): a share-group member acquires records, and acknowledges those it holds.

Versions 1-2, as Kafka 4.4.0. A null or empty GroupId or MemberId is INVALID_REQUEST (as Kafka
4.4.0, the spec-derived diff); then READ on the GROUP, else GROUP_AUTHORIZATION_FAILED for the
whole request. The share session
(``groups/share_sessions.py``) decides the request's partitions and refuses a wrong epoch
(SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, with AcquisitionLockTimeoutMs 0). The
acknowledgement batches are applied first (a partition's AcknowledgeErrorCode:
INVALID_RECORD_STATE for records the member does not hold); then, unless the session closes
(epoch -1), the member acquires up to MaxRecords records across the session's partitions from
their share-partition start offsets, waiting up to MaxWaitMs while there is none. Each
partition's answer carries the batches holding what was acquired and the AcquiredRecords ranges
with their delivery counts. As Kafka: a session's first answer (epoch 0) lists every partition
of the session; later ones only those with records, acknowledgements or errors.

Version 2 (KIP-1206, KIP-1222): ShareAcquireMode 0 (batch-optimized, v1's only mode) acquires
whole log batches, passing MaxRecords to finish the last one; 1 (record_limit) at most
MaxRecords records; any other is UNKNOWN_SERVER_ERROR once the session has moved on and the
acknowledgements are taken, as Kafka 4.4.0 answers it (measured). IsRenewAck true marks a
request of RENEW acknowledgements (type 4, which keep records acquired and start their locks
again): it acquires nothing, and Kafka 4.4.0 refuses it with INVALID_REQUEST unless MaxBytes,
MinBytes, MaxRecords and MaxWaitMs are all 0. A batch Kafka's KafkaApis finds malformed
(``share_common.batches_invalid``) is that partition's AcknowledgeErrorCode INVALID_REQUEST.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.handlers import share_common as sc
from reference_impl.handlers.group_common import group_allowed
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MIN_VERSION = 1
MAX_VERSION = 2
#: ShareAcquireMode (v2): 0 batch_optimized, 1 record_limit
RECORD_LIMIT = 1
ACQUIRE_MODES = (0, RECORD_LIMIT)
POLL_SECONDS = 0.05


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        return await share_fetch(node, ctx, body)

    return Api(
        ApiKey.SHARE_FETCH,
        handle,
        min_version=MIN_VERSION,
        max_version=MAX_VERSION,
        also_on=("zkBroker",),
    )


def _top(error: int, lock_ms: int, responses: list[dict]) -> dict:
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": int(error),
        "ErrorMessage": None,
        "AcquisitionLockTimeoutMs": lock_ms,
        "Responses": responses,
        "NodeEndpoints": [],
    }


def _entry(index: int) -> dict[str, Any]:
    return {
        "PartitionIndex": index,
        "ErrorCode": 0,
        "ErrorMessage": None,
        "AcknowledgeErrorCode": 0,
        "AcknowledgeErrorMessage": None,
        "CurrentLeader": dict(sc.NO_LEADER_CHANGE),
        "Records": b"",
        "AcquiredRecords": [],
    }


async def share_fetch(node: BrokerView, ctx: RequestContext, body: dict) -> dict:
    group, member, epoch = body["GroupId"], body["MemberId"], body["ShareSessionEpoch"]
    if not group or not member:  # Kafka 4.4.0: before the session and the ACLs
        return _top(ErrorCode.INVALID_REQUEST, 0, [])
    if not group_allowed(node, ctx, "READ", group):
        return _top(ErrorCode.GROUP_AUTHORIZATION_FAILED, 0, [])
    renew_ack = ctx.version >= 2 and body.get("IsRenewAck", False)
    limits = ("MaxBytes", "MinBytes", "MaxRecords", "MaxWaitMs")
    if renew_ack and any(body[k] != 0 for k in limits):
        return _top(ErrorCode.INVALID_REQUEST, 0, [])
    adds = [(t["TopicId"], p["PartitionIndex"]) for t in body["Topics"] for p in t["Partitions"]]
    forgets = [(t["TopicId"], p) for t in body["ForgottenTopicsData"] for p in t["Partitions"]]
    acks = {
        (t["TopicId"], p["PartitionIndex"]): p["AcknowledgementBatches"]
        for t in body["Topics"]
        for p in t["Partitions"]
        if p["AcknowledgementBatches"]
    }
    shared = sc.sessions(node)
    error, session = shared.session(group, member, epoch, adds, forgets)
    if error or session is None:
        return _top(error, 0, [])
    out: dict[tuple[uuid.UUID, int], dict] = {}

    def entry(tp: tuple[uuid.UUID, int]) -> dict:
        return out.setdefault(tp, _entry(tp[1]))

    renew = sc.renew_enabled(node, group)
    for tp, batches in acks.items():
        if sc.batches_invalid(batches, ctx.version, renew_ack):
            entry(tp)["AcknowledgeErrorCode"] = int(ErrorCode.INVALID_REQUEST)
            continue
        try:
            _name, sp = sc.share_partition(node, group, *tp)
            entry(tp)["AcknowledgeErrorCode"] = sc.acknowledge(sp, member, batches, renew)
        except KafkaError as e:
            entry(tp)["AcknowledgeErrorCode"] = int(e.code)
    lock_ms = sc.lock_duration_ms(node, group)
    mode = body.get("ShareAcquireMode", 0)
    whole = mode != RECORD_LIMIT
    if mode not in ACQUIRE_MODES and not renew_ack and epoch != -1:
        # Kafka 4.4.0 (probe): UNKNOWN_SERVER_ERROR, no partitions, after the session moved on
        # and the acknowledgements were taken (its ShareAcquireMode.forId throws on the fetch)
        shared.save()
        return _top(ErrorCode.UNKNOWN_SERVER_ERROR, 0, [])
    if epoch == -1:
        shared.close(group, member)
    elif not renew_ack:
        if epoch == 0:
            for tp in session.partitions:
                entry(tp)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(body["MaxWaitMs"], 0) / 1000
        while True:
            if _acquire(node, group, member, session, body["MaxRecords"], whole, entry):
                break
            if loop.time() >= deadline:
                break
            await asyncio.sleep(min(POLL_SECONDS, max(deadline - loop.time(), 0)))
    if out:
        shared.save()
    by_topic: dict[uuid.UUID, list[dict]] = {}
    for (tid, _index), part in out.items():
        by_topic.setdefault(tid, []).append(part)
    responses = [{"TopicId": t, "Partitions": ps} for t, ps in by_topic.items()]
    return _top(ErrorCode.NONE, lock_ms, responses)


def _acquire(node, group, member, session, max_records, whole, entry) -> bool:
    """Acquire for the member across its session's partitions (``whole``: whole log batches);
    whether anything was."""
    left = max(max_records, 1)
    any_acquired = False
    for tp in session.partitions:
        if left <= 0:
            break
        try:
            name, sp = sc.share_partition(node, group, *tp)
            batches, aborted = sc.log_batches(
                node, name, tp[1], sp.start_offset, sc.read_committed(node, group)
            )
        except KafkaError as failed:
            entry(tp)["ErrorCode"] = int(failed.code)
            continue
        # transaction markers are no records: archived, so the start offset moves past them
        markers = [o for base, last, _r, os in batches if not os for o in range(base, last + 1)]
        sp.archive(aborted + markers)
        offsets = [o for _b, _l, _raw, os in batches for o in os]
        ends = [(base, last) for base, last, _raw, _os in batches] if whole else None
        ranges = sp.acquire(member, offsets, left, sc.now_ms(), ends)
        if not ranges:
            continue
        any_acquired = True
        left -= sum(last - first + 1 for first, last, _c in ranges)
        got = entry(tp)
        got["AcquiredRecords"] = [
            {"FirstOffset": f, "LastOffset": la, "DeliveryCount": c} for f, la, c in ranges
        ]
        got["Records"] = b"".join(
            raw
            for base, last, raw, _os in batches
            if any(base <= la and f <= last for f, la, _c in ranges)
        )
    return any_acquired
