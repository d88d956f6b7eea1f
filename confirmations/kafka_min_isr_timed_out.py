# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation, on the wire, of DURABILITY.R7's reading of the high watermark
(durability/min-isr/not-enough-replicas; ``conformance/suite/durability/refusals.py``): an acks=all
Produce answered REQUEST_TIMED_OUT (7) while a follower is gone was appended, and its record is
committed later, while later Produces are refused NOT_ENOUGH_REPLICAS (19). Raw requests with
the project's codec and wire client, no suite code, processes signalled through the kafka
target's fault methods.

A topic of one partition on brokers 1-3, min.insync.replicas 3, gets 20 acks=all batches; a
follower is killed (SIGKILL) and, without waiting for the ISR to shrink, one acks=all batch of
one record (TimeoutMs 1000) is sent to the leader every 0.5 s for WATCH seconds: each line gives
its answer, the leader's ISR as Metadata gives it and the leader's high watermark (Fetch) after
it. Then the follower is started again, the ISR waited for, and every value the partition holds
from offset 20 on is printed with its offset.

Usage: python -m confirmations.kafka_min_isr_timed_out 3.4.1 4.4.0
"""

import asyncio
import signal
import time
import uuid

from confirmations.kafka_durability import request
from confirmations.launch import each_target
from conformance.protocol.codec import Codec
from conformance.protocol.records import build_batch, decode_batches, encode_batch

PRODUCE, FETCH, METADATA, CREATE_TOPICS = 0, 1, 3, 19
WATCH = 14.0


async def partition(codec, ep, topic):
    """(leader, ISR) of partition 0 as the broker at ``ep`` gives it."""
    md = await request(
        codec,
        ep,
        METADATA,
        9,
        {
            "Topics": [{"Name": topic}],
            "AllowAutoTopicCreation": False,
            "IncludeClusterAuthorizedOperations": False,
            "IncludeTopicAuthorizedOperations": False,
        },
    )
    p = md["Topics"][0]["Partitions"][0]
    return p["LeaderId"], sorted(p["IsrNodes"])


async def produce(codec, ep, topic, value, timeout_ms):
    batch = encode_batch(build_batch([(int(time.time() * 1000), None, value)]))
    body = {
        "TransactionalId": None,
        "Acks": -1,
        "TimeoutMs": timeout_ms,
        "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}],
    }
    part = (await request(codec, ep, PRODUCE, 9, body))["Responses"][0]["PartitionResponses"][0]
    return part["ErrorCode"], part["BaseOffset"]


async def fetch(codec, ep, topic, offset):
    """(high watermark, [(offset, value)]) from ``offset`` on."""
    part = {
        "Partition": 0,
        "FetchOffset": offset,
        "PartitionMaxBytes": 1 << 20,
        "CurrentLeaderEpoch": -1,
        "LogStartOffset": -1,
        "LastFetchedEpoch": -1,
    }
    body = {
        "ReplicaId": -1,
        "MaxWaitMs": 0,
        "MinBytes": 0,
        "MaxBytes": 1 << 20,
        "IsolationLevel": 0,
        "SessionId": 0,
        "SessionEpoch": -1,
        "Topics": [{"Topic": topic, "Partitions": [part]}],
        "ForgottenTopicsData": [],
        "RackId": "",
    }
    f = (await request(codec, ep, FETCH, 12, body))["Responses"][0]["Partitions"][0]
    records = [
        (r.offset, r.value)
        for b in decode_batches(f["Records"] or b"", allow_partial=True)
        for r in b.log_records()
    ]
    return f["HighWatermark"], records


async def confirm(target) -> None:
    codec = Codec.from_specs().strict()
    print(f"Apache Kafka {target.version} ({target.store})")
    topic = f"confirm-{uuid.uuid4().hex[:8]}"
    ep = target.bootstrap[0]
    created = await request(
        codec,
        ep,
        CREATE_TOPICS,
        5,
        {
            "Topics": [
                {
                    "Name": topic,
                    "NumPartitions": -1,
                    "ReplicationFactor": -1,
                    "Assignments": [{"PartitionIndex": 0, "BrokerIds": [1, 2, 3]}],
                    "Configs": [{"Name": "min.insync.replicas", "Value": "3"}],
                }
            ],
            "timeoutMs": 15000,
            "validateOnly": False,
        },
    )
    print(
        f"  CreateTopics {topic} on brokers [1, 2, 3], min.insync.replicas 3: error {created['Topics'][0]['ErrorCode']}"
    )
    for _ in range(100):
        got = await partition(codec, ep, topic)
        if got[0] > 0 and len(got[1]) == 3:
            break
        await asyncio.sleep(0.2)
    leader_id = got[0]
    leader = target.restartable[leader_id]
    answers = [await produce(codec, leader, topic, f"v{i}".encode(), 10000) for i in range(20)]
    hw, _ = await fetch(codec, leader, topic, 0)
    print(
        f"  20 acks=all batches to leader {leader_id}: answers {sorted({a for a, _ in answers})}, high watermark {hw}"
    )
    follower = next(n for n in (1, 2, 3) if n != leader_id)
    target.signal_node(follower, signal.SIGKILL)
    start = time.monotonic()
    print(f"  SIGKILL to follower {follower}; one acks=all record (TimeoutMs 1000) every 0.5 s:")
    sent = {}
    i = 0
    while time.monotonic() - start < WATCH:
        value = f"after-kill-{i}".encode()
        t = time.monotonic() - start
        code, _ = await produce(codec, leader, topic, value, 1000)
        sent[value] = code
        hw, _ = await fetch(codec, leader, topic, 0)
        isr = (await partition(codec, leader, topic))[1]
        print(
            f"  {t:5.1f} s: {value.decode()} answered {code}; then leader's ISR {isr}, high watermark {hw}"
        )
        i += 1
        await asyncio.sleep(0.5)
    target.start_node(follower)
    for _ in range(150):
        if len((await partition(codec, leader, topic))[1]) == 3:
            break
        await asyncio.sleep(0.2)
    hw, records = await fetch(codec, leader, topic, 20)
    print(
        f"  follower {follower} started again; ISR {(await partition(codec, leader, topic))[1]}, high watermark {hw}"
    )
    for offset, value in records:
        print(f"    offset {offset}: {value.decode()} (its Produce answered {sent.get(value)})")
    held = [v.decode() for v, c in sent.items() if c == 19 and v in {r[1] for r in records}]
    print(f"  records answered 19 in the partition: {held}")


if __name__ == "__main__":
    each_target(confirm)
