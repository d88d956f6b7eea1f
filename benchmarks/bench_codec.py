"""Codec throughput of ours against kio and kafka-python: same process, same messages.

Measures encode and decode of two message bodies (no headers) with each library's own API:
  ours          ``Codec.encode`` / ``Codec.decode`` (dicts)
  kio           ``kio.serial.entity_writer`` (Python) / ``entity_reader`` (its Rust reader),
                on kio's frozen dataclasses
  kafka-python  ``MetadataResponse[v](...).encode()`` / ``MetadataResponse[v].decode(raw)``
                (kafka.protocol's compiled ApiMessage classes, 3.x layout)
Before timing, every library must produce the same bytes and decode them to the same value;
a mismatch stops the run. Each figure is the best of ``--repeat`` runs of a loop count chosen
by ``timeit``'s autorange (at least 0.2 s per run), reported as operations per second. The
clock is this process's CPU time (``time.process_time``) unless ``--wall``: the benchmark
machines are shared, and CPU time keeps other processes' load out of the figures.

Run from the repository root:  .venv/bin/python benchmarks/bench_codec.py
"""

from __future__ import annotations

import argparse
import datetime
import io
import os
import platform
import sys
import time
import timeit
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.protocol import ApiKey

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.protocol.kio_adapter, the kio <-> ours value mapping

import kafka  # noqa: E402
import kio  # noqa: E402
from kafka.protocol.metadata import MetadataResponse as KpMetadataResponse  # noqa: E402
from kafka.protocol.producer import ProduceRequest as KpProduceRequest  # noqa: E402
from kafka.record.default_records import DefaultRecordBatchBuilder  # noqa: E402
from kio.serial import entity_reader, entity_writer  # noqa: E402

from conformance.protocol import Codec  # noqa: E402
from tests.protocol.kio_adapter import (  # noqa: E402
    from_kio,
    kio_entity,
    kio_read,
    kio_write,
    link,
    to_kio,
)

METADATA_VERSION = 12
#: Produce v7: the newest non-flexible version, inside all three libraries' ranges
#: (ours 0-11, kio 3-13, kafka-python 3-13).
PRODUCE_VERSION = 7
INT32_MIN = -(2**31)  # "authorized operations not requested"; kafka-python decodes it as None


# --- the two messages, built deterministically ------------------------------------------------


def metadata_value() -> dict:
    """MetadataResponse v12: 3 brokers, 10 topics x 10 partitions, 3 replicas each."""
    brokers = [
        {"NodeId": n, "Host": f"broker-{n}.kafka.internal", "Port": 9092, "Rack": f"rack-{n}"}
        for n in range(3)
    ]
    topics = []
    for t in range(10):
        partitions = []
        for p in range(10):
            replicas = [(p + i) % 3 for i in range(3)]
            partitions.append(
                {
                    "ErrorCode": 0,
                    "PartitionIndex": p,
                    "LeaderId": replicas[0],
                    "LeaderEpoch": 7,
                    "ReplicaNodes": replicas,
                    "IsrNodes": list(replicas),
                    "OfflineReplicas": [],
                }
            )
        topics.append(
            {
                "ErrorCode": 0,
                "Name": f"orders.events.topic-{t:02d}",
                "TopicId": uuid.UUID(int=0x5EED_0000_0000_0000_0000_0000_0000_0000 + t),
                "IsInternal": False,
                "Partitions": partitions,
                "TopicAuthorizedOperations": INT32_MIN,
            }
        )
    return {
        "ThrottleTimeMs": 0,
        "Brokers": brokers,
        "ClusterId": "kc-bench-cluster-0000001",
        "ControllerId": 1,
        "Topics": topics,
        "ClusterAuthorizedOperations": INT32_MIN,  # v8-10 only: the default at v12
        "ErrorCode": 0,  # v13+ (Kafka 4.x): the default at v12, which decode gives back
    }


def record_batch(count: int = 100, value_size: int = 1024) -> bytes:
    """One uncompressed v2 record batch of ``count`` records with ``value_size``-byte values."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=2**20,
    )
    for i in range(count):
        value = bytes((i + j) % 251 for j in range(value_size))
        builder.append(i, 1_700_000_000_000 + i, f"key-{i}".encode(), value, [])
    return bytes(builder.build())


def produce_value() -> dict:
    """ProduceRequest v7: 1 topic, 1 partition, a 100 x 1 KiB record batch (opaque bytes)."""
    return {
        "TransactionalId": None,
        "Acks": -1,
        "TimeoutMs": 30_000,
        "TopicData": [
            {
                "Name": "orders.events",
                "PartitionData": [{"Index": 0, "Records": record_batch()}],
            }
        ],
    }


# --- the same messages as kafka-python objects ------------------------------------------------


def kp_metadata(value: dict) -> Any:
    cls = KpMetadataResponse[METADATA_VERSION]
    ops = value["Topics"][0]["TopicAuthorizedOperations"]
    assert ops == INT32_MIN  # kafka-python models the field as a set of bits, None for INT32_MIN
    return cls(
        throttle_time_ms=value["ThrottleTimeMs"],
        brokers=[
            cls.MetadataResponseBroker(
                node_id=b["NodeId"], host=b["Host"], port=b["Port"], rack=b["Rack"]
            )
            for b in value["Brokers"]
        ],
        cluster_id=value["ClusterId"],
        controller_id=value["ControllerId"],
        topics=[
            cls.MetadataResponseTopic(
                error_code=t["ErrorCode"],
                name=t["Name"],
                topic_id=t["TopicId"],
                is_internal=t["IsInternal"],
                partitions=[
                    cls.MetadataResponseTopic.MetadataResponsePartition(
                        error_code=p["ErrorCode"],
                        partition_index=p["PartitionIndex"],
                        leader_id=p["LeaderId"],
                        leader_epoch=p["LeaderEpoch"],
                        replica_nodes=p["ReplicaNodes"],
                        isr_nodes=p["IsrNodes"],
                        offline_replicas=p["OfflineReplicas"],
                    )
                    for p in t["Partitions"]
                ],
                authorized_operations=None,
            )
            for t in value["Topics"]
        ],
    )


def kp_produce(value: dict) -> Any:
    cls = KpProduceRequest[PRODUCE_VERSION]
    return cls(
        transactional_id=value["TransactionalId"],
        acks=value["Acks"],
        timeout_ms=value["TimeoutMs"],
        topic_data=[
            cls.TopicProduceData(
                name=t["Name"],
                partition_data=[
                    cls.TopicProduceData.PartitionProduceData(
                        index=p["Index"], records=p["Records"]
                    )
                    for p in t["PartitionData"]
                ],
            )
            for t in value["TopicData"]
        ],
    )


# --- one benchmark case: three libraries, checked against each other, then timed ---------------


@dataclass
class Case:
    title: str
    encoders: dict[str, Callable[[], bytes]]
    decoders: dict[str, Callable[[], Any]]


def make_case(
    codec: Codec, title: str, api_key: int, version: int, kind: str, value: dict, kp_obj: Any
) -> Case:
    spec = codec.message(api_key, kind)
    entity_cls = kio_entity(spec, version)
    assert entity_cls is not None, f"kio does not model {spec.name} v{version}"
    sl = link(spec.struct, version, entity_cls)
    entity = to_kio(sl, value)
    kp_cls = type(kp_obj)[version]  # instances are of the primary class; decode needs [v]

    raw = codec.encode(api_key, version, kind, value)
    # like with like: the same bytes from all three, and the same value back from all three
    assert kio_write(entity) == raw, "kio writes different bytes"
    assert kp_obj.encode() == raw, "kafka-python writes different bytes"
    assert codec.decode(api_key, version, kind, raw) == value
    got, size = kio_read(entity_cls, raw)
    assert size == len(raw) and got == entity and from_kio(sl, got) == value
    assert kp_cls.decode(raw) == kp_obj, "kafka-python decodes to a different value"

    write = entity_writer(entity_cls)
    read = entity_reader(entity_cls)

    def kio_encode() -> bytes:
        buf = io.BytesIO()
        write(buf, entity)
        return buf.getvalue()

    return Case(
        title=f"{title} ({len(raw):,} bytes)",
        encoders={
            "ours": lambda: codec.encode(api_key, version, kind, value),
            "kio": kio_encode,
            "kafka-python": kp_obj.encode,
        },
        decoders={
            "ours": lambda: codec.decode(api_key, version, kind, raw),
            "kio": lambda: read(raw, 0),
            "kafka-python": lambda: kp_cls.decode(raw),
        },
    )


def ops_per_second(fns: dict[str, Callable[[], Any]], repeat: int, clock: Callable) -> dict:
    """Best rate of each function; the libraries take turns in every round, so a burst of
    load from elsewhere on the machine hits all of them alike."""
    timers = {name: timeit.Timer(fn, timer=clock) for name, fn in fns.items()}
    loops = {name: t.autorange()[0] for name, t in timers.items()}
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, t in timers.items():
            best[name] = min(best[name], t.timeit(loops[name]) / loops[name])
    return {name: 1 / seconds for name, seconds in best.items()}


TARGETS = {
    # (operation, peer): minimum ours/peer ratio, from ARCHITECTURE.md (MetadataResponse v12)
    ("encode", "kio"): 5.0,
    ("encode", "kafka-python"): 2.0,
    ("decode", "kafka-python"): 2.0,
    ("decode", "kio"): 0.5,  # "within 2x of kio's native decoder"
}


def metadata_case(codec: Codec) -> Case:
    """MetadataResponse v12, the message the targets are stated on."""
    meta = metadata_value()
    return make_case(
        codec,
        f"MetadataResponse v{METADATA_VERSION}",
        ApiKey.METADATA,
        METADATA_VERSION,
        "response",
        meta,
        kp_metadata(meta),
    )


def ratios(case: Case, repeat: int = 3, clock: Callable = time.process_time) -> dict[str, float]:
    """One round: ours / each peer, encode and decode, measured side by side in this process
    (``encode/kio`` ...); with ``ours encode/s`` and ``ours decode/s`` for the record."""
    out = {}
    for op, fns in (("encode", case.encoders), ("decode", case.decoders)):
        rate = ops_per_second(fns, repeat, clock)
        out[f"ours {op}/s"] = round(rate["ours"])
        for peer in ("kio", "kafka-python"):
            out[f"{op}/{peer}"] = round(rate["ours"] / rate[peer], 3)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per figure (best is kept)")
    ap.add_argument(
        "--wall",
        action="store_true",
        help="time with the wall clock (perf_counter) instead of this process's CPU time",
    )
    args = ap.parse_args(argv)
    clock = time.perf_counter if args.wall else time.process_time

    codec = Codec.from_specs()
    prod = produce_value()
    cases = [
        metadata_case(codec),
        make_case(
            codec,
            f"ProduceRequest v{PRODUCE_VERSION}",
            ApiKey.PRODUCE,
            PRODUCE_VERSION,
            "request",
            prod,
            kp_produce(prod),
        ),
    ]
    print(
        f"# {datetime.date.today()}  Python {platform.python_version()}  "
        f"kio {kio.__version__}  kafka-python {kafka.__version__}  "
        f"{platform.machine()} ({os.cpu_count()} cores), best of {args.repeat}, "
        f"{'wall' if args.wall else 'CPU'} time"
    )
    print()
    print("| message | op | ours ops/s | kio ops/s | kafka-python ops/s | ours/kio | ours/kp |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    misses = []
    for case in cases:
        for op, fns in (("encode", case.encoders), ("decode", case.decoders)):
            rate = ops_per_second(fns, args.repeat, clock)
            r_kio, r_kp = rate["ours"] / rate["kio"], rate["ours"] / rate["kafka-python"]
            print(
                f"| {case.title} | {op} | {rate['ours']:,.0f} | {rate['kio']:,.0f} | "
                f"{rate['kafka-python']:,.0f} | {r_kio:.2f}x | {r_kp:.2f}x |"
            )
            if case.title.startswith("MetadataResponse"):
                for peer, ratio in (("kio", r_kio), ("kafka-python", r_kp)):
                    need = TARGETS.get((op, peer))
                    if need is not None and ratio < need:
                        misses.append(f"{op} vs {peer}: {ratio:.2f}x, target >= {need}x")
    print()
    print("targets (MetadataResponse v12):", "all met" if not misses else "; ".join(misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
