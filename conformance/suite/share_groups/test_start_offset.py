"""KIP-932's share-partition start offset as DescribeShareGroupOffsets reports it while a member
acknowledges: never ahead of the records still to be done, never back, and at most one state
write behind (Apache Kafka 4.4.0 reports the start offset its share coordinator persisted with
the write before the latest one: 0, 2, 3, 4 where the start offset was 2, 3, 4, 4); and v1's
Lag, the records from the start offset to the high watermark not yet done (R26)."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey
from conformance.suite.consumer_groups.shared import newest, topic_ids
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
    partition_errors,
    served,
)

REQ, LAG = "SHARE-GROUPS.R25", "SHARE-GROUPS.R26"
#: how long the reported start offset may take to reach its lower bound after an answer
FOLLOW = 5.0
#: (what is done, acknowledgements, the start offset before, the start offset after, the lag
#: after): records 0-5 in two batches, all acquired by one member
STEPS = (
    ("accept 0-1", [(0, 1, [ACCEPT])], 0, 2, 4),
    ("accept 2", [(2, 2, [ACCEPT])], 2, 3, 3),
    ("reject 3, release 4", [(3, 3, [REJECT]), (4, 4, [RELEASE])], 3, 4, 2),
)


def reported(g: ShareGroup, topic: str, version: int) -> dict:
    """DescribeShareGroupOffsets' answer for the topic's partition 0 (no error)."""
    body = {"Groups": [{"GroupId": g.name, "Topics": [{"TopicName": topic, "Partitions": [0]}]}]}
    got = verify.expect_response(g.admin, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, version, body)
    (answer,) = got.body["Groups"]
    parts = [p for t in answer["Topics"] for p in t["Partitions"]]
    verify.check(
        answer["ErrorCode"] == 0 and len(parts) == 1 and parts[0]["ErrorCode"] == 0,
        f"DescribeShareGroupOffsets v{version} of {g.name} {topic}-0: expected no error, got "
        f"{answer}",
        REQ,
    )
    return parts[0]


@conformance("share-groups/admin/start-offset", REQ, LAG, api=ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
def test_start_offset_follows_acknowledgements(harness: Harness) -> None:
    version = newest(harness, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
    served(harness)
    topic = obtain(harness, "sgstart", 1, exact=True).name
    tid = topic_ids(harness, [topic])[topic]
    written = [r.offset for r in produce(harness, topic, [b"a0", b"a1", b"a2"])]
    written += [r.offset for r in produce(harness, topic, [b"b0", b"b1", b"b2"])]
    g = ShareGroup(harness, [topic])
    g.configured({"share.auto.offset.reset": "earliest"}, REQ)
    m = g.new_member()
    g.join(m, {(tid, 0)}, REQ)
    s = ShareSession(g, m, topic, tid)
    got: dict[int, int] = {}
    deadline = time.monotonic() + 10
    while not set(written) <= set(got) and time.monotonic() < deadline:
        got.update(counts(s.fetch(wait_ms=300)))
    verify.check(
        written == list(range(6)) and set(got) >= set(written),
        f"one member acquired {sorted(got)} of the records produced at {written} in 10 s",
        REQ,
    )
    seen: list[int] = [int(reported(g, topic, version)["StartOffset"])]
    lags = harness.can_check(ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, LAG, within="1+")

    def judge(what: str, before: int, after: int, lag: int) -> None:
        """Read until the report reaches ``before`` and, with v1, the Lag ``lag`` (bounded):
        each read's start offset at most ``after`` and none lower than the last."""
        until = time.monotonic() + FOLLOW
        behind: list[int] = []
        while True:
            answer = reported(g, topic, version)
            now = int(answer["StartOffset"])
            behind.append(int(answer.get("Lag", -1)))
            verify.check(
                seen[-1] <= now <= after,
                f"DescribeShareGroupOffsets v{version} StartOffset of {topic}-0 after {what}: "
                f"expected between the last reported {seen[-1]} and the start offset {after}, "
                f"got {now} (reported so far: {seen})",
                REQ,
            )
            seen.append(now)
            if (now >= before and (not lags or behind[-1] == lag)) or time.monotonic() > until:
                break
            time.sleep(0.3)
        verify.check(
            now >= before,
            f"DescribeShareGroupOffsets v{version} StartOffset of {topic}-0 {FOLLOW:.0f} s after "
            f"{what} was answered: expected at least {before} (the start offset before it), got "
            f"{now} (reported so far: {seen})",
            REQ,
        )
        if lags:
            verify.check(
                behind[-1] == lag,
                f"DescribeShareGroupOffsets v{version} Lag of {topic}-0 {FOLLOW:.0f} s after "
                f"{what} was answered: expected {lag} (of records 0-5, those neither "
                f"acknowledged nor archived), got {behind[-1]} (read: {behind})",
                LAG,
            )

    for what, acks, before, after, lag in STEPS:
        answer = s.acknowledge(acks)
        verify.check(
            answer.get("ErrorCode", 0) == 0 and set(partition_errors(answer)) <= {(0, 0)},
            f"ShareAcknowledge of {acks} ({what}) on {topic}-0: expected no error, got {answer}",
            REQ,
        )
        judge(what, before, after, lag)
    s.close()
    g.leave(m)
    judge("the member's session closed and it left", 4, 4, 2)
