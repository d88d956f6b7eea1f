"""KIP-848's rebalance timeout on the wire: a member asked to revoke partitions that does not
acknowledge the revocation within the rebalance timeout it joined with is removed from the group,
and the partitions it held move to the members that keep heartbeating."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.consumer_groups.shared import (
    SETTLE,
    ConsumerGroup,
    converge,
    joined,
    topic_ids,
)
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import obtain

REQ = "CONSUMER-GROUPS.R18"
#: the stuck member's rebalance timeout (the client's choice, no broker setting needed)
REBALANCE_MS = 2000


@conformance(
    "consumer-groups/heartbeat/rebalance-timeout",
    REQ,
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_rebalance_timeout_removes_a_stuck_member(harness: Harness) -> None:
    topic = obtain(harness, "cgstuck", 2, exact=True)
    tid = topic_ids(harness, [topic.name])[topic.name]
    want = {(tid, p) for p in range(topic.partitions)}
    g = ConsumerGroup(harness, [topic.name])
    a = g.new_member()
    got = g.heartbeat(a, RebalanceTimeoutMs=REBALANCE_MS)
    if got["ErrorCode"] != ErrorCode.NONE:
        joined(harness, g, a, "member with a short rebalance timeout")
    converge(harness, g, [a], want, "rebalance-timeout", REQ)
    b = g.new_member()
    joined(harness, g, b, "second member")
    # heartbeat both until the first is asked to give a partition up
    deadline = time.monotonic() + SETTLE
    while a.owned_pairs() == want:
        verify.check(
            time.monotonic() < deadline,
            f"{SETTLE:.0f} s after a second member joined, the first still owns all of {want}",
            REQ,
        )
        time.sleep(0.2)
        g.heartbeat(b)
        g.heartbeat(a, TopicPartitions=[{"TopicId": tid, "Partitions": sorted(p for _, p in want)}])
    asked = time.monotonic()
    # the first member never acknowledges; the second keeps heartbeating
    deadline = asked + REBALANCE_MS / 1000 + SETTLE
    while b.owned_pairs() != want and time.monotonic() < deadline:
        time.sleep(0.25)
        g.heartbeat(b)
    took = time.monotonic() - asked
    verify.soft(
        harness,
        b.owned_pairs() == want,
        f"{took:.1f} s after a member with rebalance timeout {REBALANCE_MS} ms was asked to "
        f"revoke a partition and never acknowledged, the other member owns "
        f"{sorted(p for _, p in b.owned_pairs())}, not every partition",
        REQ,
    )
    verify.soft(
        harness,
        took >= REBALANCE_MS / 1000 * 0.9 or b.owned_pairs() != want,
        f"the other member got the unrevoked partitions {took:.1f} s after the revocation was "
        f"asked, before the {REBALANCE_MS} ms rebalance timeout",
        REQ,
    )
    listed = [x["MemberId"] for x in g.describe().get("Members") or []]
    verify.soft(
        harness,
        listed == [b.member_id],
        f"ConsumerGroupDescribe after the stuck member's rebalance timeout lists {listed}, "
        f"expected only {b.member_id}",
        REQ,
    )
    late = g.heartbeat(a)["ErrorCode"]
    verify.soft(
        harness,
        late in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH),
        f"the removed member's heartbeat at epoch {a.epoch}: error {late}; expected "
        "UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH",
        REQ,
    )
    g.heartbeat(b, MemberEpoch=-1)
