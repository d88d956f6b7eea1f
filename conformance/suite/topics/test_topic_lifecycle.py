"""Deleting, re-creating and growing a topic (TOPICS.R7, R8), on fresh suite names."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.safety import fresh_name
from conformance.suite.topics import admin

#: the first Metadata version that carries topic ids
METADATA_IDS = 10


def topic_id(harness: Harness, name: str, created: dict, req: str):
    """The topic's id from CreateTopics v7+ or Metadata v10+ (None where neither is served)."""
    if created.get("TopicId") not in (None, ZERO_UUID):
        return created["TopicId"]
    _, hi = harness.advertised.get(ApiKey.METADATA, (0, -1))
    if hi < METADATA_IDS:
        return None
    entry, _ = admin.metadata(harness, name, req, within=f"{METADATA_IDS}+")
    return entry.get("TopicId")


@conformance("topics/delete/unknown-then-re-created", "TOPICS.R7", api=ApiKey.DELETE_TOPICS)
def test_a_deleted_topic_is_unknown_and_can_come_back(harness: Harness) -> None:
    harness.pick_version(ApiKey.CREATE_TOPICS)
    harness.pick_version(ApiKey.DELETE_TOPICS)
    name = fresh_name("topics-deleted")
    created = admin.create_new(harness, name, 1, "TOPICS.R7")
    verify.check(created["ErrorCode"] == 0, f"CreateTopics of {name}: {created}", "TOPICS.R7")
    first_id = topic_id(harness, name, created, "TOPICS.R7")
    deleted = admin.delete(harness, name, "TOPICS.R7")
    listed, _ = admin.settled(harness, name, "TOPICS.R7", None)
    again = admin.delete(harness, name, "TOPICS.R7")
    codes = (deleted["ErrorCode"], listed["ErrorCode"], again["ErrorCode"])
    verify.check(
        codes == (0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
        f"DeleteTopics of {name}, then Metadata and DeleteTopics of it: ErrorCodes {codes}, "
        "expected 0, 3 and 3 (UNKNOWN_TOPIC_OR_PARTITION)",
        "TOPICS.R7",
    )
    recreated = admin.create_deleted(harness, name, 1, "TOPICS.R7")
    try:
        verify.check(
            recreated["ErrorCode"] == 0,
            f"CreateTopics of {name} after deleting it: ErrorCode {recreated['ErrorCode']}, "
            "expected 0",
            "TOPICS.R7",
        )
        second_id = topic_id(harness, name, recreated, "TOPICS.R7")
        verify.check(
            first_id is None or (second_id is not None and second_id != first_id),
            f"{name} created again has topic id {second_id}, the deleted one had {first_id}: "
            "expected a new id",
            "TOPICS.R7",
        )
    finally:
        admin.delete(harness, name, "TOPICS.R7")


@conformance("topics/create-partitions/grow-not-shrink", "TOPICS.R8", api=ApiKey.CREATE_PARTITIONS)
def test_partitions_grow_and_do_not_shrink(harness: Harness) -> None:
    harness.pick_version(ApiKey.CREATE_PARTITIONS)
    name = fresh_name("topics-grow")
    created = admin.create_new(harness, name, 1, "TOPICS.R8")
    verify.check(created["ErrorCode"] == 0, f"CreateTopics of {name}: {created}", "TOPICS.R8")
    try:
        admin.settled(harness, name, "TOPICS.R8", 1)
        grown = admin.create_partitions(harness, name, 3, "TOPICS.R8")
        listed, _ = admin.settled(harness, name, "TOPICS.R8", 3)
        verify.check(
            grown["ErrorCode"] == 0 and len(listed["Partitions"]) == 3,
            f"CreatePartitions of {name} from 1 to 3: ErrorCode {grown['ErrorCode']}, then "
            f"Metadata lists {len(listed['Partitions'])} partitions; expected 0 and 3",
            "TOPICS.R8",
        )
        for count in (2, 3):
            refused = admin.create_partitions(harness, name, count, "TOPICS.R8")
            verify.check(
                refused["ErrorCode"] == ErrorCode.INVALID_PARTITIONS,
                f"CreatePartitions of {name} (3 partitions) to {count}: ErrorCode "
                f"{refused['ErrorCode']}, expected 37 (INVALID_PARTITIONS)",
                "TOPICS.R8",
            )
        listed, _ = admin.metadata(harness, name, "TOPICS.R8")
        verify.check(
            len(listed["Partitions"]) == 3,
            f"after the refused CreatePartitions {name} has {len(listed['Partitions'])} "
            "partitions, expected 3",
            "TOPICS.R8",
        )
    finally:
        admin.delete(harness, name, "TOPICS.R8")
