"""Fresh suite topics and the round trips of their partition logs: Produce, Fetch, ListOffsets.

Shared by the LOG, IDEMPOTENCE and TOPICS tests. Every topic comes from ``provision.obtain``: new
(``kc-suite-<what>-<random>``, created or auto-created), so no test depends on what another left
behind, or one the user gave for the run; what the suite created is deleted when the test's
``SuiteTopic`` closes, and nothing else is touched. Requests go to each partition's leader as
Metadata names it. Versions are the highest the target advertises within what these helpers
encode: Produce 3-12 (record batch v2, topics by name), Fetch 4-12 (topics by name),
ListOffsets 1+, unless a test gives the version: Produce v13 and Fetch v13+ name the topic by
the id Metadata gave (``SuiteTopic.topic_id``; :func:`oldest_and_newest` for the tests judging
both ends of what a target advertises, issue 37). The helpers do not note the API they use: each
test picks (and so notes, and gates on) its own API.

A request that is not answered, or whose answer does not decode, fails with the requirement ids
the caller names (``reqs``), through ``verify.expect_response``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records import (
    Compression,
    CorruptRecordError,
    LogRecord,
    RecordBatch,
    build_batch,
    decode_batches,
    encode_batch,
)
from conformance.protocol.spec import ZERO_UUID
from conformance.protocol.versions import Versions
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.provision import delete_topics, obtain
from conformance.suite.kit.records_io import known_everywhere, quiet_version
from conformance.targets.base import Endpoint

LATEST, EARLIEST, MAX_TIMESTAMP = -1, -2, -3
#: the Produce versions these helpers encode: record batch v2 (3+), topics by name (v13, Kafka
#: 4.1's, names them by topic id)
PRODUCE_VERSIONS = "3-12"
#: the Fetch versions the default helpers use: topics by name (v13+ by id)
FETCH_VERSIONS = "4-12"
#: every Produce and Fetch version the helpers encode when a test gives it (by id from v13)
PRODUCE_ANY, FETCH_ANY = "3+", "4+"
#: the last Produce and Fetch versions naming topics by name
LAST_PRODUCE_BY_NAME = LAST_FETCH_BY_NAME = 12
#: byte limits of an ordinary fetch
FETCH_BYTES = 1 << 20


def oldest_and_newest(harness: Harness, api_key: int, within: str, by_id: bool = True) -> list[int]:
    """The oldest and the newest version of ``api_key`` within ``within`` that the target
    advertises (one when they are the same), the newest noted: for the tests judging a
    requirement at both ends where a version changes what is sent (issue 37). ``by_id`` False:
    only versions naming topics by name (v12 at most, for Produce and Fetch), where the
    target's Metadata gave no topic id."""
    if not by_id:
        within = str(Versions.parse(within).intersect(Versions(0, LAST_PRODUCE_BY_NAME)))
    newest = harness.pick_version(api_key, within)
    lo = harness.advertised_on("client")[api_key][0]
    oldest = max(lo, Versions.parse(within).lo)
    return sorted({oldest, newest})


#: how long a deleted topic's name may stay taken: Apache Kafka in ZooKeeper mode answers
#: DeleteTopics once the controller has dropped the topic, before its replicas are deleted, and
#: refuses CreateTopics of the name with TOPIC_ALREADY_EXISTS ("marked for deletion") until then
RECREATE_FOR = 15.0


def create_again(
    send: Callable[[], dict[str, Any]],
    entry: Callable[[dict[str, Any]], dict[str, Any]] = lambda body: body["Topics"][0],
) -> dict[str, Any]:
    """CreateTopics of a name the test deleted, sent again (``send``) while the topic's answer
    entry is TOPIC_ALREADY_EXISTS, for at most RECREATE_FOR seconds; the last answer."""
    deadline = time.monotonic() + RECREATE_FOR
    while True:
        answer = send()
        taken = entry(answer)["ErrorCode"] == ErrorCode.TOPIC_ALREADY_EXISTS
        if not taken or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def now_ms() -> int:
    return int(time.time() * 1000)


def batch_bytes(
    items: list[tuple], *, compression: Compression = Compression.NONE, **fields: Any
) -> bytes:
    """One v2 batch of ``(timestamp, key, value[, headers])`` items."""
    return encode_batch(build_batch(items, compression=compression, **fields))


def records_of(data: bytes | None) -> tuple[list[RecordBatch], list[LogRecord]]:
    """The whole batches of a fetched ``Records`` field and their records (a trailing partial
    batch, which a byte limit may cut, is left out)."""
    batches = decode_batches(data or b"", allow_partial=True)
    return batches, [r for b in batches for r in b.log_records()]


@dataclass
class SuiteTopic:
    """A topic this test uses (``provision``): its leaders, and requests sent to them."""

    harness: Harness
    name: str
    partitions: int
    #: whether the suite created it (and so deletes it); a topic the user gave stays
    owned: bool = True
    leaders: dict[int, Endpoint] = field(default_factory=dict)
    #: the topic's id as Metadata (v10+) gave it; None where it gave none
    topic_id: uuid.UUID | None = None
    _conns: dict[Endpoint, SyncConnection] = field(default_factory=dict, repr=False)

    # --- life ---------------------------------------------------------------------------------

    @classmethod
    def create(cls, harness: Harness, what: str, partitions: int = 1, **kw: Any) -> SuiteTopic:
        """A topic for the test (``provision.obtain``, whose keywords ``kw`` are: created,
        auto-created or given; at least ``partitions``, and ``partitions`` is then what it has)
        and its leaders; MissingPrecondition when there is none (the tests that need data
        cannot run without one)."""
        got = obtain(harness, what, partitions, **kw)
        topic = cls(harness, got.name, got.partitions, owned=got.owned)
        try:
            topic.learn_leaders()
        except BaseException:
            topic.delete()
            raise
        return topic

    def learn_leaders(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        conn = self.harness.connect()
        while True:
            body = {"Topics": [{"Name": self.name}], "AllowAutoTopicCreation": False}
            # set-up: an answer that does not decode costs one finding, then another version
            resp = self.harness.setup_request(conn, ApiKey.METADATA, body, "1-12")
            brokers = {b["NodeId"]: Endpoint(b["Host"], b["Port"]) for b in resp.body["Brokers"]}
            mine = [
                t
                for t in resp.body["Topics"]
                if t["Name"] == self.name and t["ErrorCode"] == ErrorCode.NONE
            ]
            self.leaders = {
                p["PartitionIndex"]: brokers[p["LeaderId"]]
                for t in mine
                for p in t["Partitions"]
                if p["LeaderId"] in brokers
            }
            ids = [t.get("TopicId") for t in mine if t.get("TopicId") not in (None, ZERO_UUID)]
            self.topic_id = ids[0] if ids else None
            if len(self.leaders) >= self.partitions:
                known_everywhere(self.harness, self.name, self.partitions)
                return
            if time.monotonic() > deadline:
                raise MissingPrecondition(
                    f"Metadata names no leader for every partition of {self.name} "
                    f"after {timeout:.0f} s"
                )
            time.sleep(0.05)

    def delete(self) -> None:
        """Delete the topic if the suite created it (best effort: the test's verdict does not
        depend on it)."""
        if self.owned:
            delete_topics(self.harness, [self.name])

    def __enter__(self) -> SuiteTopic:
        return self

    def __exit__(self, *exc: object) -> None:
        self.delete()

    # --- connections --------------------------------------------------------------------------

    def conn(self, partition: int = 0) -> SyncConnection:
        """A kept connection to the partition's leader (the bootstrap for an unknown one)."""
        ep = self.leaders.get(partition) or self.harness.target.bootstrap[0]
        conn = self._conns.get(ep)
        if conn is None or conn.closed:
            conn = self._conns[ep] = self.harness.connect(ep)
        return conn

    # --- Produce ------------------------------------------------------------------------------

    def produce_body(
        self, partition: int, records: bytes, acks: int = -1, transactional_id: str | None = None
    ) -> dict[str, Any]:
        return {
            "TransactionalId": transactional_id,
            "Acks": acks,
            "TimeoutMs": 10000,
            "TopicData": [
                {
                    "Name": self.name,
                    "TopicId": self.topic_id or ZERO_UUID,
                    "PartitionData": [{"Index": partition, "Records": records}],
                }
            ],
        }

    def produce(
        self,
        partition: int,
        records: bytes,
        *reqs: str,
        acks: int = -1,
        version: int | None = None,
    ) -> dict[str, Any]:
        """The partition's answer to one batch (acks -1 or 1)."""
        v = (
            version
            if version is not None
            else quiet_version(self.harness, ApiKey.PRODUCE, PRODUCE_VERSIONS)
        )
        body = self.produce_body(partition, records, acks)
        resp = verify.expect_response(
            self.conn(partition), ApiKey.PRODUCE, v, body, served=reqs[0] if reqs else "PROTOCOL.R9"
        )
        parts = [p for t in resp.body["Responses"] for p in t["PartitionResponses"]]
        verify.check(
            len(parts) == 1 and parts[0]["Index"] == partition,
            f"Produce v{v} to {self.name}-{partition}: the answer has partitions "
            f"{[p['Index'] for p in parts]}, expected [{partition}]",
            *reqs,
        )
        return parts[0]

    def produce_ok(self, partition: int, items: list[tuple], *reqs: str, **kw: Any) -> int:
        """Produce one batch of ``items`` that must be accepted; its base offset."""
        answer = self.produce(partition, batch_bytes(items), *reqs, **kw)
        verify.check(
            answer["ErrorCode"] == ErrorCode.NONE,
            f"Produce to {self.name}-{partition} ({len(items)} records): ErrorCode "
            f"{answer['ErrorCode']}, expected 0 (NONE)",
            *reqs,
        )
        return answer["BaseOffset"]

    # --- Fetch --------------------------------------------------------------------------------

    def fetch_body(
        self,
        partition: int,
        offset: int,
        *,
        max_wait: int = 100,
        min_bytes: int = 1,
        partition_max: int = FETCH_BYTES,
        max_bytes: int = FETCH_BYTES,
    ) -> dict[str, Any]:
        part = {
            "Partition": partition,
            "FetchOffset": offset,
            "PartitionMaxBytes": partition_max,
            "CurrentLeaderEpoch": -1,
            "LogStartOffset": -1,
            "LastFetchedEpoch": -1,
        }
        return {
            "ReplicaId": -1,
            "MaxWaitMs": max_wait,
            "MinBytes": min_bytes,
            "MaxBytes": max_bytes,
            "IsolationLevel": 0,
            "SessionId": 0,
            "SessionEpoch": -1,
            "Topics": [
                {"Topic": self.name, "TopicId": self.topic_id or ZERO_UUID, "Partitions": [part]}
            ],
            "ForgottenTopicsData": [],
            "RackId": "",
        }

    def fetch_version(self) -> int:
        return quiet_version(self.harness, ApiKey.FETCH, FETCH_VERSIONS)

    def fetch(
        self, partition: int, offset: int, *reqs: str, version: int | None = None, **kw: Any
    ) -> dict[str, Any]:
        """The partition's entry of a Fetch answer (consumer, read_uncommitted) at ``version``
        (default :meth:`fetch_version`). MaxWaitMs is 100 unless given: answered at once where
        there is data, after 100 ms where there is none."""
        v = version if version is not None else self.fetch_version()
        resp = verify.expect_response(
            self.conn(partition),
            ApiKey.FETCH,
            v,
            self.fetch_body(partition, offset, **kw),
            served=reqs[0] if reqs else "PROTOCOL.R9",
        )
        parts = [p for t in resp.body["Responses"] for p in t["Partitions"]]
        verify.check(
            len(parts) == 1 and parts[0]["PartitionIndex"] == partition,
            f"Fetch v{v} of {self.name}-{partition}: the answer has partitions "
            f"{[p['PartitionIndex'] for p in parts]}, expected [{partition}]",
            *reqs,
        )
        return parts[0]

    def fetch_records(
        self, partition: int, offset: int, *reqs: str, **kw: Any
    ) -> tuple[dict[str, Any], list[RecordBatch], list[LogRecord]]:
        """A Fetch that must succeed, with its batches and records decoded."""
        answer = self.fetch(partition, offset, *reqs, **kw)
        verify.check(
            answer["ErrorCode"] == ErrorCode.NONE,
            f"Fetch of {self.name}-{partition} at offset {offset}: ErrorCode "
            f"{answer['ErrorCode']}, expected 0 (NONE)",
            *reqs,
        )
        try:
            batches, records = records_of(answer["Records"])
        except CorruptRecordError as e:
            raise verify.Failed(
                f"Fetch of {self.name}-{partition} at offset {offset}: the records do not "
                f"decode: {e}",
                *reqs,
            ) from None
        return answer, batches, records

    def fetch_all(self, partition: int, *reqs: str) -> list[LogRecord]:
        """Every record of the partition from offset 0 up to the high watermark."""
        out: list[LogRecord] = []
        offset = 0
        for _ in range(100):
            answer, _, records = self.fetch_records(partition, offset, *reqs)
            new = [r for r in records if r.offset >= offset]
            out.extend(new)
            if not new or new[-1].offset + 1 >= answer["HighWatermark"]:
                return out
            offset = new[-1].offset + 1
        return out

    # --- ListOffsets --------------------------------------------------------------------------

    def list_offset(
        self, partition: int, timestamp: int, *reqs: str, version: int | None = None
    ) -> dict[str, Any]:
        """The partition's entry of a ListOffsets answer (consumer, read_uncommitted)."""
        v = (
            version
            if version is not None
            else quiet_version(self.harness, ApiKey.LIST_OFFSETS, "1+")
        )
        part = {"PartitionIndex": partition, "CurrentLeaderEpoch": -1, "Timestamp": timestamp}
        body = {
            "ReplicaId": -1,
            "IsolationLevel": 0,
            "Topics": [{"Name": self.name, "Partitions": [part]}],
            "TimeoutMs": 10000,
        }
        resp = verify.expect_response(
            self.conn(partition),
            ApiKey.LIST_OFFSETS,
            v,
            body,
            served=reqs[0] if reqs else "PROTOCOL.R9",
        )
        parts = [p for t in resp.body["Topics"] for p in t["Partitions"]]
        verify.check(
            len(parts) == 1 and parts[0]["PartitionIndex"] == partition,
            f"ListOffsets v{v} of {self.name}-{partition}: the answer has partitions "
            f"{[p['PartitionIndex'] for p in parts]}, expected [{partition}]",
            *reqs,
        )
        return parts[0]
