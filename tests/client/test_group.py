"""Consumer groups: the ConsumerProtocol v0 layout and the range assignor against
kafka-python's, then members of one group on tansu and the reference cluster sharing a topic's
records exactly once (the audit interceptor), with commits reaching ``on_commit``."""

from __future__ import annotations

import asyncio
import uuid
from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st
from kafka.coordinator.assignors.abstract import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.coordinator.assignors.range import RangePartitionAssignor

from conformance.client.audit import Audit
from conformance.client.group import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
    range_assign,
)
from conformance.client.interceptors import ConsumerInterceptor
from conformance.client.record_types import TopicPartition
from conformance.suite.kip42 import env as client_env

topics = st.lists(st.text("abcxyz-_.", min_size=1, max_size=8), unique=True, max_size=4)
assignments = st.dictionaries(
    st.text("abc", min_size=1, max_size=4), st.sets(st.integers(0, 50), max_size=5), max_size=4
)


@given(topics)
def test_subscription_layout_is_kafka_pythons(ts) -> None:
    ours = encode_subscription(ts)
    assert ConsumerProtocolSubscription.decode(ours).topics == sorted(ts)
    assert decode_subscription(ConsumerProtocolSubscription(0, ts, b"").encode()) == ts


@given(assignments)
def test_assignment_layout_is_kafka_pythons(a) -> None:
    want = [TopicPartition(t, p) for t in sorted(a) for p in sorted(a[t])]
    assert decode_assignment(encode_assignment(a)) == want
    theirs = ConsumerProtocolAssignment(0, [(t, sorted(ps)) for t, ps in sorted(a.items())], b"")
    assert decode_assignment(theirs.encode()) == want
    decoded = ConsumerProtocolAssignment.decode(encode_assignment(a))
    assert [TopicPartition(*tp) for tp in decoded.partitions()] == want


@given(
    st.dictionaries(st.text("mn0123", min_size=1, max_size=5), topics, min_size=1, max_size=5),
    st.dictionaries(st.text("abcxyz-_.", min_size=1, max_size=8), st.integers(0, 12), max_size=4),
)
def test_range_assignor_agrees_with_kafka_python(subs, counts) -> None:
    subs = {m: [t for t in ts if t in counts] for m, ts in subs.items()}
    cluster = SimpleNamespace(partitions_for_topic=lambda t: set(range(counts[t])))
    members = [
        SimpleNamespace(member_id=m, group_instance_id=None, metadata=SimpleNamespace(topics=ts))
        for m, ts in subs.items()
    ]
    theirs = RangePartitionAssignor.assign(cluster, members)
    ours = range_assign(subs, counts)
    for m in subs:
        expected = {t: list(ps) for t, ps in theirs[m].assigned_partitions if ps}
        assert ours[m] == expected


def test_group_members_share_a_topic_exactly_once(env, topic) -> None:
    """Two members join; between them every record is consumed once, and their final
    assignments split the topic's partitions."""
    count = 1500

    async def run() -> tuple[Audit, list[list[TopicPartition]], list[list[dict]]]:
        audit = Audit()
        async with env.producer(
            interceptors=[audit.producer_interceptor()], value_serializer=None
        ) as p:
            futures = [
                await p.send(topic, f"k{i}".encode(), bytes([i % 256])) for i in range(count)
            ]
            await asyncio.gather(*futures)
        group = f"kc-group-{uuid.uuid4().hex[:8]}"
        commits: list[list[dict]] = [[], []]

        class Commits(ConsumerInterceptor):
            def __init__(self, k: int) -> None:
                self.k = k

            def on_commit(self, offsets) -> None:
                commits[self.k].append(dict(offsets))

        members = [
            env.consumer(
                group_id=group,
                value_deserializer=None,
                interceptors=[audit.consumer_interceptor(), Commits(k)],
                session_timeout_ms=6000,
                heartbeat_interval_ms=200,
                rebalance_timeout_ms=10000,
            )
            for k in range(2)
        ]

        async def member(k: int, delay: float) -> list[TopicPartition]:
            c = members[k]
            await asyncio.sleep(delay)
            await c.start()
            c.subscribe([topic])
            # until every record is consumed and the partitions are split between both members
            # (under load the first may consume everything before the second has joined)
            while (
                sum(len(v) for v in audit.consumed.values()) < count
                or len(members[1 - k].assignment()) + len(c.assignment()) != client_env.PARTITIONS
                or not (c.assignment() and members[1 - k].assignment())
            ):
                await c.poll(200)
                if c.assignment():
                    await c.commit_sync()
            return c.assignment()

        try:
            finals = await asyncio.wait_for(
                asyncio.gather(member(0, 0), member(1, 0.5)), timeout=90
            )
        finally:
            for c in members:
                await c.close()
        return audit, finals, commits

    audit, finals, commits = asyncio.run(run())
    diff = audit.verify([topic])
    assert diff.ok, diff
    assert len(audit.acknowledged) == count
    assert sorted(finals[0] + finals[1]) == [
        TopicPartition(topic, p) for p in range(client_env.PARTITIONS)
    ]
    assert all(finals) and all(commits)
