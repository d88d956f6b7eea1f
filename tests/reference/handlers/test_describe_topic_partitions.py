"""DescribeTopicPartitions as Kafka 4.4.0 answers it (probed on the wire, issue 37): sorted
topics, pages of ResponsePartitionLimit partitions with NextCursor, an unknown topic with its
error and authorized operations, a negative cursor partition INVALID_REQUEST per topic asked."""

from __future__ import annotations

import asyncio

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, ErrorCode
from tests.reference.data_plane import CODEC
from tests.reference.handlers.test_produce_fetch import run

E = ErrorCode
TOPIC = "dtp-three"


def test_describe_topic_partitions_pages_as_kafka(shared_cluster) -> None:
    async def main():
        host, port = shared_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conn = await Connection.open(host, int(port), codec=CODEC)

        async def describe(names: list[str], limit: int, cursor: dict | None = None):
            body = {
                "Topics": [{"Name": n} for n in names],
                "ResponsePartitionLimit": limit,
                "Cursor": cursor,
            }
            r = (await conn.request(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0, body)).body
            topics = [
                (t["Name"], t["ErrorCode"], [p["PartitionIndex"] for p in t["Partitions"]])
                for t in r["Topics"]
            ]
            return topics, r["NextCursor"], r["Topics"]

        try:
            topic = {"Name": TOPIC, "NumPartitions": 3, "ReplicationFactor": 1}
            body = {"Topics": [topic], "timeoutMs": 30000}
            created = await conn.request(ApiKey.CREATE_TOPICS, 7, body)
            assert created.body["Topics"][0]["ErrorCode"] in (0, E.TOPIC_ALREADY_EXISTS)
            for _ in range(50):  # until this broker's metadata has it
                if (await describe([TOPIC], 10))[0][0][1] == 0:
                    break
                await asyncio.sleep(0.1)
            got, cursor, _ = await describe([TOPIC, "zz-none"], 2)
            assert (got, cursor) == (
                [(TOPIC, 0, [0, 1])],
                {"TopicName": TOPIC, "PartitionIndex": 2},
            )
            got, cursor, _ = await describe([TOPIC, "zz-none"], 2000, cursor)
            assert (got, cursor) == (
                [(TOPIC, 0, [2]), ("zz-none", E.UNKNOWN_TOPIC_OR_PARTITION, [])],
                None,
            )
            got, cursor, _ = await describe([TOPIC, "zz-none"], 3)
            assert (got, cursor) == (
                [(TOPIC, 0, [0, 1, 2])],
                {"TopicName": "zz-none", "PartitionIndex": 0},
            )
            _, _, raw = await describe(["zz-none"], 3)
            assert raw[0]["TopicAuthorizedOperations"] > 0
            got, cursor, _ = await describe([TOPIC], 5, {"TopicName": TOPIC, "PartitionIndex": -1})
            assert (got, cursor) == ([(TOPIC, E.INVALID_REQUEST, [])], None)
            every, _, _ = await describe([], 2000)
            names = [name for name, _, _ in every]
            assert TOPIC in names and names == sorted(names)
        finally:
            await conn.close()

    run(main())
