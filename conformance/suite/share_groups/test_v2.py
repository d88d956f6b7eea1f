"""ShareFetch and ShareAcknowledge version 2: RENEW acknowledgements that keep records acquired
(KIP-1222) and ShareFetch's record_limit acquire mode (KIP-1206). UNSUPPORTED where a target
does not advertise version 2 of both."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.consumer_groups.shared import newest
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.records_io import produce
from conformance.suite.share_groups.shared import (
    ACCEPT,
    ShareSession,
    acquired,
    done,
    members,
    offsets,
    partition_errors,
)

#: KIP-1222's acknowledge type, and the acquire modes of KIP-1206
RENEW = 4
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1
#: the group's acquisition lock (the lowest Kafka 4.4.0 allows): the answer must name it
LOCK_MS = 15000
#: a ShareFetch that only renews: Kafka 4.4.0 wants every limit 0 with IsRenewAck
RENEW_ONLY = {"IsRenewAck": True, "MaxBytes": 0, "MinBytes": 0}


def v2(harness: Harness) -> None:
    newest(harness, ApiKey.SHARE_FETCH, "2+")
    newest(harness, ApiKey.SHARE_ACKNOWLEDGE, "2+")


@conformance(
    "share-groups/acknowledge/renew",
    "SHARE-GROUPS.R23",
    api=ApiKey.SHARE_ACKNOWLEDGE,
)
def test_renew_keeps_records_acquired(harness: Harness) -> None:
    req = "SHARE-GROUPS.R23"
    v2(harness)
    lock = {"share.record.lock.duration.ms": str(LOCK_MS)}
    g, ms, (sa, sb), topic = members(harness, 2, req, lock)
    produced = [produce(harness, topic, [b"n%d" % i])[0].offset for i in range(3)]
    held = sa.acquire(len(produced))
    verify.check(  # how many it acquires is R9/R10's: here that it holds them
        set(produced) <= set(held), f"member A acquired {sorted(held)} of {produced}", req
    )
    p0, p1, _p2 = produced
    unflagged = sa.fetch([(p0, p0, [RENEW])], max_records=1, wait_ms=0)
    verify.check(
        partition_errors(unflagged)[:1] == [(ErrorCode.NONE, ErrorCode.INVALID_REQUEST)],
        f"ShareFetch v{sa.fetch_v} with IsRenewAck false acknowledging offset {p0} with "
        f"RENEW (4): (ErrorCode, AcknowledgeErrorCode) {partition_errors(unflagged)}, expected "
        f"[(0, {ErrorCode.INVALID_REQUEST})]",
        req,
    )
    limited = sa.fetch([(p0, p0, [RENEW])], max_records=1, wait_ms=0, **RENEW_ONLY)
    verify.check(
        limited["ErrorCode"] == ErrorCode.INVALID_REQUEST,
        f"ShareFetch v{sa.fetch_v} with IsRenewAck true and MaxRecords 1: error "
        f"{limited['ErrorCode']}, expected INVALID_REQUEST ({ErrorCode.INVALID_REQUEST})",
        req,
    )
    renewed = sa.fetch([(p0, p0, [RENEW])], max_records=0, wait_ms=0, **RENEW_ONLY)
    verify.check(
        renewed["ErrorCode"] == ErrorCode.NONE
        and all(e == (0, 0) for e in partition_errors(renewed))
        and not acquired(renewed),
        f"ShareFetch v{sa.fetch_v} renewing offset {p0} (IsRenewAck, limits 0): error "
        f"{renewed['ErrorCode']}, partitions {partition_errors(renewed)}, acquired "
        f"{acquired(renewed)}; expected NONE, no error and nothing acquired",
        req,
    )
    by_ack = sa.acknowledge([(p1, p1, [RENEW])], IsRenewAck=True)
    verify.check(
        by_ack["ErrorCode"] == ErrorCode.NONE
        and partition_errors(by_ack) == [(0, 0)]
        and by_ack.get("AcquisitionLockTimeoutMs") == LOCK_MS,
        f"ShareAcknowledge v{sa.ack_v} renewing offset {p1}: error {by_ack['ErrorCode']}, "
        f"partitions {partition_errors(by_ack)}, AcquisitionLockTimeoutMs "
        f"{by_ack.get('AcquisitionLockTimeoutMs')}; expected NONE, [(0, 0)] and the group's "
        f"share.record.lock.duration.ms {LOCK_MS}",
        req,
    )
    stolen = offsets(sb.fetch(wait_ms=300))
    verify.check(
        not set(stolen) & set(produced),
        f"member B was handed {sorted(set(stolen) & set(produced))}, which member A holds "
        "(renewed or not)",
        req,
    )
    foreign = sb.acknowledge([(p0, p0, [RENEW])], IsRenewAck=True)
    verify.check(
        partition_errors(foreign) == [(ErrorCode.INVALID_RECORD_STATE, 0)],
        f"ShareAcknowledge v{sb.ack_v} of member B renewing offset {p0}, which member A "
        f"holds: partitions {partition_errors(foreign)}, expected "
        f"[({ErrorCode.INVALID_RECORD_STATE}, 0)] (INVALID_RECORD_STATE)",
        req,
    )
    accepted = sa.acknowledge([(produced[0], produced[-1], [ACCEPT])])
    verify.check(
        partition_errors(accepted) == [(0, 0)],
        f"member A's ACCEPT of {produced} after renewing two of them: partitions "
        f"{partition_errors(accepted)}, expected [(0, 0)] (still acquired by A)",
        req,
    )
    done(g, ms, [sa, sb])


@conformance(
    "share-groups/fetch/record-limit",
    "SHARE-GROUPS.R24",
    api=ApiKey.SHARE_FETCH,
)
def test_record_limit_acquires_at_most_max_records(harness: Harness) -> None:
    req = "SHARE-GROUPS.R24"
    v2(harness)
    g, ms, (s,), topic = members(harness, 1, req)
    batch = [a.offset for a in produce(harness, topic, [b"b%d" % i for i in range(6)])]
    first = _fetch_limited(s, 2)
    second = _fetch_limited(s, 2)
    verify.check(
        first == batch[:2] and second == batch[2:4],
        f"two ShareFetch v{s.fetch_v} with ShareAcquireMode record_limit (1) and MaxRecords 2 "
        f"of one batch holding {batch} acquired {first}, then {second}; expected "
        f"{batch[:2]}, then {batch[2:4]}",
        req,
    )
    done(g, ms, [s])


def _fetch_limited(s: ShareSession, n: int) -> list[int]:
    got: list[int] = []
    for _ in range(10):  # the records may take a moment to be readable (bounded)
        got = offsets(s.fetch(max_records=n, wait_ms=500, ShareAcquireMode=RECORD_LIMIT))
        if got:
            break
    return got
