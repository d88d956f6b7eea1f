"""A deleted topic's log is gone, and a topic created again under its name starts empty
(LOG.R17): produce, fetch and list after the delete (until all three are refused, bounded:
brokers learn of a deletion after the controller answered it), then again after the
re-creation (retried while the name is still taken, as in Kafka's ZooKeeper mode). Where the
suite may not create topics, the topic is one the target auto-created, and is made again by
auto-creation."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import (
    LATEST,
    PRODUCE_VERSIONS,
    SuiteTopic,
    batch_bytes,
    create_again,
    now_ms,
)
from conformance.suite.kit.provision import auto_create, create_topics_usable, topic_body
from conformance.suite.kit.records_io import admin_call, quiet_version

#: how long the partition's leader may go on serving a topic after DeleteTopics answered: a
#: broker learns of the deletion a moment later (Apache Kafka's admin client documents that
#: brokers may take several seconds to learn that a topic is gone)
GONE_WITHIN = 10.0


@conformance("log/topic/delete-then-use", "LOG.R17", api=ApiKey.PRODUCE)
def test_a_deleted_topic_is_gone_and_comes_back_empty(harness: Harness) -> None:
    harness.pick_version(ApiKey.DELETE_TOPICS)
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    # a topic the user gave is never deleted: this test takes only one the suite made
    with SuiteTopic.create(harness, "log-recreated", given=False) as topic:
        topic.produce_ok(0, [(now_ms(), None, f"old {i}".encode()) for i in range(3)], "LOG.R17")
        topic.delete()
        where = f"{topic.name}-0 after DeleteTopics"
        deadline = time.monotonic() + GONE_WITHIN
        while True:
            answer = topic.produce(0, batch_bytes([(now_ms(), None, b"late")]), "LOG.R17")
            fetched = topic.fetch(0, 0, "LOG.R17")
            listed = topic.list_offset(0, LATEST, "LOG.R17")
            codes = (answer["ErrorCode"], fetched["ErrorCode"], listed["ErrorCode"])
            if codes == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,) * 3:
                break
            if time.monotonic() > deadline:
                where += f" (asked for {GONE_WITHIN:.0f} s)"
                break
            time.sleep(0.2)
        verify.check(
            codes == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,) * 3,
            f"Produce, Fetch and ListOffsets of {where}: ErrorCodes {codes}, expected 3 "
            "(UNKNOWN_TOPIC_OR_PARTITION) for each",
            "LOG.R17",
        )
        if create_topics_usable(harness) is None:
            version = quiet_version(harness, ApiKey.CREATE_TOPICS)
            body = {
                "Topics": [topic_body(topic.name, 1, version)],
                "timeoutMs": 10000,
                "validateOnly": False,
            }

            def send() -> dict:
                return admin_call(harness, ApiKey.CREATE_TOPICS, version, body)

            code = create_again(send)["Topics"][0]["ErrorCode"]
            how, answered = f"CreateTopics v{version}", f"ErrorCode {code}, expected 0"
        else:  # the topic was auto-created (given=False): made again the same way
            how, count, error = auto_create(harness, topic.name)
            code, answered = (0 if count else -1), error or f"{count} partitions"
        verify.check(
            code == 0,
            f"{how} of {topic.name} again after deleting it: {answered}",
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
