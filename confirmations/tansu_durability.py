# ruff: noqa: E501 - the printed lines say what tansu answers, in full
"""Hand confirmation on the wire of tansu 0.6's DURABILITY FAILs (memory storage, as the tansu
target runs it; its one process signalled through the target's fault methods):

* not DURABILITY.R7: a topic of one replica with min.insync.replicas 2 takes an acks=all
  Produce (0) on tansu as on Apache Kafka, which caps the effective minimum at the replica count
  (Partition.effectiveMinIsr), so R7 needs 3 brokers and is SKIP on tansu's one;
* DURABILITY.R1, R5: records acknowledged with acks=all and a committed group offset, then
  kill -9 of the process and a start on the same port: the topic and the offset are gone.
"""

import asyncio
import signal
import time
import uuid

from conformance.client.wire import Connection
from conformance.protocol.codec import Codec
from conformance.protocol.records import build_batch, encode_batch
from conformance.targets.tansu import NODE_ID, TansuTarget

PRODUCE, METADATA, OFFSET_COMMIT, OFFSET_FETCH, CREATE_TOPICS = 0, 3, 8, 9, 19


async def call(codec, ep, api, version, body):
    conn = await Connection.open(ep.host, ep.port, codec=codec, timeout=3)
    try:
        return (await conn.request(api, version, body, timeout=10)).body
    finally:
        await conn.close()


def create(name, min_isr):
    return {
        "Topics": [
            {
                "Name": name,
                "NumPartitions": 1,
                "ReplicationFactor": 1,
                "Assignments": [],
                "Configs": [{"Name": "min.insync.replicas", "Value": str(min_isr)}],
            }
        ],
        "timeoutMs": 10000,
        "validateOnly": False,
    }


def produce(name, value):
    batch = encode_batch(build_batch([(int(time.time() * 1000), None, value)]))
    return {
        "TransactionalId": None,
        "Acks": -1,
        "TimeoutMs": 5000,
        "TopicData": [{"Name": name, "PartitionData": [{"Index": 0, "Records": batch}]}],
    }


async def before(codec, ep, topic, group):
    got = await call(codec, ep, CREATE_TOPICS, 5, create(topic, 2))
    print(
        f"CreateTopics {topic} (1 replica, min.insync.replicas 2): error {got['Topics'][0]['ErrorCode']}"
    )
    part = (await call(codec, ep, PRODUCE, 9, produce(topic, b"v")))["Responses"][0][
        "PartitionResponses"
    ][0]
    print(
        f"  acks=all Produce: error {part['ErrorCode']}, base offset {part['BaseOffset']} (Apache Kafka: 0 as well, the minimum capped at 1 replica)"
    )
    commit = {
        "GroupId": group,
        "GenerationIdOrMemberEpoch": -1,
        "MemberId": "",
        "GroupInstanceId": None,
        "Topics": [
            {
                "Name": topic,
                "Partitions": [
                    {"PartitionIndex": 0, "CommittedOffset": 7, "CommittedMetadata": "m"}
                ],
            }
        ],
    }
    got = await call(codec, ep, OFFSET_COMMIT, 2, {**commit, "RetentionTimeMs": -1})
    print(
        f"  OffsetCommit {group} offset 7: error {got['Topics'][0]['Partitions'][0]['ErrorCode']}"
    )


async def after(codec, ep, topic, group):
    md = await call(
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
    print(
        f"  after kill -9 and a start on the same port: Metadata of {topic}: error {md['Topics'][0]['ErrorCode']}, partitions {len(md['Topics'][0]['Partitions'])}"
    )
    got = await call(
        codec,
        ep,
        OFFSET_FETCH,
        3,
        {
            "GroupId": group,
            "Topics": [{"Name": topic, "PartitionIndexes": [0]}],
            "RequireStable": False,
        },
    )
    p = got["Topics"][0]["Partitions"][0]
    print(
        f"  OffsetFetch {group}: offset {p['CommittedOffset']}, metadata {p['Metadata']!r}, error {p['ErrorCode']} (committed 7 before the kill)"
    )


def main() -> None:
    codec = Codec.from_specs().strict()
    target = TansuTarget()
    target.start()
    try:
        ep = target.bootstrap[0]
        topic, group = f"confirm-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
        print(f"tansu {target.version} (memory storage)")
        asyncio.run(before(codec, ep, topic, group))
        target.signal_node(NODE_ID, signal.SIGKILL)
        target.start_node(NODE_ID)
        asyncio.run(after(codec, ep, topic, group))
    finally:
        target.stop()


if __name__ == "__main__":
    main()
