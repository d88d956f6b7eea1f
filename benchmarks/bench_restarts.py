"""Stops and restarts of the reference cluster: how long a graceful stop takes, how long the
cluster takes to be ready again after a clean stop and after a crash, and how long the ISR of
every partition takes to be full again.

    .venv/bin/python benchmarks/bench_restarts.py [--stops 20] [--crashes 5] [--json FILE]

One cluster (1 controller + 3 brokers, default settings) on one data dir; a topic of 6
partitions, replication factor 3. Each of ``--stops`` rounds: start (time to ready: every
broker Online), time until every partition's ISR is full again, 2,000 acks=all records, then a
graceful stop of the whole cluster (SIGTERM to every node, as ``serve`` does on SIGTERM; time
until every process has exited, and how each exited: 0, or -9 when the launcher had to kill it
after 20 s). Then ``--crashes`` rounds of the same, ending in kill -9 of every node instead.
The clean start is the peer of the start after a crash (ratio).
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from reference_impl.launcher import Cluster  # noqa: E402

TOPIC, PARTITIONS = "restarts", 6


def isr_full(cluster: Cluster, timeout: float = 120) -> float:
    """Seconds until every partition has a leader and 3 in-sync replicas."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    t = time.monotonic()
    while time.monotonic() - t < timeout:
        try:
            md = admin.list_topics(TOPIC, timeout=2).topics[TOPIC]
            parts = md.partitions.values()
            if len(parts) == PARTITIONS and all(p.leader >= 0 and len(p.isrs) == 3 for p in parts):
                return time.monotonic() - t
        except Exception:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the ISR was not full after {timeout} s")


def produce(cluster: Cluster, n: int) -> None:
    p = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "linger.ms": 2})
    for i in range(n):
        p.produce(TOPIC, b"v%d" % i, partition=i % PARTITIONS)
        p.poll(0)
    assert p.flush(60) == 0, "records not acknowledged"


def timed_start(cluster: Cluster) -> float:
    t = time.monotonic()
    cluster.start(timeout=120)
    return time.monotonic() - t


def crash(cluster: Cluster) -> None:
    for node in cluster.nodes.values():
        node.signal(signal.SIGKILL)
    for node in cluster.nodes.values():
        node.wait(10)


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "min": round(min(values), 3),
        "median": round(statistics.median(values), 3),
        "max": round(max(values), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--stops", type=int, default=20)
    parser.add_argument("--crashes", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    clean_ready, crash_ready, clean_isr, crash_isr, stop_s, exits = [], [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="bench-restarts-") as d:
        cluster = Cluster(Path(d), brokers=3)
        cluster.start(timeout=120)
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 3)])[TOPIC].result(30)
        isr_full(cluster)
        produce(cluster, 2_000)
        try:
            for i in range(args.stops + args.crashes):
                crashing = i >= args.stops
                if i:
                    (crash_ready if crashing and i > args.stops else clean_ready).append(
                        timed_start(cluster)
                    )
                    isr = isr_full(cluster)
                    (crash_isr if crashing and i > args.stops else clean_isr).append(isr)
                produce(cluster, 2_000)
                if crashing:
                    crash(cluster)
                else:
                    t = time.monotonic()
                    cluster.stop()
                    stop_s.append(time.monotonic() - t)
                    exits.extend(n.proc.returncode for n in cluster.nodes.values() if n.proc)
                print(
                    f"round {i + 1}: {'crash' if crashing else f'stop {stop_s[-1]:.2f} s'}",
                    flush=True,
                )
            crash_ready.append(timed_start(cluster))
            crash_isr.append(isr_full(cluster))
        finally:
            cluster.stop()
    result = {
        "graceful_stop_s": summary(stop_s),
        "stop_exit_codes": sorted(set(exits)),
        "ready_after_clean_stop_s": summary(clean_ready),
        "ready_after_crash_s": summary(crash_ready),
        "crash_vs_clean_ready_median_ratio": round(
            statistics.median(crash_ready) / statistics.median(clean_ready), 2
        ),
        "isr_full_after_clean_restart_s": summary(clean_isr),
        "isr_full_after_crash_restart_s": summary(crash_isr),
    }
    print(json.dumps(result, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
