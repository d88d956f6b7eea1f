# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation, on the wire, of what Apache Kafka does after every process of the cluster
is killed with SIGKILL and started again (DURABILITY.R1, R3 and R5 of
durability/cluster-kill/restart): raw requests with the project's codec and wire client, no
suite code, processes signalled through the kafka target's fault methods.

A topic of one partition on brokers 1-3 (min.insync.replicas 2) gets 20 acks=all batches; every
broker and controller is killed (SIGKILL), the controllers started again, then the brokers; for
60 s the script prints each change of the partition's leader and ISR as Metadata gives it, then
DescribeTopicPartitions (4.x: the eligible leader replicas of KIP-966) and a Fetch from the
leader, if there is one, of what was acknowledged.

Usage: python -m confirmations.kafka_durability 3.9.1 4.4.0
       GAP=6 python -m confirmations.kafka_durability 3.9.1 4.4.0
"""

import asyncio
import os
import signal
import time
import uuid

from confirmations.launch import each_target
from conformance.client.wire import Connection
from conformance.protocol.codec import Codec
from conformance.protocol.records import build_batch, decode_batches, encode_batch

PRODUCE, FETCH, METADATA, CREATE_TOPICS, DESCRIBE_TOPIC_PARTITIONS = 0, 1, 3, 19, 75
WATCH = 60.0
#: seconds between the brokers' starts (GAP=6: as slow as JVMs on a loaded machine, past the
#: brokers' 3 s session, so the controller fences those not yet back)
GAP = float(os.environ.get("GAP", "0"))


async def request(codec, ep, api, version, body):
    conn = await Connection.open(ep.host, ep.port, codec=codec, timeout=3)
    try:
        return (await conn.request(api, version, body, timeout=10)).body
    finally:
        await conn.close()


async def partition(codec, target, topic):
    """(leader, ISR, leader epoch) of partition 0 from the first broker that answers."""
    for ep in target.restartable.values():
        try:
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
        except (OSError, TimeoutError, ConnectionError):
            continue
        for t in md["Topics"]:
            for p in t["Partitions"]:
                return p["LeaderId"], p["IsrNodes"], p["LeaderEpoch"], t["ErrorCode"]
    return None


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
                    "Configs": [{"Name": "min.insync.replicas", "Value": "2"}],
                }
            ],
            "timeoutMs": 15000,
            "validateOnly": False,
        },
    )
    print(
        f"  CreateTopics {topic} on brokers [1, 2, 3], min.insync.replicas 2: error {created['Topics'][0]['ErrorCode']}"
    )
    for _ in range(100):
        got = await partition(codec, target, topic)
        if got and got[0] > 0 and len(got[1]) == 3:
            break
        await asyncio.sleep(0.2)
    leader = target.restartable[got[0]]
    acked = []
    for i in range(20):
        batch = encode_batch(build_batch([(int(time.time() * 1000), None, f"v{i}".encode())]))
        body = {
            "TransactionalId": None,
            "Acks": -1,
            "TimeoutMs": 10000,
            "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}],
        }
        part = (await request(codec, leader, PRODUCE, 9, body))["Responses"][0][
            "PartitionResponses"
        ][0]
        if part["ErrorCode"] == 0:
            acked.append(part["BaseOffset"])
    print(
        f"  20 acks=all batches to leader {got[0]}: {len(acked)} acknowledged, offsets {acked[0]}..{acked[-1]}; leader {got[0]}, ISR {got[1]}, epoch {got[2]}"
    )
    for node in target.fault_nodes("broker") + target.fault_nodes("controller"):
        target.signal_node(node, signal.SIGKILL)
    print(
        f"  SIGKILL to every process: brokers {target.fault_nodes('broker')}, controllers {target.fault_nodes('controller')}"
    )
    for node in target.fault_nodes("controller") + target.fault_nodes("broker"):
        target.start_node(node)
        print(
            f"  started {node} again; partition (leader, ISR, epoch, error): {await partition(codec, target, topic)}"
        )
        if node in target.fault_nodes("broker"):
            await asyncio.sleep(GAP)
    print(f"  every process started again (controllers first, brokers {GAP:.0f} s apart)")
    start, last = time.monotonic(), None
    while time.monotonic() - start < WATCH:
        got = await partition(codec, target, topic)
        if got != last:
            print(
                f"  {time.monotonic() - start:5.1f} s: leader, ISR, leader epoch, topic error = {got}"
            )
            last = got
        await asyncio.sleep(0.5)
    print(f"  after {WATCH:.0f} s: {last}")
    try:
        dtp = await request(
            codec,
            ep,
            DESCRIBE_TOPIC_PARTITIONS,
            0,
            {"Topics": [{"Name": topic}], "ResponsePartitionLimit": 10, "Cursor": None},
        )
        p = dtp["Topics"][0]["Partitions"][0]
        print(
            f"  DescribeTopicPartitions: leader {p['LeaderId']}, ISR {p['IsrNodes']}, eligible leader replicas {p['EligibleLeaderReplicas']}, last known ELR {p['LastKnownElr']}"
        )
    except Exception as e:  # 3.x does not serve it
        print(f"  DescribeTopicPartitions: {type(e).__name__} {e}")
    if last and last[0] > 0:
        part = {
            "Partition": 0,
            "FetchOffset": 0,
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
        f = (await request(codec, target.restartable[last[0]], FETCH, 12, body))["Responses"][0][
            "Partitions"
        ][0]
        n = sum(
            len(b.log_records()) for b in decode_batches(f["Records"] or b"", allow_partial=True)
        )
        print(
            f"  Fetch from leader {last[0]} at 0: error {f['ErrorCode']}, high watermark {f['HighWatermark']}, {n} records"
        )


if __name__ == "__main__":
    each_target(confirm)
