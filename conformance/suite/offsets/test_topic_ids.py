"""Committed offsets by topic id (OFFSETS.R10, issue 37): OffsetCommit v10 and OffsetFetch v10
name topics by the id Metadata gave. A commit naming an id no topic has is answered
UNKNOWN_TOPIC_ID for each of its partitions and stores nothing for it, beside a topic named by
its real id that is committed as usual; an OffsetFetch of all the group has lists only that
topic."""

from __future__ import annotations

import uuid
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.groups.commits import commit_body, fetch
from conformance.suite.groups.members import coordinator_request, find_coordinator
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.records_io import quiet_version
from conformance.suite.kit.safety import fresh_name
from conformance.suite.kit.topic_ids import unknown_id, with_id

REQ = "OFFSETS.R10"
#: the first OffsetCommit / OffsetFetch version naming topics by id
BY_ID = "10+"


@conformance("offsets/topic-ids/commit-unknown-id", REQ, api=ApiKey.OFFSET_COMMIT)
def test_commit_to_an_unknown_topic_id_is_refused(harness: Harness) -> None:
    fv = harness.pick_version(ApiKey.OFFSET_FETCH, BY_ID)
    cv = harness.pick_version(ApiKey.OFFSET_COMMIT, BY_ID)  # noted last: the results name it
    with with_id(harness, "offsets-unknown-id") as topic:
        stranger: uuid.UUID = unknown_id(topic)
        group = fresh_name("group")
        where = find_coordinator(harness, group, quiet_version(harness, ApiKey.FIND_COORDINATOR))
        conn = harness.connect(where.endpoint)
        body = commit_body(group, {(topic.name, 0): (5, "known")})
        body["Topics"][0]["TopicId"] = topic.topic_id
        part = {"PartitionIndex": 0, "CommittedOffset": 7, "CommittedMetadata": "unknown"}
        body["Topics"].append({"Name": "", "TopicId": stranger, "Partitions": [part]})
        answer = coordinator_request(harness, conn, ApiKey.OFFSET_COMMIT, cv, body).body

        def codes(topic_id: uuid.UUID | None) -> list[int]:
            entries: list[dict[str, Any]] = answer["Topics"]
            return [
                p["ErrorCode"] for t in entries if t["TopicId"] == topic_id for p in t["Partitions"]
            ]

        verify.check(
            codes(stranger) == [ErrorCode.UNKNOWN_TOPIC_ID]
            and codes(topic.topic_id) == [ErrorCode.NONE],
            f"OffsetCommit v{cv} to group {group} of {topic.name}-0 (id {topic.topic_id}) and "
            f"partition 0 of topic id {stranger} (no topic has it): answered "
            f"{codes(topic.topic_id)} and {codes(stranger)}, expected [0] and [100] "
            "(UNKNOWN_TOPIC_ID)",
            REQ,
        )
        everything = fetch(harness, conn, group, None, version=fv, req=REQ)
        listed = {tp: v[0] for tp, v in everything.items()}
        verify.check(
            listed == {(topic.name, 0): 5},
            f"OffsetFetch v{fv} of all group {group} has, after that commit: {listed}, "
            f"expected only {topic.name}-0 at 5 (nothing for the unknown id)",
            REQ,
        )
