"""A topic id no topic has (LOG.R23, issue 37): Produce v13 and Fetch v13+ name topics by the id
Metadata gave, and one naming an id the broker does not know is answered UNKNOWN_TOPIC_ID for
each of its partitions, while the request's other topic, named by its real id, is served as
usual: nothing of the unknown topic's batch lands in it, and nothing is fetched for the unknown
id. Judged at the oldest and newest by-id versions the target advertises."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import batch_bytes, now_ms, oldest_and_newest
from conformance.suite.kit.topic_ids import unknown_id, with_id

REQ = "LOG.R23"
#: the first Produce and Fetch versions naming topics by id
BY_ID = "13+"


def entry(answer: dict[str, Any], topics: str, parts: str, topic_id: uuid.UUID) -> list[dict]:
    return [p for t in answer[topics] if t["TopicId"] == topic_id for p in t[parts]]


@conformance("log/topic-ids/produce-unknown-id", REQ, api=ApiKey.PRODUCE)
def test_produce_to_an_unknown_topic_id_is_refused(harness: Harness) -> None:
    versions = oldest_and_newest(harness, ApiKey.PRODUCE, BY_ID)
    with with_id(harness, "log-unknown-id") as topic:
        stranger = unknown_id(topic)
        for n, v in enumerate(versions):
            body = topic.produce_body(0, batch_bytes([(now_ms(), None, f"known {v}".encode())]))
            body["TopicData"].append(
                {
                    "Name": "",
                    "TopicId": stranger,
                    "PartitionData": [
                        {"Index": 0, "Records": batch_bytes([(now_ms(), None, b"unknown")])}
                    ],
                }
            )
            answer = verify.expect_response(topic.conn(0), ApiKey.PRODUCE, v, body, served=REQ).body
            codes = [
                p["ErrorCode"] for p in entry(answer, "Responses", "PartitionResponses", stranger)
            ]
            verify.check(
                codes == [ErrorCode.UNKNOWN_TOPIC_ID],
                f"Produce v{v} naming topic id {stranger} (no topic has it) beside "
                f"{topic.name}: its partition answered {codes}, expected [100] "
                "(UNKNOWN_TOPIC_ID)",
                REQ,
            )
            mine = entry(answer, "Responses", "PartitionResponses", topic.topic_id)
            verify.check(
                [(p["ErrorCode"], p["BaseOffset"]) for p in mine] == [(0, n)],
                f"Produce v{v} of one record to {topic.name} (id {topic.topic_id}) beside an "
                f"unknown topic id: answered {mine}, expected ErrorCode 0 at BaseOffset {n}",
                REQ,
            )
        values = [r.value for r in topic.fetch_all(0, REQ)]
        want = [f"known {v}".encode() for v in versions]
        verify.check(
            values == want,
            f"{topic.name}-0 after Produce v{'/'.join(map(str, versions))} naming it and an "
            f"unknown topic id: records {values}, expected {want} (nothing of the unknown "
            "topic's batch)",
            REQ,
        )


@conformance("log/topic-ids/fetch-unknown-id", REQ, api=ApiKey.FETCH)
def test_fetch_of_an_unknown_topic_id_is_refused(harness: Harness) -> None:
    versions = oldest_and_newest(harness, ApiKey.FETCH, BY_ID)
    with with_id(harness, "log-unknown-id") as topic:
        stranger = unknown_id(topic)
        topic.produce_ok(0, [(now_ms(), None, b"known")], REQ)
        for v in versions:
            body = topic.fetch_body(0, 0)
            body["Topics"].append(
                {
                    "Topic": "",
                    "TopicId": stranger,
                    "Partitions": [dict(body["Topics"][0]["Partitions"][0])],
                }
            )
            answer = verify.expect_response(topic.conn(0), ApiKey.FETCH, v, body, served=REQ).body
            theirs = entry(answer, "Responses", "Partitions", stranger)
            got = [(p["ErrorCode"], bool(p["Records"])) for p in theirs]
            verify.check(
                got == [(ErrorCode.UNKNOWN_TOPIC_ID, False)],
                f"Fetch v{v} naming topic id {stranger} (no topic has it) beside {topic.name}: "
                f"its partition answered (ErrorCode, has records) {got}, expected "
                "[(100, False)] (UNKNOWN_TOPIC_ID, nothing)",
                REQ,
            )
            mine = entry(answer, "Responses", "Partitions", topic.topic_id)
            verify.check(
                [(p["ErrorCode"], p["HighWatermark"]) for p in mine] == [(0, 1)]
                and bool(mine[0]["Records"]),
                f"Fetch v{v} of {topic.name} (id {topic.topic_id}) beside an unknown topic id: "
                f"answered {[(p['ErrorCode'], p['HighWatermark']) for p in mine]}, expected "
                "ErrorCode 0, high watermark 1 and its record",
                REQ,
            )
