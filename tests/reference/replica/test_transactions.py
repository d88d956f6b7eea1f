"""The data side of transactions on in-process brokers: transactional batches, WriteTxnMarkers,
the last stable offset, aborted ranges in read_committed fetches, and all of it on a follower
that becomes leader and on a broker that restarts (its state rebuilt from its log, across
segment rolls)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records import build_batch, decode_batches, encode_batch
from reference_impl.handlers.write_txn_markers import write_txn_markers
from tests.reference.data_plane import MiniCluster, fetch_body, produce_body, wait_until

TOPIC = "txn-data"
P1, P2, PLAIN = 1000, 2000, 3000


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def txn_batch(pid: int, seq: int, n: int, *, epoch: int = 0, txn: bool = True) -> bytes:
    items = [(1_000 + i, b"k", b"%d-%d" % (pid, seq + i)) for i in range(n)]
    return encode_batch(
        build_batch(
            items, producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=txn
        )
    )


async def produce(c: MiniCluster, records: bytes) -> dict:
    conn = await c.connect(c.leader(TOPIC))
    try:
        r = await conn.request(ApiKey.PRODUCE, 9, produce_body(TOPIC, records))
    finally:
        await conn.close()
    return r.body["Responses"][0]["PartitionResponses"][0]


async def marker(
    c: MiniCluster, pid: int, commit: bool, *, epoch: int = 0, coordinator_epoch: int = 0
) -> int:
    broker = c.brokers[c.leader(TOPIC)]
    broker.config.request_timeout_ms = 5000  # the handler waits for acks=all up to it
    body = {
        "Markers": [
            {
                "ProducerId": pid,
                "ProducerEpoch": epoch,
                "TransactionResult": commit,
                "Topics": [{"Name": TOPIC, "PartitionIndexes": [0]}],
                "CoordinatorEpoch": coordinator_epoch,
            }
        ]
    }
    answer = await write_txn_markers(broker, SimpleNamespace(session=None), body)
    [m] = answer["Markers"]
    assert m["ProducerId"] == pid
    return m["Topics"][0]["Partitions"][0]["ErrorCode"]


async def read(c: MiniCluster, offset: int, isolation: int, broker: int | None = None) -> dict:
    """What a consumer sees from ``offset`` on: the first answer's offsets, then every record
    and aborted range of the fetches that follow until nothing more comes (a fetch reads one
    segment at most)."""
    conn = await c.connect(broker or c.leader(TOPIC))
    offsets: list[int] = []
    aborted: list[tuple[int, int]] | None = None
    first: dict | None = None
    try:
        for _ in range(50):
            f = await conn.request(ApiKey.FETCH, 12, fetch_body(TOPIC, offset, isolation=isolation))
            p = f.body["Responses"][0]["Partitions"][0]
            first = first or p
            if p["AbortedTransactions"] is not None:
                got = [(a["ProducerId"], a["FirstOffset"]) for a in p["AbortedTransactions"]]
                aborted = (aborted or []) + [a for a in got if a not in (aborted or [])]
            batches = decode_batches(p["Records"] or b"")
            if not batches:
                break
            offsets += [r.offset for b in batches if not b.is_control for r in b.log_records()]
            offset = batches[-1].next_offset
        lo = await conn.request(
            ApiKey.LIST_OFFSETS,
            5,
            {
                "ReplicaId": -1,
                "IsolationLevel": isolation,
                "Topics": [
                    {
                        "Name": TOPIC,
                        "Partitions": [
                            {"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": -1}
                        ],
                    }
                ],
            },
        )
    finally:
        await conn.close()
    assert first is not None
    return {
        "hw": first["HighWatermark"],
        "lso": first["LastStableOffset"],
        "latest": lo.body["Topics"][0]["Partitions"][0]["Offset"],
        "aborted": aborted,
        "offsets": offsets,
    }


async def replicated(c: MiniCluster) -> None:
    leader = c.brokers[c.leader(TOPIC)].replica_manager.partitions[(TOPIC, 0)]
    await wait_until(lambda: leader.high_watermark == leader.log_end_offset)


def test_markers_lso_and_aborted_ranges_survive_failover_and_restart(tmp_path: Path) -> None:
    async def go() -> None:
        # tiny segments (two or three batches each): the state spans several segment files
        c = await MiniCluster(tmp_path, settings={"log": {"segment_bytes": 200}}).start()
        try:
            await c.create_topic(TOPIC, replicas=[1, 2, 3])
            assert (await produce(c, txn_batch(P1, 0, 2)))["BaseOffset"] == 0  # P1 opens at 0
            assert (await produce(c, txn_batch(PLAIN, 0, 1, txn=False)))["BaseOffset"] == 2
            assert (await produce(c, txn_batch(P2, 0, 1)))["BaseOffset"] == 3  # P2 opens at 3
            await replicated(c)
            s = await read(c, 0, 1)
            assert (s["hw"], s["lso"], s["latest"], s["offsets"]) == (4, 0, 0, [])
            u = await read(c, 0, 0)
            assert (u["lso"], u["aborted"], u["offsets"]) == (0, None, [0, 1, 2, 3])
            # a plain batch of a producer whose transaction is open is refused
            refused = await produce(c, txn_batch(P1, 2, 1, txn=False))
            assert refused["ErrorCode"] == ErrorCode.INVALID_TXN_STATE

            assert await marker(c, P1, False) == 0  # ABORT at offset 4
            s = await read(c, 0, 1)
            assert (s["lso"], s["latest"], s["aborted"]) == (3, 3, [(P1, 0)])
            assert s["offsets"] == [0, 1, 2]  # the client drops P1's by the aborted range
            assert await marker(c, P2, True) == 0  # COMMIT at offset 5
            await replicated(c)
            want = {"hw": 6, "lso": 6, "latest": 6, "aborted": [(P1, 0)]}
            s = await read(c, 0, 1)
            assert {k: s[k] for k in want} == want and s["offsets"] == [0, 1, 2, 3]
            assert (await read(c, 5, 1))["aborted"] == []  # the range ends before offset 5

            # refused markers; a repeated one changes nothing
            assert await marker(c, P1, True, epoch=-1) == ErrorCode.INVALID_PRODUCER_EPOCH
            fenced = await marker(c, P1, True, coordinator_epoch=-1)
            assert fenced == ErrorCode.TRANSACTION_COORDINATOR_FENCED
            assert await marker(c, P1, False) == 0  # offset 6
            await replicated(c)
            s = await read(c, 0, 1)
            assert (s["lso"], s["aborted"]) == (7, [(P1, 0)])
            segments = len(c.brokers[1].replica_manager.partitions[(TOPIC, 0)].log.segments)
            assert segments >= 3

            # the leader dies: a follower leads with the same answers (it rebuilt the state)
            await c.crash(1)
            await c.elect(TOPIC, 0, 2)
            await wait_until(lambda: c.brokers[2].replica_manager.partitions[(TOPIC, 0)].is_leader)
            await replicated(c)
            s = await read(c, 0, 1, broker=2)
            assert (s["lso"], s["aborted"], s["offsets"]) == (7, [(P1, 0)], [0, 1, 2, 3])
            # P3's transaction open on the new leader holds the LSO; then the old leader returns
            assert (await produce(c, txn_batch(4000, 0, 1)))["BaseOffset"] == 7
            await c.restart(1)
            back = c.brokers[1].replica_manager
            await wait_until(lambda: back.partitions[(TOPIC, 0)].log_end_offset == 8)
            await c.elect(TOPIC, 0, 1)
            await wait_until(lambda: c.brokers[1].replica_manager.partitions[(TOPIC, 0)].is_leader)
            await replicated(c)
            s = await read(c, 0, 1, broker=1)
            assert (s["lso"], s["aborted"]) == (7, [(P1, 0)])
            assert await marker(c, 4000, False) == 0
            await replicated(c)
            s = await read(c, 0, 1, broker=1)
            assert (s["lso"], s["aborted"]) == (9, [(P1, 0), (4000, 7)])
            assert not c.failures
        finally:
            await c.stop()

    run(go())
