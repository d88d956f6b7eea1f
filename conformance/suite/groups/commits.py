"""OffsetCommit and OffsetFetch bodies of every version, and their answers as plain tables: the
group coordinator's offset APIs, used by the groups and offsets tests alike (here, so that the
offsets package imports the groups package and never the other way).

``Offsets`` maps (topic, partition) to (offset, metadata); answers come back as (topic,
partition) -> (offset, metadata, error code), whichever layout the version uses (v8+ nests the
topics under Groups; v10 names topics by id: ``kit.topic_ids`` gives bodies both, and reads
answers back to names).
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from conformance.protocol import ApiKey
from conformance.protocol.kafka_errors import error_name
from conformance.suite.groups.members import coordinator_request
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.topic_ids import complete, name_both_ways, name_of

Partition = tuple[str, int]
Offsets = dict[Partition, tuple[int, str | None]]
Fetched = dict[Partition, tuple[int, str | None, int]]


def commit_body(
    group: str, offsets: Offsets, *, generation: int = -1, member_id: str = ""
) -> dict[str, Any]:
    topics: dict[str, list[dict]] = {}
    for (t, p), (offset, metadata) in sorted(offsets.items()):
        topics.setdefault(t, []).append(
            {"PartitionIndex": p, "CommittedOffset": offset, "CommittedMetadata": metadata}
        )
    return {
        "GroupId": group,
        "GenerationIdOrMemberEpoch": generation,
        "MemberId": member_id,
        "GroupInstanceId": None,
        "Topics": [{"Name": t, "Partitions": ps} for t, ps in topics.items()],
    }


def commit(
    harness: Harness,
    conn: SyncConnection,
    group: str,
    offsets: Offsets,
    *,
    generation: int = -1,
    member_id: str = "",
    version: int | None = None,
) -> dict[Partition, int]:
    """OffsetCommit: the error code of every partition in the answer."""
    v = version if version is not None else harness.pick_version(ApiKey.OFFSET_COMMIT, "1+")
    body = commit_body(group, offsets, generation=generation, member_id=member_id)
    ids = name_both_ways(harness, ApiKey.OFFSET_COMMIT, v, body["Topics"])
    got = coordinator_request(harness, conn, ApiKey.OFFSET_COMMIT, v, body).body
    return {
        (name_of(t, ids), p["PartitionIndex"]): p["ErrorCode"]
        for t in got["Topics"]
        for p in t["Partitions"]
    }


def fetch_body(
    harness: Harness, group: str, version: int, partitions: list[Partition] | None
) -> tuple[dict[str, Any], dict[str, UUID]]:
    """OffsetFetch's body, and the topic ids it names (v10; empty before)."""
    topics: list[dict] | None = None
    ids: dict[str, UUID] = {}
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(partitions):
            by_topic.setdefault(t, []).append(p)
        topics = [{"Name": t, "PartitionIndexes": ps} for t, ps in by_topic.items()]
        ids = name_both_ways(harness, ApiKey.OFFSET_FETCH, version, topics)
    if version >= 8:
        entry = {"GroupId": group, "MemberId": None, "MemberEpoch": -1, "Topics": topics}
        return {"Groups": [entry], "RequireStable": False}, ids
    return {"GroupId": group, "Topics": topics, "RequireStable": False}, ids


def fetch(
    harness: Harness,
    conn: SyncConnection,
    group: str,
    partitions: list[Partition] | None,
    *,
    version: int | None = None,
    req: str = "OFFSETS.R1",
) -> Fetched:
    """OffsetFetch of ``partitions`` (None: all the group has; v2+), failing ``req`` on a
    top-level error."""
    v = (
        version
        if version is not None
        else harness.pick_version(ApiKey.OFFSET_FETCH, "1+" if partitions is not None else "2+")
    )
    body, ids = fetch_body(harness, group, v, partitions)
    got = coordinator_request(harness, conn, ApiKey.OFFSET_FETCH, v, body).body
    entry = got["Groups"][0] if v >= 8 else got
    code = entry.get("ErrorCode", 0)
    verify.check(
        code == 0,
        f"OffsetFetch v{v} of group {group}: error {code} ({error_name(code)})",
        req,
    )
    complete(harness, entry["Topics"], ids)
    return {
        (name_of(t, ids), p["PartitionIndex"]): (
            p["CommittedOffset"],
            p["Metadata"],
            p["ErrorCode"],
        )
        for t in entry["Topics"]
        for p in t["Partitions"]
    }
