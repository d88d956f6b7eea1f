"""KIP-932 ShareFetch and ShareAcknowledge on the wire: share sessions and their epochs, records
acquired by one member at a time, MaxRecords, ACCEPT / RELEASE / REJECT, INVALID_RECORD_STATE,
the delivery-count limit and share.auto.offset.reset."""

from __future__ import annotations

import time
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.consumer_groups.shared import topic_ids
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import obtain
from conformance.suite.kit.records_io import produce
from conformance.suite.share_groups.shared import (
    ACCEPT,
    REJECT,
    RELEASE,
    ShareGroup,
    ShareSession,
    counts,
    done,
    members,
    offsets,
    partition_errors,
    served,
)


@conformance(
    "share-groups/fetch/session-epochs",
    "SHARE-GROUPS.R8",
    api=ApiKey.SHARE_FETCH,
)
def test_session_epochs(harness: Harness) -> None:
    req = "SHARE-GROUPS.R8"
    g, ms, (s,), _ = members(harness, 1, req)
    nxt = s.fetch(wait_ms=0)
    verify.soft(
        harness,
        nxt["ErrorCode"] == ErrorCode.NONE,
        f"ShareFetch at the session's next epoch (1): error {nxt['ErrorCode']}",
        req,
    )
    wrong = s.fetch(wait_ms=0, ShareSessionEpoch=s.epoch + 3)
    verify.soft(
        harness,
        wrong["ErrorCode"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH,
        f"ShareFetch at epoch {s.epoch + 3} (the session's next: {s.epoch}): error "
        f"{wrong['ErrorCode']}",
        req,
    )
    ack = s.acknowledge([], ShareSessionEpoch=s.epoch + 3)
    verify.soft(
        harness,
        ack["ErrorCode"] == ErrorCode.INVALID_SHARE_SESSION_EPOCH,
        f"ShareAcknowledge at epoch {s.epoch + 3} (the session's next: {s.epoch}): error "
        f"{ack['ErrorCode']}",
        req,
    )
    other = g.new_member()
    g.heartbeat(other)
    stray = ShareSession(g, other, s.g.topics[0], s.topic_id)
    none = stray.fetch(wait_ms=0, ShareSessionEpoch=1)
    verify.soft(
        harness,
        none["ErrorCode"] == ErrorCode.SHARE_SESSION_NOT_FOUND,
        f"ShareFetch at epoch 1 by a member that opened no session: error {none['ErrorCode']}",
        req,
    )
    done(g, [*ms, other], [s])


@conformance(
    "share-groups/fetch/acquisition",
    "SHARE-GROUPS.R9",
    "SHARE-GROUPS.R10",
    api=ApiKey.SHARE_FETCH,
)
def test_acquisition_is_exclusive(harness: Harness) -> None:
    g, ms, (sa, sb), topic = members(harness, 2, "SHARE-GROUPS.R9")
    # one record a batch: Kafka acquires whole batches, MaxRecords bounds how many it starts
    produced = [produce(harness, topic, [b"r%d" % i])[0].offset for i in range(6)]
    first: list[int] = []
    deadline = time.monotonic() + 10
    while not first and time.monotonic() < deadline:
        first = offsets(sa.fetch(max_records=2, wait_ms=500))
    verify.soft(
        harness,
        0 < len(first) <= 2,
        f"ShareFetch with MaxRecords 2 acquired {len(first)} records: {first}",
        "SHARE-GROUPS.R10",
    )
    held = first + sa.acquire(len(produced) - len(first))
    verify.check(
        sorted(held) == produced,
        f"member A acquired {sorted(held)} of the records produced at {produced}",
        "SHARE-GROUPS.R9",
    )
    other = offsets(sb.fetch(wait_ms=300))
    verify.soft(
        harness,
        not set(other) & set(held),
        f"member B was handed {sorted(set(other) & set(held))}, which member A holds",
        "SHARE-GROUPS.R9",
    )
    sa.acknowledge([(produced[0], produced[-1], [RELEASE])])
    got: dict[int, int] = {}
    deadline = time.monotonic() + 10
    while set(got) < set(produced) and time.monotonic() < deadline:
        got |= counts(sb.fetch(wait_ms=500))
    verify.soft(
        harness,
        set(got) >= set(produced) and all(got[o] == 2 for o in produced),
        f"after member A released {produced}, member B acquired {got} (offset: delivery "
        "count); expected each with delivery count 2",
        "SHARE-GROUPS.R9",
    )
    done(g, ms, [sa, sb])


def redelivered(s: ShareSession, wait_ms: int = 300, rounds: int = 2) -> dict[int, int]:
    seen: dict[int, int] = {}
    for _ in range(rounds):
        seen |= counts(s.fetch(wait_ms=wait_ms))
    return seen


@conformance(
    "share-groups/acknowledge/accept-release-reject",
    "SHARE-GROUPS.R11",
    "SHARE-GROUPS.R12",
    api=ApiKey.SHARE_ACKNOWLEDGE,
)
def test_accept_release_reject(harness: Harness) -> None:
    req = "SHARE-GROUPS.R11"
    g, ms, (s,), topic = members(harness, 1, req)
    a, b, c = (x.offset for x in produce(harness, topic, [b"a", b"b", b"c"]))
    held = s.acquire(3)
    verify.check(sorted(held) == [a, b, c], f"acquired {held} of {[a, b, c]}", req)
    answer = s.fetch([(a, c, [ACCEPT, RELEASE, REJECT])], wait_ms=500)
    verify.soft(
        harness,
        all(e == (0, 0) for e in partition_errors(answer)),
        f"ShareFetch acknowledging ACCEPT, RELEASE, REJECT: partition errors "
        f"{partition_errors(answer)}",
        req,
    )
    seen = counts(answer) | redelivered(s)
    verify.soft(
        harness,
        seen.get(b) == 2 and a not in seen and c not in seen,
        f"after ACCEPT {a}, RELEASE {b}, REJECT {c}: delivered again {seen} (offset: delivery "
        f"count); expected only {b} with delivery count 2",
        req,
    )
    acked = s.acknowledge([(b, b, [ACCEPT])])
    verify.soft(
        harness,
        acked["ErrorCode"] == ErrorCode.NONE and partition_errors(acked) == [(0, 0)],
        f"ShareAcknowledge ACCEPT of the redelivered {b}: error {acked['ErrorCode']}, "
        f"partitions {partition_errors(acked)}",
        req,
    )
    after = redelivered(s)
    verify.soft(
        harness,
        not set(after) & {a, b, c},
        f"after every record was accepted or rejected, delivered again {after}",
        req,
    )
    beyond = c + 5
    stray = s.acknowledge([(beyond, beyond, [ACCEPT])])
    verify.soft(
        harness,
        [e for e, _ in partition_errors(stray)] == [ErrorCode.INVALID_RECORD_STATE],
        f"ShareAcknowledge of offset {beyond}, never acquired: partition errors "
        f"{partition_errors(stray)}",
        "SHARE-GROUPS.R12",
    )
    done(g, ms, [s])


@conformance(
    "share-groups/acknowledge/delivery-limit",
    "SHARE-GROUPS.R13",
    api=ApiKey.SHARE_FETCH,
)
def test_delivery_limit(harness: Harness) -> None:
    req = "SHARE-GROUPS.R13"
    g, ms, (s,), topic = members(harness, 1, req, {"share.delivery.count.limit": "2"})
    (x,) = (r.offset for r in produce(harness, topic, [b"x"]))
    deliveries: list[int] = []
    answer: dict[str, Any] = {}
    deadline = time.monotonic() + 10
    acks = None
    while len(deliveries) < 3 and time.monotonic() < deadline:
        answer = s.fetch(acks, wait_ms=300)
        got = counts(answer)
        acks = None
        if x in got:
            deliveries.append(got[x])
            acks = [(x, x, [RELEASE])]
        elif len(deliveries) >= 2:
            break
    if acks:
        s.acknowledge(acks)
    deliveries += [c for o, c in redelivered(s).items() if o == x]
    verify.soft(
        harness,
        deliveries == [1, 2],
        f"share.delivery.count.limit 2, the record released at each delivery: delivered with "
        f"counts {deliveries}; expected [1, 2] and then archived",
        req,
    )
    done(g, ms, [s])


@conformance(
    "share-groups/fetch/auto-offset-reset",
    "SHARE-GROUPS.R14",
    api=ApiKey.SHARE_FETCH,
)
def test_auto_offset_reset(harness: Harness) -> None:
    req = "SHARE-GROUPS.R14"
    served(harness)
    topic = obtain(harness, "sgreset", 1, exact=True)
    tid = topic_ids(harness, [topic.name])[topic.name]
    before = [r.offset for r in produce(harness, topic.name, [b"early-1", b"early-2"])]
    seen: dict[str, list[int]] = {}
    for reset in ("latest", "earliest"):
        g = ShareGroup(harness, [topic.name])
        if reset == "earliest":
            got = g.configure({"share.auto.offset.reset": "earliest"})
            verify.answered_none(
                got, "IncrementalAlterConfigs share.auto.offset.reset earliest: error", req
            )
        m = g.new_member()
        g.join(m, {(tid, 0)}, req)
        s = ShareSession(g, m, topic.name, tid)
        held = offsets(s.fetch(wait_ms=0))  # the session's first fetch may acquire already
        deadline = time.monotonic() + (4 if reset == "earliest" else 1.5)
        while time.monotonic() < deadline and not set(before) <= set(held):
            held += offsets(s.fetch(wait_ms=300))
        seen[reset] = sorted(held)
        done(g, [m], [s])
    verify.soft(
        harness,
        not set(before) & set(seen["latest"]),
        f"share.auto.offset.reset latest (the default): records written before the group "
        f"started ({before}) were delivered: {seen['latest']}",
        req,
    )
    verify.soft(
        harness,
        set(before) <= set(seen["earliest"]),
        f"share.auto.offset.reset earliest: records written before ({before}) not all "
        f"delivered: {seen['earliest']}",
        req,
    )
