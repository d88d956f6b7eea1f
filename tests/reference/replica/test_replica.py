"""Replication between in-process brokers: ISR, high watermark, acks=all, min.insync.replicas,
and a restarted replica truncating what a new leader never had (diverging epochs)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from conformance.protocol import ApiKey
from conformance.protocol.records import build_batch, decode_batches, encode_batch
from reference_impl.log import PartitionLog
from tests.reference.data_plane import MiniCluster, fetch_body, produce_body, wait_until


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def batch(*values: bytes) -> bytes:
    return encode_batch(build_batch([(1_000 + i, None, v) for i, v in enumerate(values)]))


def stored(plog: PartitionLog) -> list[bytes]:
    out, offset = [], plog.log_start_offset
    while offset < plog.log_end_offset:
        for b in decode_batches(plog.read(offset, 1 << 20)):
            out.append(b.raw)
            offset = b.next_offset
    return out


def values(plog: PartitionLog) -> list[bytes]:
    return [r.value for raw in stored(plog) for b in decode_batches(raw) for r in b.records]


def log_of(c: MiniCluster, b: int, topic: str = "t", index: int = 0) -> PartitionLog:
    return c.brokers[b].replica_manager.partitions[(topic, index)].log


async def produce(c: MiniCluster, broker: int, records: bytes, **kw) -> dict:
    conn = await c.connect(broker)
    try:
        resp = await conn.request(ApiKey.PRODUCE, 9, produce_body("t", records, **kw))
    finally:
        await conn.close()
    return resp.body["Responses"][0]["PartitionResponses"][0]


def test_acks_all_is_answered_once_every_isr_member_has_the_batch(tmp_path: Path) -> None:
    async def main():
        c = await MiniCluster(tmp_path).start()
        try:
            await c.create_topic("t")
            offsets = []
            for i in range(10):
                r = await produce(c, 1, batch(b"a%d" % i, b"b%d" % i))
                assert r["ErrorCode"] == 0
                offsets.append(r["BaseOffset"])
                # acknowledged: every ISR member already holds it
                for b in (2, 3):
                    assert log_of(c, b).log_end_offset >= offsets[-1] + 2
            assert offsets == list(range(0, 20, 2))
            leader = stored(log_of(c, 1))
            for b in (2, 3):
                assert stored(log_of(c, b)) == leader, "followers store the leader's bytes"
            await wait_until(
                lambda: all(
                    c.brokers[b].replica_manager.partitions[("t", 0)].high_watermark == 20
                    for b in (1, 2, 3)
                )
            )
            assert not c.failures
        finally:
            await c.stop()

    run(main())


def test_a_dead_follower_times_acks_all_out_until_the_isr_shrinks(tmp_path: Path) -> None:
    settings = {"replication": {"replica_lag_time_max_ms": 1500}}

    async def main():
        c = await MiniCluster(tmp_path, settings=settings).start()
        try:
            await c.create_topic("t")
            assert (await produce(c, 1, batch(b"x")))["ErrorCode"] == 0
            await c.crash(3)
            r = await produce(c, 1, batch(b"y"), timeout_ms=300)
            assert r["ErrorCode"] == 7  # REQUEST_TIMED_OUT: broker 3 is still in the ISR
            p = c.brokers[1].replica_manager.partitions[("t", 0)]
            await wait_until(lambda: p.isr == (1, 2), timeout=10)
            assert c.topics["t"].partitions[0][1] == [1, 2], "the shrink went to the controller"
            r = await produce(c, 1, batch(b"z"))
            assert r["ErrorCode"] == 0 and r["BaseOffset"] == 2
        finally:
            await c.stop()

    run(main())


def test_min_insync_replicas_refuses_acks_all_when_the_isr_is_too_small(tmp_path: Path) -> None:
    settings = {"log": {"min_insync_replicas": 3}}

    async def main():
        c = await MiniCluster(tmp_path, settings=settings).start()
        try:
            await c.create_topic("t")
            assert (await produce(c, 1, batch(b"x")))["ErrorCode"] == 0
            await c.crash(3)
            await c.set_isr("t", 0, [1, 2])  # as the controller does when a broker is fenced
            r = await produce(c, 1, batch(b"y"))
            assert r["ErrorCode"] == 19  # NOT_ENOUGH_REPLICAS, nothing appended
            assert log_of(c, 1).log_end_offset == 1
            r = await produce(c, 1, batch(b"y"), acks=1)
            assert r["ErrorCode"] == 0 and r["BaseOffset"] == 1
        finally:
            await c.stop()

    run(main())


def test_consumers_see_up_to_the_high_watermark_followers_up_to_the_log_end(
    tmp_path: Path,
) -> None:
    async def main():
        c = await MiniCluster(tmp_path).start()
        try:
            await c.create_topic("t")
            assert (await produce(c, 1, batch(b"committed")))["ErrorCode"] == 0
            for b in (2, 3):
                await c.brokers[b].replica_manager.fetchers[1].stop()
            assert (await produce(c, 1, batch(b"pending"), acks=1))["ErrorCode"] == 0
            conn = await c.connect(1)
            try:
                resp = await conn.request(ApiKey.FETCH, 12, fetch_body("t", 0))
                part = resp.body["Responses"][0]["Partitions"][0]
                assert part["HighWatermark"] == 1
                got = [r.value for b in decode_batches(part["Records"]) for r in b.records]
                assert got == [b"committed"]
                body = {
                    "ReplicaId": -1,
                    "IsolationLevel": 0,
                    "Topics": [
                        {"Name": "t", "Partitions": [{"PartitionIndex": 0, "Timestamp": -1}]}
                    ],
                }
                resp = await conn.request(ApiKey.LIST_OFFSETS, 7, body)
                assert resp.body["Topics"][0]["Partitions"][0]["Offset"] == 1
            finally:
                await conn.close()
        finally:
            await c.stop()

    run(main())


def test_a_restarted_replica_truncates_what_the_new_leader_never_had(tmp_path: Path) -> None:
    async def main():
        c = await MiniCluster(tmp_path).start()
        try:
            await c.create_topic("t")
            for i in range(5):
                assert (await produce(c, 1, batch(b"c%d" % i)))["ErrorCode"] == 0
            for b in (2, 3):  # replication stops: what broker 1 writes now stays with it
                await c.brokers[b].replica_manager.fetchers[1].stop()
            for i in range(3):
                assert (await produce(c, 1, batch(b"lost%d" % i), acks=1))["ErrorCode"] == 0
            assert log_of(c, 1).log_end_offset == 8
            await c.crash(1)
            await c.elect("t", 0, 2)
            for i in range(2):
                r = await produce(c, 2, batch(b"new%d" % i))
                assert r["ErrorCode"] == 0 and r["BaseOffset"] == 5 + i
            await c.restart(1)
            await wait_until(lambda: log_of(c, 1).log_end_offset == 7)
            expected = [b"c0", b"c1", b"c2", b"c3", b"c4", b"new0", b"new1"]
            for b in (1, 2, 3):
                assert values(log_of(c, b)) == expected
            assert stored(log_of(c, 1)) == stored(log_of(c, 2))
            assert log_of(c, 1).epochs.epochs == [0, 1]
            assert not c.failures
        finally:
            await c.stop()

    run(main())
