"""The topic admin requests of the TOPICS tests, each returning the one topic's entry.

Mutations go to the bootstrap, and to the broker Metadata names as controller where that
answers NOT_CONTROLLER, as Kafka's admin client sends them (``records_io.admin_call``);
Metadata goes to the bootstrap and never auto-creates (AllowAutoTopicCreation false where the
version has it). A broker learns of a change a moment
after the controller answered it (Apache Kafka's brokers apply the controller's log
asynchronously, and its admin client documents that a created topic may take a while to show
everywhere), so the checks of what Metadata shows after a change read it once it has settled
(``settled``, bounded). An unanswered or undecodable request fails the requirement the caller
names.
"""

from __future__ import annotations

import time
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.partitions import create_again
from conformance.suite.kit.provision import topic_body
from conformance.suite.kit.records_io import admin_call, quiet_version


def create(
    harness: Harness,
    entry: dict[str, Any],
    req: str,
    *,
    validate_only: bool = False,
    version: int | None = None,
) -> dict[str, Any]:
    """CreateTopics of one topic entry (``topic_body``); its answer entry."""
    v = version if version is not None else quiet_version(harness, ApiKey.CREATE_TOPICS)
    body = {"Topics": [entry], "timeoutMs": 10000, "validateOnly": validate_only}
    answer = admin_call(harness, ApiKey.CREATE_TOPICS, v, body, served=req)
    topics = answer["Topics"]
    verify.check(
        len(topics) == 1 and topics[0]["Name"] == entry["Name"],
        f"CreateTopics v{v} of {entry['Name']!r}: answered for {[t['Name'] for t in topics]}",
        req,
    )
    return topics[0]


def create_new(harness: Harness, name: str, partitions: int, req: str, **kw: Any) -> dict:
    version = quiet_version(harness, ApiKey.CREATE_TOPICS)
    return create(harness, topic_body(name, partitions, version), req, version=version, **kw)


def create_deleted(harness: Harness, name: str, partitions: int, req: str) -> dict:
    """``create_new`` of a name the test deleted, retried while the name is still taken
    (``partitions.create_again``)."""
    return create_again(lambda: create_new(harness, name, partitions, req), lambda e: e)


def delete(harness: Harness, name: str, req: str) -> dict[str, Any]:
    """DeleteTopics of one topic by name; its answer entry."""
    v = quiet_version(harness, ApiKey.DELETE_TOPICS)
    body: dict[str, Any] = {"TimeoutMs": 10000}
    if v >= 6:
        body["Topics"] = [{"Name": name, "TopicId": ZERO_UUID}]
    else:
        body["TopicNames"] = [name]
    answer = admin_call(harness, ApiKey.DELETE_TOPICS, v, body, served=req)
    entries = answer["Responses"]
    verify.check(len(entries) == 1, f"DeleteTopics v{v} of {name}: {len(entries)} entries", req)
    return entries[0]


def create_partitions(harness: Harness, name: str, count: int, req: str) -> dict[str, Any]:
    """CreatePartitions of one topic to ``count``; its answer entry."""
    v = quiet_version(harness, ApiKey.CREATE_PARTITIONS)
    body = {
        "Topics": [{"Name": name, "Count": count, "Assignments": None}],
        "TimeoutMs": 10000,
        "ValidateOnly": False,
    }
    answer = admin_call(harness, ApiKey.CREATE_PARTITIONS, v, body, served=req)
    entries = answer["Results"]
    verify.check(len(entries) == 1, f"CreatePartitions v{v} of {name}: {len(entries)} entries", req)
    return entries[0]


def metadata(
    harness: Harness, name: str, req: str, *, within: str = "1+", allow_create: bool = False
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Metadata of one topic: (its entry, the whole answer)."""
    body = {"Topics": [{"Name": name}], "AllowAutoTopicCreation": allow_create}
    conn = harness.connect()
    try:  # a version whose answers do not decode: one set-up defect, then another (issue 42)
        got = verify.setup_response(conn, ApiKey.METADATA, body, within, served=req)
    finally:
        conn.close()
    answer = got.body
    v = quiet_version(harness, ApiKey.METADATA, within)
    entries = [t for t in answer["Topics"] if t["Name"] == name]
    verify.check(
        len(entries) == 1,
        f"Metadata v{v} for {name!r}: the answer lists {[t['Name'] for t in answer['Topics']]}",
        req,
    )
    return entries[0], answer


#: how long a change may take to show in the bootstrap broker's Metadata
SETTLE_FOR = 10.0


def settled(
    harness: Harness, name: str, req: str, partitions: int | None, timeout: float = SETTLE_FOR
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Metadata of one topic once it shows what the change made: unknown (``partitions`` None)
    or listed with ``partitions`` partitions, each with a leader. Past ``timeout`` the last
    answer, for the caller's check to judge."""
    deadline = time.monotonic() + timeout
    while True:
        entry, answer = metadata(harness, name, req)
        if partitions is None:
            done = entry["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            parts = entry["Partitions"] or []
            done = (
                entry["ErrorCode"] == ErrorCode.NONE
                and len(parts) == partitions
                and all(p["LeaderId"] >= 0 for p in parts)
            )
        if done or time.monotonic() > deadline:
            return entry, answer
        time.sleep(0.1)


def layout_problems(entry: dict[str, Any], answer: dict[str, Any], partitions: int, rf: int):
    """What is wrong with a created topic's Metadata entry (TOPICS.R6), as sentences."""
    brokers = {b["NodeId"] for b in answer["Brokers"]}
    problems = []
    if entry["ErrorCode"] != 0:
        problems.append(f"ErrorCode {entry['ErrorCode']}")
    indexes = sorted(p["PartitionIndex"] for p in entry["Partitions"])
    if indexes != list(range(partitions)):
        problems.append(f"partitions {indexes}, expected 0..{partitions - 1}")
    for p in entry["Partitions"]:
        where = f"partition {p['PartitionIndex']}"
        if len(p["ReplicaNodes"]) != rf:
            problems.append(f"{where} has replicas {p['ReplicaNodes']}, expected {rf} of them")
        if p["LeaderId"] not in brokers:
            problems.append(f"{where} has leader {p['LeaderId']}, not a listed broker {brokers}")
        if not set(p["IsrNodes"]) <= set(p["ReplicaNodes"]):
            problems.append(f"{where} has ISR {p['IsrNodes']} outside replicas {p['ReplicaNodes']}")
    return problems
