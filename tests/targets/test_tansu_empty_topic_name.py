"""tansu 0.6 creates a topic named '' (TOPICS.R1 FAILs on it), and DeleteTopics of '' deletes
every topic's records: its memory store keeps a topic's objects under ``clusters/<id>/topics/
<name>/``, and the prefix of '' is every topic's. The suite deletes an illegal name the target
created, so topics/create/illegal-name-refused is disruptive: run beside other tests, it emptied
their logs under them (a concurrent tansu run's LOG.R20 'BaseOffset 0; expected 0 and 2', most
likely CI's one LOG.R3 FAIL). Here on the wire, as the suite sends it; should a later tansu keep the
bystander's records, the mark can go."""

from __future__ import annotations

import asyncio
import time

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, Codec
from conformance.suite.kit.partitions import SuiteTopic, batch_bytes, records_of
from conformance.suite.topics import test_create_topics as create_topics
from conformance.targets.tansu import TansuTarget

BYSTANDER = "kc-suite-bystander"


async def _bystander_after_empty_name_deleted(c: Connection) -> tuple[list, list, dict]:
    """A topic with two records, then CreateTopics and DeleteTopics of '': the records fetched
    before and after, and the next Produce's answer."""

    async def create(name: str) -> int:
        topic = {
            "Name": name,
            "NumPartitions": 1,
            "ReplicationFactor": 1,
            "Assignments": [],
            "Configs": [],
        }
        body = {"Topics": [topic], "timeoutMs": 10000, "validateOnly": False}
        got = await c.request(ApiKey.CREATE_TOPICS, 4, body)
        return got.body["Topics"][0]["ErrorCode"]

    async def produce() -> dict:
        records = batch_bytes([(int(time.time() * 1000), b"k", b"v")])
        data = [{"Name": BYSTANDER, "PartitionData": [{"Index": 0, "Records": records}]}]
        body = {"TransactionalId": None, "Acks": -1, "TimeoutMs": 10000, "TopicData": data}
        got = await c.request(ApiKey.PRODUCE, 9, body)
        return got.body["Responses"][0]["PartitionResponses"][0]

    async def offsets() -> list[int]:
        # the suite's own Fetch of a partition at an offset (MaxWaitMs 100, MinBytes 1)
        body = SuiteTopic(None, BYSTANDER, 1).fetch_body(0, 0)  # type: ignore[arg-type]
        got = await c.request(ApiKey.FETCH, 12, body)
        (entry,) = [p for t in got.body["Responses"] for p in t["Partitions"]]
        return [r.offset for r in records_of(entry["Records"])[1]]

    assert await create(BYSTANDER) == 0
    await produce()
    await produce()
    before = await offsets()
    assert await create("") == 0  # TOPICS.R1's FAIL on tansu
    deleted = await c.request(ApiKey.DELETE_TOPICS, 4, {"TopicNames": [""], "TimeoutMs": 10000})
    assert [r["ErrorCode"] for r in deleted.body["Responses"]] == [0]
    return before, await offsets(), await produce()


def test_deleting_the_empty_topic_name_empties_every_topic_on_tansu() -> None:
    target = TansuTarget()
    target.start()
    try:
        ep = target.bootstrap[0]

        async def run() -> tuple[list, list, dict]:
            c = await Connection.open(ep.host, ep.port, codec=Codec.from_specs().strict())
            try:
                return await _bystander_after_empty_name_deleted(c)
            finally:
                await c.close()

        before, after, produced = asyncio.run(run())
    finally:
        target.stop()
    assert before == [0, 1]
    assert (after, produced["ErrorCode"], produced["BaseOffset"]) == ([], 0, 0)
    (mark,) = create_topics.test_illegal_names_are_refused.pytestmark
    assert mark.kwargs["disruptive"]
