"""Hand confirmation, on the wire, of the Kafka 4.4.0 answers the differential run left as
explained differences (conformance/diff/mask.json: kafka-share-summary-negative-partition,
kafka-share-summary-missing-partition, kraft-create-topics-deadline): raw requests with the
project's codec and wire client, no suite code, one broker as the kafka target starts it.

- CreateTopics v7, validateOnly, a config with a null value: timeoutMs 60000 (the config is
  refused) and timeoutMs -1 (a KRaft controller's deadline already past: every topic timed out);
- DescribeShareGroupOffsets v1 of a group that does not exist, on a 2-partition topic: partition
  0, partition -1 (the state persister refuses it: the group answered UNKNOWN_SERVER_ERROR) and
  partition 7 (the share coordinator finds no such partition and the read is retried: no answer).

Usage: python -m confirmations.kafka_share_offsets_and_deadlines 4.4.0
"""

import asyncio

from confirmations.launch import connect, each_target
from conformance.protocol.codec import Codec

CREATE_TOPICS, DESCRIBE_SHARE_GROUP_OFFSETS = 19, 90
TOPIC, WAIT = "kc-confirm-share", 8.0


async def ask(ep, codec, api, version, body):
    conn = await connect(ep.host, ep.port, codec)
    try:
        return (await conn.request(api, version, body, timeout=WAIT)).body
    except TimeoutError:
        return f"no answer within {WAIT:.0f} s"
    finally:
        await conn.close()


async def probe(target) -> None:
    codec = Codec.from_specs(strict=False).strict()
    ep = target.bootstrap[0]
    print(f"Apache Kafka {target.version} ({target.store}), bootstrap {ep.host}:{ep.port}")
    null_config = {"Name": "x", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": []}
    null_config["Configs"] = [{"Name": "retention.ms", "Value": None}]
    for timeout in (60000, -1):
        body = {"Topics": [null_config], "timeoutMs": timeout, "validateOnly": True}
        got = await ask(ep, codec, CREATE_TOPICS, 7, body)
        topics = [(t["Name"], t["ErrorCode"], t["ErrorMessage"]) for t in got["Topics"]]
        print(f"  CreateTopics v7 validateOnly, a null config value, timeoutMs {timeout}: {topics}")
    topic = {"Name": TOPIC, "NumPartitions": 2, "ReplicationFactor": 1, "Assignments": []}
    topic["Configs"] = []
    created = await ask(ep, codec, CREATE_TOPICS, 7, {"Topics": [topic], "timeoutMs": 30000})
    print(f"  CreateTopics {TOPIC} (2 partitions): {created['Topics'][0]['ErrorCode']}")
    await asyncio.sleep(2)
    for partition in (0, -1, 7):
        group = f"kc-confirm-group-{partition}"
        body = {
            "Groups": [
                {"GroupId": group, "Topics": [{"TopicName": TOPIC, "Partitions": [partition]}]}
            ]
        }
        got = await ask(ep, codec, DESCRIBE_SHARE_GROUP_OFFSETS, 1, body)
        print(f"  DescribeShareGroupOffsets v1, {group}, {TOPIC} partition {partition}: {got}")


if __name__ == "__main__":
    each_target(probe)
