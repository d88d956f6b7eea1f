"""How long one heavy Produce holds a broker's event loop: the worst stall of other connections.

    .venv/bin/python benchmarks/bench_stall.py [--records 700000] [--rounds 3] [--json FILE]

A 1-broker reference cluster; a topic with one partition. One gzip batch of ``--records`` tiny
records (values of 1 byte: about 1 MB compressed, the kind of batch that is cheap to send and
costly to validate) is produced (acks=1) on one connection while another connection sends
ApiVersions back to back and records each round trip. Reported per round: the time the heavy
Produce took, and the worst ApiVersions round trip during it, next to the worst round trip of
the same ping loop with no Produce in flight (the peer in the same run: ratio = stall / idle
worst). Before issue 13 the decompression and record walk ran on the event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from conformance.protocol import ApiKey

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from conformance.client.wire import Connection  # noqa: E402
from conformance.protocol import Codec  # noqa: E402
from conformance.protocol.records import build_batch, encode_batch  # noqa: E402
from conformance.protocol.records.compression import Compression  # noqa: E402
from reference_impl.launcher import Cluster  # noqa: E402


async def ping_worst(conn: Connection, until: asyncio.Event) -> tuple[float, int]:
    """Worst ApiVersions round trip (s) until ``until`` is set, and how many were sent."""
    worst, n = 0.0, 0
    while not until.is_set():
        t = time.perf_counter()
        await conn.api_versions()
        worst = max(worst, time.perf_counter() - t)
        n += 1
    return worst, n


async def one_round(host: str, port: int, codec: Codec, batch: bytes) -> dict:
    async with (
        await Connection.open(host, port, codec=codec) as pinger,
        await Connection.open(host, port, codec=codec) as producer,
    ):
        done = asyncio.Event()
        idle = asyncio.create_task(ping_worst(pinger, done))
        await asyncio.sleep(1.0)
        done.set()
        idle_worst, _ = await idle
        done = asyncio.Event()
        ping = asyncio.create_task(ping_worst(pinger, done))
        await asyncio.sleep(0.05)
        body = {
            "TransactionalId": None,
            "Acks": 1,
            "TimeoutMs": 30000,
            "TopicData": [{"Name": "heavy", "PartitionData": [{"Index": 0, "Records": batch}]}],
        }
        t = time.perf_counter()
        resp = await producer.request(ApiKey.PRODUCE, 9, body, timeout=120)
        produce_s = time.perf_counter() - t
        done.set()
        stall, pings = await ping
        code = resp.body["Responses"][0]["PartitionResponses"][0]["ErrorCode"]
        assert code == 0, f"the heavy produce failed: error {code}"
    return {
        "produce_s": round(produce_s, 3),
        "worst_stall_ms": round(stall * 1000, 1),
        "idle_worst_ms": round(idle_worst * 1000, 1),
        "pings_during_produce": pings,
        "ratio": round(stall / idle_worst, 1) if idle_worst else None,
    }


async def run(cluster: Cluster, records: int, rounds: int) -> list[dict]:
    codec = Codec.from_specs()
    host, port = cluster.broker_address(cluster.broker_nodes()[0])
    topic = {
        "Name": "heavy",
        "NumPartitions": 1,
        "ReplicationFactor": 1,
        "Assignments": [],
        "Configs": [{"Name": "max.message.bytes", "Value": str(64 << 20)}],
    }
    async with await Connection.open(host, port, codec=codec) as conn:
        await conn.request(ApiKey.CREATE_TOPICS, 7, {"Topics": [topic], "timeoutMs": 10000})
    await asyncio.sleep(1)
    now = int(time.time() * 1000)
    batch = encode_batch(
        build_batch(((now, None, b"x") for _ in range(records)), compression=Compression.GZIP)
    )
    print(f"batch: {records} records, {len(batch)} bytes gzip", flush=True)
    out = []
    for i in range(rounds):
        r = await one_round(host, port, codec, batch)
        print(f"round {i + 1}: {r}", flush=True)
        out.append(r)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=700_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-stall-") as d:
        cluster = Cluster(Path(d), brokers=1)
        cluster.start(timeout=60)
        try:
            results = asyncio.run(run(cluster, args.records, args.rounds))
        finally:
            cluster.stop()
    worst = max(r["worst_stall_ms"] for r in results)
    print(f"worst stall of another connection during the heavy produce: {worst} ms")
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
