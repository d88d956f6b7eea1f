"""The client's committed offsets by topic id (OffsetFetch v10, issue 37) when its metadata is
stale: the topic was deleted and created again under its name, so the id the consumer still
holds is answered UNKNOWN_TOPIC_ID. The client asks the metadata again and reads the new topic's
offsets; it never takes that answer for "nothing committed" (a reset to offset 0) nor sends the
stale id again until its timeout. On the reference only: tansu advertises OffsetFetch 0-9."""

from __future__ import annotations

import asyncio
import time
import uuid

from conformance.client import errors
from conformance.client.create_topics import create_topics
from conformance.client.metadata import ClusterMetadata
from conformance.client.record_types import TopicPartition
from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from conformance.suite.kip42.env import ClientEnv
from conformance.targets.base import Target

#: how long the re-creation may take (the name stays taken a moment after DeleteTopics)
RECREATE_S = 15.0


async def recreate(env: ClientEnv, name: str) -> None:
    """DeleteTopics of ``name``, then CreateTopics of it again (1 partition) once the name is
    free, then until the metadata gives the new id."""
    cluster = ClusterMetadata(env.bootstrap, codec=env.codec)
    await cluster.start()
    try:
        await cluster.refresh([name])
        old = cluster.topic_id(name)

        def body(version: int) -> dict:
            return {
                "TopicNames": [name],
                "Topics": [{"Name": name, "TopicId": ZERO_UUID}],
                "TimeoutMs": 10000,
            }

        node = cluster.controller_id
        node = node if node in cluster.brokers else cluster.any_node()[0]
        _, resp = await cluster.request(node, ApiKey.DELETE_TOPICS, body)
        assert [r["ErrorCode"] for r in resp["Responses"]] == [ErrorCode.NONE], resp
        deadline = time.monotonic() + RECREATE_S
        while True:
            try:
                await create_topics(cluster, {name: 1})
                break
            except errors.KafkaError as e:
                if e.code != ErrorCode.TOPIC_ALREADY_EXISTS or time.monotonic() > deadline:
                    raise
            await asyncio.sleep(0.2)
        while cluster.topic_id(name) in (old, ZERO_UUID) and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
            await cluster.refresh([name])
        assert cluster.topic_id(name) not in (old, ZERO_UUID)
    finally:
        await cluster.close()


def test_committed_offsets_after_the_topic_is_created_again(reference: Target, codec: Codec):
    env = ClientEnv(reference.bootstrap, codec)

    async def run() -> None:
        name = await env.new_topic(1)
        tp = TopicPartition(name, 0)
        group = f"kc-test-{uuid.uuid4().hex[:8]}"
        async with env.consumer(group_id=group) as stale:
            stale.assign([tp])
            await stale.commit_sync({tp: 5})
            assert (await stale.committed([tp]))[tp].offset == 5
            await recreate(env, name)
            async with env.consumer(group_id=group) as fresh:  # knows the new id
                fresh.assign([tp])
                await fresh.commit_sync({tp: 7})
            started = time.monotonic()
            got = await stale.committed([tp], timeout=10)
            took = time.monotonic() - started
        assert got[tp] is not None and got[tp].offset == 7, got
        assert took < 5, f"{took:.1f} s: the stale id was sent again until the timeout"

    asyncio.run(run())
