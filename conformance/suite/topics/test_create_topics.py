"""CreateTopics' refusals and what a creation makes (TOPICS.R1-R6), on fresh suite names.

The refusals (R1-R4) are judged at the oldest and the newest CreateTopics version the target
advertises (issue 37): the versions differ in what they send (v4 lets -1 mean the broker's
default partition count and replication factor, v5 answers the topic's configs, v7 its id)."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, run_property
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import oldest_and_newest
from conformance.suite.kit.provision import topic_body
from conformance.suite.kit.records_io import quiet_version
from conformance.suite.kit.safety import fresh_name
from conformance.suite.topics import admin
from conformance.suite.topics.names import ILLEGAL_NAMES


def shown(name: str) -> str:
    return repr(name if len(name) <= 40 else f"{name[:20]}...({len(name)} characters)")


def not_created(harness: Harness, name: str, req: str, why: str) -> None:
    entry, _ = admin.metadata(harness, name, req)
    if entry["ErrorCode"] == 0:
        admin.delete(harness, name, req)  # the target created it: remove what we made
    verify.check(
        entry["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        f"after {why}, Metadata for {shown(name)} answers ErrorCode {entry['ErrorCode']}, "
        "expected 3 (UNKNOWN_TOPIC_OR_PARTITION): something was created",
        req,
    )


#: disruptive: a target that creates an illegal name is sent DeleteTopics of it, and tansu 0.6,
#: which creates a topic named '', deletes every topic's records with it (its object-store prefix
#: is every topic's): beside other tests, their logs emptied under them (LOG.R20 FAILed so
#: in a concurrent tansu run; tests/targets/test_tansu_empty_topic_name.py)
@conformance(
    "topics/create/illegal-name-refused", "TOPICS.R1", api=ApiKey.CREATE_TOPICS, disruptive=True
)
def test_illegal_names_are_refused(harness: Harness) -> None:
    versions = oldest_and_newest(harness, ApiKey.CREATE_TOPICS, "0+")

    def check(name: str) -> None:
        for version in versions:
            body = topic_body(name, 1, version)
            entry = admin.create(harness, body, "TOPICS.R1", version=version)
            if entry["ErrorCode"] == 0:
                admin.delete(harness, name, "TOPICS.R1")
            verify.check(
                entry["ErrorCode"] == ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"CreateTopics v{version} of the illegal name {shown(name)}: ErrorCode "
                f"{entry['ErrorCode']}, expected 17 (INVALID_TOPIC_EXCEPTION)",
                "TOPICS.R1",
            )

    run_property(harness, ILLEGAL_NAMES, check)


@conformance("topics/create/existing-refused", "TOPICS.R2", api=ApiKey.CREATE_TOPICS)
def test_an_existing_topic_is_refused(harness: Harness) -> None:
    for version in oldest_and_newest(harness, ApiKey.CREATE_TOPICS, "0+"):
        existing_refused(harness, version)


def existing_refused(harness: Harness, version: int) -> None:
    name = fresh_name("topics-existing")
    first = admin.create(harness, topic_body(name, 1, version), "TOPICS.R2", version=version)
    verify.check(first["ErrorCode"] == 0, f"CreateTopics of {name}: {first}", "TOPICS.R2")
    try:
        again = admin.create(harness, topic_body(name, 3, version), "TOPICS.R2", version=version)
        entry, _ = admin.settled(harness, name, "TOPICS.R2", 1)
        verify.check(
            again["ErrorCode"] == ErrorCode.TOPIC_ALREADY_EXISTS and len(entry["Partitions"]) == 1,
            f"CreateTopics v{version} of the existing {name} (1 partition) with 3 partitions: "
            f"ErrorCode {again['ErrorCode']}, then Metadata lists {len(entry['Partitions'])} "
            "partitions; expected 36 (TOPIC_ALREADY_EXISTS) and 1",
            "TOPICS.R2",
        )
    finally:
        admin.delete(harness, name, "TOPICS.R2")


@conformance(
    "topics/create/replication-factor-above-brokers", "TOPICS.R3", api=ApiKey.CREATE_TOPICS
)
def test_a_replication_factor_above_the_brokers_is_refused(harness: Harness) -> None:
    live = len(cluster.brokers(harness))
    for version in oldest_and_newest(harness, ApiKey.CREATE_TOPICS, "0+"):
        name = fresh_name("topics-rf")
        entry = dict(topic_body(name, 1, version), ReplicationFactor=live + 1)
        answer = admin.create(harness, entry, "TOPICS.R3", version=version)
        verify.check(
            answer["ErrorCode"] == ErrorCode.INVALID_REPLICATION_FACTOR,
            f"CreateTopics v{version} with replication factor {live + 1} ({live} live brokers "
            f"in Metadata): ErrorCode {answer['ErrorCode']}, expected 38 "
            "(INVALID_REPLICATION_FACTOR)",
            "TOPICS.R3",
        )
        not_created(harness, name, "TOPICS.R3", f"the refused creation (v{version})")


@conformance("topics/create/non-positive-partitions", "TOPICS.R4", api=ApiKey.CREATE_TOPICS)
def test_non_positive_partition_counts_are_refused(harness: Harness) -> None:
    versions = oldest_and_newest(harness, ApiKey.CREATE_TOPICS, "0+")
    for version, count in ((v, c) for v in versions for c in (0, -2)):
        name = fresh_name("topics-partitions")
        body = topic_body(name, count, version)
        answer = admin.create(harness, body, "TOPICS.R4", version=version)
        verify.check(
            answer["ErrorCode"] == ErrorCode.INVALID_PARTITIONS,
            f"CreateTopics v{version} with NumPartitions {count}: ErrorCode "
            f"{answer['ErrorCode']}, expected 37 (INVALID_PARTITIONS)",
            "TOPICS.R4",
        )
        not_created(harness, name, "TOPICS.R4", f"NumPartitions {count} (v{version})")


@conformance("topics/create/validate-only", "TOPICS.R5", api=ApiKey.CREATE_TOPICS)
def test_validate_only_creates_nothing(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.CREATE_TOPICS, "1+")
    name = fresh_name("topics-validate")
    answer = admin.create(
        harness, topic_body(name, 2, version), "TOPICS.R5", validate_only=True, version=version
    )
    verify.check(
        answer["ErrorCode"] == 0,
        f"CreateTopics v{version} ValidateOnly of a valid topic: ErrorCode "
        f"{answer['ErrorCode']}, expected 0",
        "TOPICS.R5",
    )
    not_created(harness, name, "TOPICS.R5", "a ValidateOnly CreateTopics")
    real = admin.create(harness, topic_body(name, 2, version), "TOPICS.R5", version=version)
    admin.delete(harness, name, "TOPICS.R5")
    verify.check(
        real["ErrorCode"] == 0,
        f"CreateTopics of {name} after validating it: ErrorCode {real['ErrorCode']}, expected 0",
        "TOPICS.R5",
    )


@conformance("topics/create/shows-in-metadata", "TOPICS.R6", api=ApiKey.METADATA)
def test_a_created_topic_shows_in_metadata(harness: Harness) -> None:
    rf = min(2, len(cluster.brokers(harness)))
    harness.pick_version(ApiKey.METADATA, "1+")
    version = quiet_version(harness, ApiKey.CREATE_TOPICS)
    name = fresh_name("topics-layout")
    entry = dict(topic_body(name, 3, version), ReplicationFactor=rf)
    created = admin.create(harness, entry, "TOPICS.R6", version=version)
    try:
        verify.check(created["ErrorCode"] == 0, f"CreateTopics of {name}: {created}", "TOPICS.R6")
        listed, answer = admin.settled(harness, name, "TOPICS.R6", 3)
        problems = admin.layout_problems(listed, answer, 3, rf)
        verify.check(
            not problems,
            f"Metadata of {name}, created with 3 partitions and replication factor {rf}: "
            + "; ".join(problems),
            "TOPICS.R6",
        )
    finally:
        admin.delete(harness, name, "TOPICS.R6")
