"""KIP-848's timeouts on the wire: a member asked to revoke partitions that does not acknowledge
the revocation within the rebalance timeout it joined with, and a member that stops heartbeating
for the group's session timeout, are removed from the group, and the partitions they held move to
the members that keep heartbeating."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.consumer_groups.shared import (
    SETTLE,
    ConsumerGroup,
    applied,
    converge,
    joined,
    removed,
    set_group_configs,
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
    asked = time.monotonic()
    while a.owned_pairs() == want:
        verify.check(
            time.monotonic() < deadline,
            f"{SETTLE:.0f} s after a second member joined, the first still owns all of {want}",
            REQ,
        )
        time.sleep(0.2)
        g.heartbeat(b)
        # the timer starts when the coordinator handles the heartbeat it answers with the
        # revocation: sent at ``asked`` or later (an answer late on a loaded host is no earlier
        # start)
        asked = time.monotonic()
        g.heartbeat(a, TopicPartitions=[{"TopicId": tid, "Partitions": sorted(p for _, p in want)}])
    # the first member never acknowledges; the second keeps heartbeating
    what = f"a member with rebalance timeout {REBALANCE_MS} ms never acknowledged a revocation"
    removed(harness, g, a, b, want, (asked, REBALANCE_MS, 0.25), what, REQ)
    g.heartbeat(b, MemberEpoch=-1)


SESSION_REQ = "CONSUMER-GROUPS.R19"
#: the group's session timeout and heartbeat interval, set as group configs: within the bounds
#: of a target run with group.consumer.min.session.timeout.ms and ...heartbeat.interval.ms lowered
#: (the kafka and reference targets do), out of Kafka's default bounds (45 s and 5 s)
SESSION_MS, INTERVAL_MS = 1500, 500


@conformance(
    "consumer-groups/heartbeat/session-timeout",
    SESSION_REQ,
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_session_timeout_removes_a_silent_member(harness: Harness) -> None:
    harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    topic = obtain(harness, "cgsilent", 2, exact=True)
    tid = topic_ids(harness, [topic.name])[topic.name]
    want = {(tid, p) for p in range(topic.partitions)}
    g = ConsumerGroup(harness, [topic.name])
    a, b = g.new_member(), g.new_member()
    joined(harness, g, a, "member that falls silent")
    joined(harness, g, b, "member that keeps heartbeating")
    # the members settle under the target's default session (45 s): a round of two heartbeats
    # and a describe on a loaded host can outlast 1.5 s, which expired a member here before
    converge(harness, g, [a, b], want, "session-timeout", SESSION_REQ)
    configs = {
        "consumer.heartbeat.interval.ms": str(INTERVAL_MS),
        "consumer.session.timeout.ms": str(SESSION_MS),
    }
    got = set_group_configs(harness, g.name, configs)
    if got["ErrorCode"] == ErrorCode.INVALID_CONFIG:
        for m in (a, b):
            g.heartbeat(m, MemberEpoch=-1)
        raise MissingPrecondition(
            f"a group session timeout of {SESSION_MS} ms (the target's bounds refuse it: "
            f"{got.get('ErrorMessage')}; lower group.consumer.min.session.timeout.ms and "
            "group.consumer.min.heartbeat.interval.ms)"
        )
    verify.answered_none(got, f"IncrementalAlterConfigs GROUP {configs}: error", SESSION_REQ)
    # a falls silent from its last heartbeat's send, the first the coordinator answered with
    # the short session's configs (not from when b's heartbeat after it came back: on a loaded
    # host, long enough to make a removal on time look early); b heartbeats twice an interval
    applied(g, a, INTERVAL_MS)
    what = f"a member of a group with session timeout {SESSION_MS} ms stopped heartbeating"
    removed(harness, g, a, b, want, (a.sent, SESSION_MS, INTERVAL_MS / 2000), what, SESSION_REQ)
    g.heartbeat(b, MemberEpoch=-1)
