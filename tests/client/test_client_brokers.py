"""The suite's client against real brokers (tansu and the reference cluster, each test on both):
the KIP-42 scenarios on drawn interceptor chains, audited produce/consume of a few thousand
records (acks all / 1 / idempotent / compressed), acks=0, delivery failures reaching
``on_acknowledgement``, committed offsets resuming a consumer, and the cluster id listeners."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.client import errors
from conformance.client.audit import Audit
from conformance.client.create_topics import create_topics
from conformance.client.metadata import ClusterMetadata
from conformance.client.record_types import TopicPartition
from conformance.client.wire import Connection
from conformance.protocol import ApiKey
from conformance.protocol.records import Compression
from conformance.suite.kip42 import env as client_env
from conformance.suite.kip42 import probes
from conformance.suite.kip42 import scenarios as sc
from conformance.suite.kip42 import strategies as kip42_strategies
from conformance.suite.kip78.cluster_resource import cluster_resource
from conformance.targets.reference import ReferenceTarget
from conformance.targets.tansu import TansuTarget

#: records per audited round trip
AUDITED = 3000
#: a topic per test, made once (not per example)
per_test = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@per_test
@given(kip42_strategies.chains(probes.PRODUCER_BEHAVIOURS), kip42_strategies.items())
def test_producer_chain(env, topic, behaviours, sent) -> None:
    asyncio.run(sc.producer_chain(env, topic, behaviours, sent))


@per_test
@given(kip42_strategies.chains(probes.PRODUCER_BEHAVIOURS), st.sampled_from(sc.ERROR_KINDS))
def test_send_errors_reach_on_acknowledgement(env, topic, behaviours, kind) -> None:
    asyncio.run(sc.producer_errors(env, topic, behaviours, kind))


@pytest.mark.parametrize("behaviours", [("tag",), ("pass", "tag", "rekey")])
def test_a_serializer_failure_after_tagging_interceptors_still_raises(env, topic, behaviours):
    """Regression: a chain that modifies the value must not hide the poisoned record (a
    published run saw KIP-42.R2 flaky from exactly this)."""
    asyncio.run(sc.producer_errors(env, topic, behaviours, "serialization"))


@per_test
@given(
    kip42_strategies.chains(probes.CONSUMER_BEHAVIOURS),
    st.lists(st.lists(st.integers()), min_size=1),
)
def test_consumer_chain(env, topic, behaviours, values) -> None:
    asyncio.run(sc.consumer_chain(env, topic, behaviours, values[:8]))


@per_test
@given(
    kip42_strategies.chains(probes.CONSUMER_BEHAVIOURS),
    st.lists(st.lists(st.integers()), min_size=1),
)
def test_on_commit(env, topic, behaviours, values) -> None:
    group = f"kc-test-{uuid.uuid4().hex[:8]}"
    asyncio.run(sc.commits(env, topic, behaviours, values[:5], group))


@per_test
@given(kip42_strategies.raw_records())
def test_checksum_and_sizes_match_end_to_end(env, topic, records) -> None:
    asyncio.run(sc.checksums(env, topic, records))


async def _cluster_id(env: client_env.ClientEnv) -> str | None:
    host, port = env.bootstrap[0].host, env.bootstrap[0].port
    async with await Connection.open(host, port, codec=env.codec) as conn:
        resp = await conn.request(
            ApiKey.METADATA, 4, {"Topics": [], "AllowAutoTopicCreation": False}
        )
        return resp.body["ClusterId"]


def test_cluster_resource_listeners(env) -> None:
    async def run() -> None:
        await cluster_resource(env, await _cluster_id(env))

    asyncio.run(run())


@pytest.mark.parametrize(
    "acks, idempotent, compression",
    [
        ("all", False, Compression.NONE),
        (1, False, Compression.LZ4),
        ("all", True, Compression.ZSTD),
        ("all", False, Compression.GZIP),
    ],
    ids=["acks-all", "acks-1-lz4", "idempotent-zstd", "gzip"],
)
def test_audited_round_trip(env, topic, acks, idempotent, compression) -> None:
    """Every acknowledged record is consumed exactly once with a matching checksum."""

    async def run():
        real = env.producer

        def producer(**kw):
            return real(compression=compression, **kw)

        env.producer = producer  # type: ignore[method-assign]
        try:
            return await sc.audited_round_trip(
                env, topic, AUDITED, acks=acks, idempotent=idempotent, seed=7
            )
        finally:
            env.producer = real  # type: ignore[method-assign]

    assert asyncio.run(run()).ok


def test_acks_zero_records_arrive_without_offsets(env, topic) -> None:
    async def run() -> None:
        audit = Audit()
        async with env.producer(acks=0, interceptors=[audit.producer_interceptor()]) as p:
            futures = [await p.send(topic, None, [i], partition=0) for i in range(200)]
            mds = await asyncio.gather(*futures)
        assert all(md.offset == -1 and md.partition == 0 for md in mds)
        assert audit.unpositioned == 200 and not audit.acknowledged
        values: list[int] = []
        async with env.consumer() as c:
            c.assign([TopicPartition(topic, 0)])
            for _ in range(100):
                if len(values) >= 200:
                    break
                values += [r.value[0] for r in (await c.poll(200)).records()]
        assert sorted(values) == list(range(200))

    asyncio.run(run())


def test_consumer_starts_from_the_committed_offset(env, topic, monkeypatch) -> None:
    """Also (issue 37): Produce, Fetch, OffsetCommit and OffsetFetch are sent at the newest
    version both the broker and our specs know (Produce v13, Fetch v13+, OffsetCommit/OffsetFetch
    v10 name topics by id), no Kafka 3.9 cap."""
    sent: set[tuple[int, int]] = set()
    advertised: dict[int, tuple[int, int]] = {}
    request, api_versions = Connection.request, Connection.api_versions

    async def recording(self, api_key, version, body, **kw):
        sent.add((api_key, version))
        return await request(self, api_key, version, body, **kw)

    async def learning(self, *a, **kw):
        got = await api_versions(self, *a, **kw)
        advertised.update(got)
        return got

    monkeypatch.setattr(Connection, "request", recording)
    monkeypatch.setattr(Connection, "api_versions", learning)

    async def run() -> None:
        mds = await sc.produce_values(env, topic, [[i] for i in range(30)])
        tp = TopicPartition(topic, mds[0].partition)
        mine = sorted(md.offset for md in mds if md.partition == tp.partition)
        group = f"kc-test-{uuid.uuid4().hex[:8]}"
        async with env.consumer(group_id=group) as c:
            c.assign([tp])
            c.seek(tp, mine[0])
            await c.commit_sync({tp: mine[1]})
        async with env.consumer(group_id=group) as c:
            c.assign([tp])
            assert await c.position(tp) == mine[1]
            records = (await c.poll(5000)).records()
            assert records and records[0].offset == mine[1]

    asyncio.run(run())
    for key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH):
        newest = min(advertised[key][1], env.codec.message(key, "request").valid_versions.hi)
        assert {v for k, v in sent if k == key} == {newest}, key


def test_seek_to_end_is_the_log_end_offset(env, topic, request) -> None:
    if request.node.callspec.params["env"] == "tansu":
        request.applymarker(
            pytest.mark.xfail(
                strict=True,
                reason="tansu 0.6 answers ListOffsets LATEST with the last batch's base offset "
                "+ 1, not the log end offset",
            )
        )

    async def run() -> None:
        mds = await sc.produce_values(env, topic, [[i] for i in range(10)])
        mds += await sc.produce_values(env, topic, [[i] for i in range(5)])
        async with env.consumer() as c:
            tps = sorted({TopicPartition(md.topic, md.partition) for md in mds})
            c.assign(tps)
            c.seek_to_end()
            for tp in tps:
                end = max(md.offset for md in mds if md.partition == tp.partition) + 1
                assert await c.position(tp) == end
            c.seek_to_beginning()
            assert [await c.position(tp) for tp in tps] == [0] * len(tps)

    asyncio.run(run())


def test_failed_delivery_reaches_on_acknowledgement(codec) -> None:
    """A broker gone after the record was queued: the record fails (delivery timeout) and each
    interceptor hears (None, error) once, before the callback and the future."""
    target = TansuTarget()
    target.start()
    try:
        env = client_env.ClientEnv(target.bootstrap, codec)
        topic = asyncio.run(env.new_topic(1))

        async def run() -> None:
            trace = probes.Trace()
            chain = [probes.ProducerProbe(i, b, trace) for i, b in enumerate(["raise", "pass"])]
            order: list[str] = []
            p = env.producer(
                interceptors=chain, delivery_timeout_ms=1500, retry_backoff_ms=50, linger_ms=0
            )
            async with p:
                await (await p.send(topic, None, [0]))  # acknowledged: metadata cached
                target.stop()
                fut = await p.send(topic, None, [1], callback=lambda md, e: order.append("cb"))
                with pytest.raises(errors.FAILURES) as raised:
                    await fut
            acks = [e for e in trace.of("on_acknowledgement") if e[3] is not None]
            assert [(i, md, e) for _, i, md, e in acks] == [
                (0, None, raised.value),
                (1, None, raised.value),
            ]
            assert order == ["cb"]
            assert raised.value.topic_partition == TopicPartition(topic, 0)
            assert [e[1] for e in trace.of("close")] == [0, 1]

        asyncio.run(run())
    finally:
        target.stop()


def test_leader_restart_mid_stream_loses_and_duplicates_nothing(codec) -> None:
    """The partition leaders' broker restarts while an idempotent producer streams: the client
    refreshes metadata on NOT_LEADER_OR_FOLLOWER / lost connections and retries, and the audit
    still finds every acknowledged record exactly once."""
    target = ReferenceTarget()
    target.start()
    try:
        env = client_env.ClientEnv(target.bootstrap, codec)

        async def run() -> Audit:
            cluster = ClusterMetadata(target.bootstrap, codec=codec)
            await cluster.start()
            topic = f"kc-failover-{uuid.uuid4().hex[:8]}"
            await create_topics(cluster, {topic: 3}, replication_factor=3)
            leader = cluster.leader(TopicPartition(topic, 0))
            await cluster.close()
            audit = Audit()
            producer = env.producer(
                interceptors=[audit.producer_interceptor()], enable_idempotence=True
            )
            async with producer:
                futures = []
                for i in range(AUDITED):
                    if i == AUDITED // 3:
                        restart = asyncio.create_task(
                            asyncio.to_thread(target.restart_broker, leader)
                        )
                    futures.append(await producer.send(topic, f"k{i % 11}", [i]))
                    if i % 50 == 0:
                        await asyncio.sleep(0.02)
                await restart
                await asyncio.gather(*futures)
            assert not audit.failed, audit.failed[:3]
            consumer = env.consumer(interceptors=[audit.consumer_interceptor()])
            async with consumer:
                tps = [TopicPartition(topic, p) for p in range(3)]
                consumer.assign(tps)
                while sum(len(v) for v in audit.consumed.values()) < AUDITED:
                    await consumer.poll(1000)
            return audit

        audit = asyncio.run(run())
        assert audit.verify().ok, audit.verify()
        assert len(audit.acknowledged) == AUDITED
    finally:
        target.stop()
