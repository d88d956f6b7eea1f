"""Producing and fetching a few records over the wire, for checks that need acknowledged data.

Minimal on purpose: one partition, acks=-1, record batch v2 (Produce v3-12, Fetch v4-12, by
topic name). The suite's full client with the KIP-42 interceptor chain lives in conformance/client.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records import build_batch, decode_batches, encode_batch
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.targets.base import Endpoint


@dataclass(frozen=True)
class Acked:
    offset: int
    value: bytes


def controller_endpoint(harness: Harness) -> Endpoint:
    """The broker Metadata names as controller (the bootstrap when it names no listed broker,
    or the target has no Metadata v1)."""
    bootstrap = harness.target.bootstrap[0]
    _, hi = harness.advertised.get(ApiKey.METADATA, (0, -1))
    if hi < 1:
        return bootstrap
    body = {"Topics": [], "AllowAutoTopicCreation": False}
    conn = harness.connect()
    try:
        answer = harness.setup_request(conn, ApiKey.METADATA, body, "1-12").body
    finally:
        conn.close()
    brokers = {b["NodeId"]: Endpoint(b["Host"], b["Port"]) for b in answer["Brokers"]}
    return brokers.get(answer.get("ControllerId", -1), bootstrap)


#: answers that say the suite's principal may not make the change at all
NOT_PERMITTED = frozenset(
    {ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
)


def admin_call(
    harness: Harness,
    api_key: int,
    version: int,
    body: dict,
    served: str | None = None,
    *,
    refusal_skips: bool = True,
) -> dict:
    """A topic mutation (CreateTopics, DeleteTopics, CreatePartitions): sent to the bootstrap,
    and where that answers NOT_CONTROLLER once more to the broker Metadata names as controller,
    as Kafka's admin client does. ZooKeeper-mode Apache Kafka takes topic mutations on its
    controller only; KRaft brokers (and the reference's) forward them (KIP-590). ``served``:
    the requirement an unanswered request fails (else the wire error is raised as is).

    Where every entry is refused for authorization (a cluster whose ACLs do not let the suite's
    principal change topics) the test cannot judge the mutation: MissingPrecondition saying so,
    unless ``refusal_skips`` is False (the caller then reads the refusal itself)."""

    def send(ep: Endpoint | str) -> dict:
        conn = harness.connect(ep)
        if served is None:
            return conn.request(api_key, version, body).body
        return verify.expect_response(conn, api_key, version, body, served=served).body

    answer = send("client")
    entries = answer.get("Topics") or answer.get("Responses") or answer.get("Results") or []
    if any(e.get("ErrorCode") == ErrorCode.NOT_CONTROLLER for e in entries):
        answer = send(controller_endpoint(harness))
        entries = answer.get("Topics") or answer.get("Responses") or answer.get("Results") or []
    if refusal_skips:
        skip_if_refused(harness, api_key, version, answer)
    return answer


def skip_if_refused(harness: Harness, api_key: int, version: int, answer: dict) -> None:
    """MissingPrecondition when every entry of a topic mutation's answer was refused for
    authorization: the suite's principal may not change topics there, so nothing about the
    mutation itself can be judged."""
    entries = answer.get("Topics") or answer.get("Responses") or answer.get("Results") or []
    codes = {e.get("ErrorCode") for e in entries}
    if entries and codes <= NOT_PERMITTED:
        refused = ", ".join(ErrorCode(c).name for c in sorted(codes))
        raise MissingPrecondition(
            f"{harness.api_name(api_key)} v{version} refused ({refused}): the target does not "
            "let the suite's principal change topics, so the change cannot be judged"
        )


def quiet_version(harness: Harness, api_key: int, within: str | None = None) -> int:
    """``pick_version`` without noting the API: set-up and clean-up requests must not become
    the API a test's results name."""
    return harness.pick_version(api_key, within, note=False)


def known_everywhere(harness: Harness, topic: str, partitions: int, timeout: float = 15.0) -> None:
    """Wait until every broker's Metadata lists ``topic`` with a leader for each partition.

    CreateTopics may answer before every broker has learnt of the topic: Apache Kafka's KRaft
    brokers apply the controller's metadata log asynchronously, so the leader can still refuse a
    Produce or Fetch with NOT_LEADER_OR_FOLLOWER for a moment, as a client retries on. The suite
    waits for that set-up to settle (at most ``timeout``) rather than judging it; past the
    deadline the test goes on and its own checks say what the target does.
    """
    body = {"Topics": [{"Name": topic}], "AllowAutoTopicCreation": False}
    deadline = time.monotonic() + timeout
    listed = harness.setup_request(harness.connect(), ApiKey.METADATA, body, "1+").body["Brokers"]
    nodes = {b["NodeId"]: Endpoint(b["Host"], b["Port"]) for b in listed}
    leaders: dict[int, int] = {}
    for ep in nodes.values():
        conn = harness.connect(ep)
        try:
            while time.monotonic() < deadline:
                got = harness.setup_request(conn, ApiKey.METADATA, body, "1+")
                answer = got.body["Topics"]
                leaders = {
                    p["PartitionIndex"]: p["LeaderId"]
                    for t in answer
                    if t["Name"] == topic and t["ErrorCode"] == ErrorCode.NONE
                    for p in t["Partitions"]
                    if p["ErrorCode"] == ErrorCode.NONE and p["LeaderId"] >= 0
                }
                if len(leaders) >= partitions:
                    break
                time.sleep(0.05)
        finally:
            conn.close()
    if ApiKey.LIST_OFFSETS not in harness.advertised:
        return
    # a broker's Metadata can name it leader a moment before it acts as one: ask each leader
    lo_version = quiet_version(harness, ApiKey.LIST_OFFSETS, "1+")
    for partition, node in sorted(leaders.items()):
        if node not in nodes:
            continue
        conn = harness.connect(nodes[node])
        try:
            while time.monotonic() < deadline:
                part = {"PartitionIndex": partition, "CurrentLeaderEpoch": -1, "Timestamp": -1}
                lo = {
                    "ReplicaId": -1,
                    "IsolationLevel": 0,
                    "Topics": [{"Name": topic, "Partitions": [part]}],
                    "TimeoutMs": 10000,
                }
                answer = conn.request(ApiKey.LIST_OFFSETS, lo_version, lo).body["Topics"]
                codes = [p["ErrorCode"] for t in answer for p in t["Partitions"]]
                if codes and codes[0] not in NOT_LEADER_YET:
                    break
                time.sleep(0.05)
        finally:
            conn.close()


#: what a partition's new leader answers before it has taken up leadership
NOT_LEADER_YET = (ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER)


def leader(harness: Harness, topic: str, partition: int = 0, timeout: float = 15.0) -> Endpoint:
    """The client endpoint of the partition's leader, once Metadata names one."""
    deadline = time.monotonic() + timeout
    conn = harness.connect()
    while True:
        body = {"Topics": [{"Name": topic}], "AllowAutoTopicCreation": False}
        resp = harness.setup_request(conn, ApiKey.METADATA, body, "1+")
        brokers = {b["NodeId"]: Endpoint(b["Host"], b["Port"]) for b in resp.body["Brokers"]}
        for t in resp.body["Topics"]:
            for p in t["Partitions"]:
                if (
                    t["Name"] == topic
                    and p["PartitionIndex"] == partition
                    and p["LeaderId"] in brokers
                ):
                    return brokers[p["LeaderId"]]
        if time.monotonic() > deadline:
            raise MissingPrecondition(f"no leader for {topic}-{partition} after {timeout:.0f} s")
        time.sleep(0.1)


def produce(harness: Harness, topic: str, values: list[bytes]) -> list[Acked]:
    """Produce ``values`` with acks=-1 (one batch); returns what was acknowledged."""
    version = harness.pick_version(ApiKey.PRODUCE, "3-12")  # by topic name (v13 takes ids)
    conn = harness.connect(leader(harness, topic))
    now = int(time.time() * 1000)
    batch = encode_batch(build_batch([(now, None, v) for v in values]))
    body = {
        "TransactionalId": None,
        "Acks": -1,
        "TimeoutMs": 10000,
        "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}],
    }
    resp = conn.request(ApiKey.PRODUCE, version, body)
    part = resp.body["Responses"][0]["PartitionResponses"][0]
    if part["ErrorCode"] != 0:
        raise MissingPrecondition(
            f"cannot produce to the suite's topic {topic}: error {part['ErrorCode']}"
        )
    base = part["BaseOffset"]
    return [Acked(base + i, v) for i, v in enumerate(values)]


def fetch_all(harness: Harness, topic: str, conn: SyncConnection | None = None) -> dict[int, bytes]:
    """Every record of partition 0 from offset 0: offset -> value."""
    version = harness.pick_version(ApiKey.FETCH, "4-12")
    conn = conn or harness.connect(leader(harness, topic))
    out: dict[int, bytes] = {}
    offset = 0
    for _ in range(50):
        part = {
            "Partition": 0,
            "FetchOffset": offset,
            "PartitionMaxBytes": 1 << 20,
            "CurrentLeaderEpoch": -1,
            "LogStartOffset": -1,
            "LastFetchedEpoch": -1,
        }
        body = {
            "ReplicaId": -1,
            "MaxWaitMs": 200,
            "MinBytes": 1,
            "MaxBytes": 1 << 20,
            "IsolationLevel": 0,
            "SessionId": 0,
            "SessionEpoch": -1,
            "Topics": [{"Topic": topic, "Partitions": [part]}],
            "ForgottenTopicsData": [],
            "RackId": "",
        }
        resp = conn.request(ApiKey.FETCH, version, body)
        parts = [p for t in resp.body["Responses"] for p in t["Partitions"]]
        records = (parts[0]["Records"] if parts else None) or b""
        batches = decode_batches(records, allow_partial=True)
        new = [r for b in batches for r in b.log_records() if r.offset >= offset]
        if not new:
            break
        for r in new:
            out[r.offset] = r.value or b""
        offset = max(out) + 1
    return out
