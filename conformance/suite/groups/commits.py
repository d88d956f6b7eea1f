"""OffsetCommit and OffsetFetch bodies of every version, and their answers as plain tables: the
group coordinator's offset APIs, used by the groups and offsets tests alike (here, so that the
offsets package imports the groups package and never the other way).

``Offsets`` maps (topic, partition) to (offset, metadata); answers come back as (topic,
partition) -> (offset, metadata, error code), whichever layout the version uses (v8+ nests the
topics under Groups).
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey
from conformance.protocol.kafka_errors import error_name
from conformance.suite.groups.members import coordinator_request
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection

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
    got = coordinator_request(harness, conn, ApiKey.OFFSET_COMMIT, v, body).body
    return {
        (t["Name"], p["PartitionIndex"]): p["ErrorCode"]
        for t in got["Topics"]
        for p in t["Partitions"]
    }


def fetch_body(group: str, version: int, partitions: list[Partition] | None) -> dict[str, Any]:
    topics: list[dict] | None = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(partitions):
            by_topic.setdefault(t, []).append(p)
        topics = [{"Name": t, "PartitionIndexes": ps} for t, ps in by_topic.items()]
    if version >= 8:
        entry = {"GroupId": group, "MemberId": None, "MemberEpoch": -1, "Topics": topics}
        return {"Groups": [entry], "RequireStable": False}
    return {"GroupId": group, "Topics": topics, "RequireStable": False}


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
    got = coordinator_request(
        harness, conn, ApiKey.OFFSET_FETCH, v, fetch_body(group, v, partitions)
    ).body
    entry = got["Groups"][0] if v >= 8 else got
    code = entry.get("ErrorCode", 0)
    verify.check(
        code == 0,
        f"OffsetFetch v{v} of group {group}: error {code} ({error_name(code)})",
        req,
    )
    return {
        (t["Name"], p["PartitionIndex"]): (p["CommittedOffset"], p["Metadata"], p["ErrorCode"])
        for t in entry["Topics"]
        for p in t["Partitions"]
    }
