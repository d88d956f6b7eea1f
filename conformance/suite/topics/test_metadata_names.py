"""What Metadata says of names it does not know (TOPICS.R9, R10): an illegal name is an error,
not a topic, and a missing topic is not created when the request says not to. Both at the
oldest and the newest Metadata version the target advertises (issue 37: v4 adds
AllowAutoTopicCreation, v10 topic ids, v12 looks topics up by id)."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, run_property
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import oldest_and_newest
from conformance.suite.kit.safety import fresh_name
from conformance.suite.topics import admin
from conformance.suite.topics.names import ILLEGAL_NAMES

#: how long after the first answer the topic is looked for again (an auto-creation would be
#: under way by then)
SETTLE_S = 0.3


@conformance("topics/metadata/illegal-name-is-an-error", "TOPICS.R9", api=ApiKey.METADATA)
def test_an_illegal_name_is_an_error(harness: Harness) -> None:
    versions = oldest_and_newest(harness, ApiKey.METADATA, "1+")

    def check(name: str) -> None:
        for version in versions:
            entry, _ = admin.metadata(harness, name, "TOPICS.R9", within=str(version))
            verify.check(
                entry["ErrorCode"] == ErrorCode.INVALID_TOPIC_EXCEPTION,
                f"Metadata v{version} for the illegal name {name[:40]!r}: ErrorCode "
                f"{entry['ErrorCode']}, expected 17 (INVALID_TOPIC_EXCEPTION)",
                "TOPICS.R9",
            )

    run_property(harness, ILLEGAL_NAMES, check)


@conformance("topics/metadata/no-auto-creation", "TOPICS.R10", api=ApiKey.METADATA)
def test_no_auto_creation_when_the_request_forbids_it(harness: Harness) -> None:
    for version in oldest_and_newest(harness, ApiKey.METADATA, "4+"):
        not_auto_created(harness, version)


def not_auto_created(harness: Harness, version: int) -> None:
    name = fresh_name("topics-not-auto-created")
    codes = []
    for attempt in range(2):
        if attempt:
            time.sleep(SETTLE_S)
        entry, _ = admin.metadata(harness, name, "TOPICS.R10", within=str(version))
        codes.append(entry["ErrorCode"])
    if any(c != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION for c in codes):
        admin.delete(harness, name, "TOPICS.R10")  # the target created it: remove it
    verify.check(
        codes == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION] * 2,
        f"Metadata v{version} with AllowAutoTopicCreation false for the missing {name}, "
        f"asked twice {SETTLE_S} s apart: ErrorCodes {codes}, expected 3 "
        "(UNKNOWN_TOPIC_OR_PARTITION) both times",
        "TOPICS.R10",
    )
