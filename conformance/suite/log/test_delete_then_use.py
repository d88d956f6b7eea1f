"""A deleted topic's log is gone, and a topic created again under its name starts empty
(LOG.R17): produce, fetch and list after the delete, then again after the re-creation."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite import verify
from conformance.suite.harness import Harness
from conformance.suite.meta import conformance
from conformance.suite.partitions import (
    LATEST,
    SuiteTopic,
    batch_bytes,
    now_ms,
    quiet_version,
    topic_body,
)


@conformance("log/topic/delete-then-use", "LOG.R17", api=ApiKey.PRODUCE)
def test_a_deleted_topic_is_gone_and_comes_back_empty(harness: Harness) -> None:
    harness.pick_version(ApiKey.DELETE_TOPICS)
    harness.pick_version(ApiKey.PRODUCE, "3+")
    with SuiteTopic.create(harness, "log-recreated") as topic:
        topic.produce_ok(0, [(now_ms(), None, f"old {i}".encode()) for i in range(3)], "LOG.R17")
        topic.delete()
        where = f"{topic.name}-0 after DeleteTopics"
        answer = topic.produce(0, batch_bytes([(now_ms(), None, b"late")]), "LOG.R17")
        fetched = topic.fetch(0, 0, "LOG.R17")
        listed = topic.list_offset(0, LATEST, "LOG.R17")
        codes = (answer["ErrorCode"], fetched["ErrorCode"], listed["ErrorCode"])
        verify.check(
            codes == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,) * 3,
            f"Produce, Fetch and ListOffsets of {where}: ErrorCodes {codes}, expected 3 "
            "(UNKNOWN_TOPIC_OR_PARTITION) for each",
            "LOG.R17",
        )
        version = quiet_version(harness, ApiKey.CREATE_TOPICS)
        body = {
            "Topics": [topic_body(topic.name, 1, version)],
            "TimeoutMs": 10000,
            "validateOnly": False,
        }
        created = harness.connect().request(ApiKey.CREATE_TOPICS, version, body).body
        code = created["Topics"][0]["ErrorCode"]
        verify.check(
            code == 0,
            f"CreateTopics v{version} of {topic.name} again after deleting it: ErrorCode {code}, "
            "expected 0",
            "LOG.R17",
        )
        topic.learn_leaders()
        base = topic.produce_ok(0, [(now_ms(), None, b"new")], "LOG.R17")
        _, _, records = topic.fetch_records(0, 0, "LOG.R17")
        latest = topic.list_offset(0, LATEST, "LOG.R17")["Offset"]
        verify.check(
            (base, [r.value for r in records], latest) == (0, [b"new"], 1),
            f"{topic.name} created again: the first batch got offset {base}, a Fetch from 0 "
            f"returned {[r.value for r in records]}, LATEST is {latest}; expected 0, [b'new'] "
            "and 1 (nothing of the deleted log)",
            "LOG.R17",
        )
