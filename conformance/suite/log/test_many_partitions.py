"""Produce and Fetch requests naming several partitions of several topics, as clients send them
(LOG.R20-R22): a client sends each leader one request with every partition it leads, so a broker
that mixes up which partition an entry belongs to is seen only through such requests.

Two fresh topics (3 and 2 partitions) have every partition on one broker, so one request reaches
every partition's leader. The test keeps what it wrote to each partition and checks each
partition's entry of every answer against that partition alone: base offsets, records, high
watermarks, last stable offsets and log start offsets. A fixed first round gives each partition
a different number of records, so that an answer moved to another partition of the same topic
differs from the right one whatever hypothesis draws next.

Retention is not exercised: a broker deletes expired segments on its own schedule (Apache
Kafka's log.retention.check.interval.ms, five minutes by default, a broker setting a client
cannot change), so the log start offset is moved with DeleteRecords only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records import CorruptRecordError, LogRecord
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, run_property
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import (
    PRODUCE_VERSIONS,
    SuiteTopic,
    batch_bytes,
    now_ms,
    quiet_version,
    records_of,
)
from conformance.suite.log.shared import BATCHES, delete_records

#: (what the topic is for, its partition count): both topics of every request
LAYOUT = (("log-many-a", 3), ("log-many-b", 2))
#: a partition: (index of its topic in LAYOUT, partition index)
Slot = tuple[int, int]
SLOTS: list[Slot] = [(t, p) for t, (_, n) in enumerate(LAYOUT) for p in range(n)]
#: one Produce request: a batch for each of some partitions of the two topics
WRITES = st.dictionaries(st.sampled_from(SLOTS), BATCHES, min_size=1, max_size=len(SLOTS))
#: where each partition is fetched from, in thousandths of its log (0 its start, 1000 its end)
SHARES = st.lists(st.integers(0, 1000), min_size=len(SLOTS), max_size=len(SLOTS))
#: the Fetch versions the test sends (topics by name; the log start offset from v5)
FETCH_VERSIONS, LOG_START_FROM = "4-12", 5


@dataclass
class Written:
    """One record as produced and acknowledged."""

    offset: int
    key: bytes | None
    value: bytes | None
    headers: list
    timestamp: int

    def matches(self, r: LogRecord) -> bool:
        return (r.offset, r.key, r.value, list(r.headers), r.timestamp) == (
            self.offset,
            self.key,
            self.value,
            self.headers,
            self.timestamp,
        )


@dataclass
class Partitions:
    """Fresh suite topics with every partition on one broker, and what was written to each."""

    harness: Harness
    topics: list[SuiteTopic]
    logs: dict[Slot, list[Written]] = field(default_factory=dict)
    starts: dict[Slot, int] = field(default_factory=dict)

    @property
    def slots(self) -> list[Slot]:
        return [(t, p) for t, topic in enumerate(self.topics) for p in range(topic.partitions)]

    def name(self, slot: Slot) -> str:
        return f"{self.topics[slot[0]].name}-{slot[1]}"

    def end(self, slot: Slot) -> int:
        return len(self.logs.get(slot, ()))

    def produce(self, writes: dict[Slot, list[tuple]], req: str) -> None:
        """One Produce request with a batch for each partition of ``writes``; each partition's
        entry must accept it at that partition's log end."""
        version = quiet_version(self.harness, ApiKey.PRODUCE, PRODUCE_VERSIONS)
        ts = now_ms()
        items = {s: [(ts + dt, k, v, hs) for dt, k, v, hs in drawn] for s, drawn in writes.items()}
        body = self.topics[0].produce_body(0, b"")
        body["TopicData"] = self.per_topic(
            set(items),
            ("Name", "PartitionData"),
            lambda t, p: {"Index": p, "Records": batch_bytes(items[(t, p)])},
        )
        conn = self.topics[0].conn(0)
        resp = verify.expect_response(conn, ApiKey.PRODUCE, version, body, served=req)
        entries = self.entries(resp.body["Responses"], "Name", "PartitionResponses", "Index")
        answers = self.check_entries(f"Produce v{version}", entries, set(items), req)
        for slot, batch in items.items():
            answer, end = answers[slot], self.end(slot)
            verify.check(
                (answer["ErrorCode"], answer["BaseOffset"]) == (ErrorCode.NONE, end),
                f"Produce v{version} to {len(items)} partitions in one request: the entry of "
                f"{self.name(slot)} ({len(batch)} records) has ErrorCode {answer['ErrorCode']}, "
                f"BaseOffset {answer['BaseOffset']}; expected 0 and {end} (that partition's log "
                f"end; the others' are {self.ends_but(slot)})",
                req,
            )
            self.logs.setdefault(slot, []).extend(
                Written(end + i, k, v, hs, at) for i, (at, k, v, hs) in enumerate(batch)
            )

    def per_topic(
        self, slots: set[Slot], keys: tuple[str, str], entry: Callable[[int, int], dict]
    ) -> list[dict[str, Any]]:
        """A request's topic entries (``keys``: the name and partition-list fields) for the
        partitions of ``slots``, ``entry(topic index, partition)`` for each."""
        name, parts = keys
        return [
            {
                name: topic.name,
                parts: [entry(t, p) for p in range(topic.partitions) if (t, p) in slots],
            }
            for t, topic in enumerate(self.topics)
            if any(s[0] == t for s in slots)
        ]

    def ends_but(self, slot: Slot) -> str:
        return ", ".join(f"{self.name(s)}: {self.end(s)}" for s in self.slots if s != slot)

    def fetch(self, offsets: dict[Slot, int], req: str) -> dict[Slot, dict[str, Any]]:
        """One Fetch request for every partition of ``offsets``; each partition's entry, which
        must be there once (and no other)."""
        version = quiet_version(self.harness, ApiKey.FETCH, FETCH_VERSIONS)
        body = self.topics[0].fetch_body(0, 0)
        body["Topics"] = self.per_topic(
            set(offsets),
            ("Topic", "Partitions"),
            lambda t, p: self.topics[t].fetch_body(p, offsets[(t, p)])["Topics"][0]["Partitions"][
                0
            ],
        )
        conn = self.topics[0].conn(0)
        resp = verify.expect_response(conn, ApiKey.FETCH, version, body, served=req)
        entries = self.entries(resp.body["Responses"], "Topic", "Partitions", "PartitionIndex")
        return self.check_entries(f"Fetch v{version}", entries, set(offsets), req)

    def entries(
        self, topics: list[dict], name: str, parts: str, index: str
    ) -> list[tuple[str, dict[str, Any]]]:
        """An answer's partition entries, each with the partition it names."""
        return [(f"{t[name]}-{p[index]}", p) for t in topics for p in t[parts]]

    def check_entries(
        self, what: str, entries: list[tuple[str, dict[str, Any]]], asked: set[Slot], req: str
    ) -> dict[Slot, dict[str, Any]]:
        """Each partition asked must have exactly one entry, and nothing else one: the entries
        by slot."""
        named = sorted(n for n, _ in entries)
        wanted = sorted(self.name(s) for s in asked)
        verify.check(
            named == wanted,
            f"{what} for {len(asked)} partitions of {len({s[0] for s in asked})} topics: the "
            f"answer has entries for {named}, expected one each for {wanted}",
            req,
        )
        by_name = {self.name(s): s for s in asked}
        return {by_name[n]: e for n, e in entries}


def some_partitions(harness: Harness, layout: tuple[tuple[str, int], ...]) -> list[SuiteTopic]:
    """Fresh topics of ``layout``, every partition on the first broker (created in order; a
    failure deletes those made before it)."""
    first = cluster.brokers(harness)[0].node_id
    made: list[SuiteTopic] = []
    try:
        for what, n in layout:
            made.append(SuiteTopic.create(harness, what, partitions=n, on_broker=first))
    except BaseException:
        for topic in made:
            topic.delete()
        raise
    return made


def tagged(parts: Partitions, counts: dict[Slot, int]) -> dict[Slot, list[tuple]]:
    """Batches of ``counts[slot]`` records whose values name their partition (drawn in the
    form of BATCHES: time offset, key, value, headers)."""
    return {
        s: [(0, b"fixed", f"{parts.name(s)} #{i}".encode(), []) for i in range(n)]
        for s, n in counts.items()
    }


def check_fetched(parts: Partitions, offsets: dict[Slot, int], req: str) -> None:
    """One Fetch of every partition at ``offsets``: each entry has that partition's records from
    its offset, its high watermark and last stable offset (its log end)."""
    answers = parts.fetch(offsets, req)
    for slot, offset in offsets.items():
        answer, end, where = answers[slot], parts.end(slot), parts.name(slot)
        verify.check(
            (answer["ErrorCode"], answer["HighWatermark"], answer["LastStableOffset"])
            == (ErrorCode.NONE, end, end),
            f"Fetch of {len(offsets)} partitions in one request: the entry of {where} (at "
            f"{offset}) has ErrorCode {answer['ErrorCode']}, HighWatermark "
            f"{answer['HighWatermark']}, LastStableOffset {answer['LastStableOffset']}; "
            f"expected 0, {end}, {end} (that partition's log end; the others' are "
            f"{parts.ends_but(slot)})",
            req,
        )
        try:
            _, records = records_of(answer["Records"])
        except CorruptRecordError as e:
            raise verify.Failed(
                f"Fetch of {where} at {offset}: records do not decode: {e}", req
            ) from None
        got = [r for r in records if r.offset >= offset]
        want = parts.logs.get(slot, [])[offset:]
        verify.check(
            len(got) == len(want) and all(w.matches(r) for w, r in zip(want, got, strict=True)),
            f"Fetch of {len(offsets)} partitions in one request: the entry of {where} at "
            f"{offset} has records {[(r.offset, r.value) for r in got][:6]}; expected the "
            f"{len(want)} produced there from {offset}: {[(w.offset, w.value) for w in want][:6]}",
            req,
        )


@conformance("log/produce-fetch/many-partitions", "LOG.R20", "LOG.R21", api=ApiKey.PRODUCE)
def test_each_partition_of_a_request_is_its_own_log(harness: Harness) -> None:
    harness.pick_version(ApiKey.FETCH, FETCH_VERSIONS)
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    topics = some_partitions(harness, LAYOUT)
    try:
        parts = Partitions(harness, topics)

        def check(example: tuple[dict[Slot, list[tuple]], list[int]]) -> None:
            writes, shares = example
            parts.produce(writes, "LOG.R20")
            offsets = {s: parts.end(s) * k // 1000 for s, k in zip(SLOTS, shares, strict=True)}
            check_fetched(parts, offsets, "LOG.R21")

        # every partition a different count, then one more each: a moved answer cannot agree
        check((tagged(parts, {s: i + 1 for i, s in enumerate(SLOTS)}), [0] * len(SLOTS)))
        check((tagged(parts, dict.fromkeys(SLOTS, 1)), [0] * len(SLOTS)))
        run_property(harness, st.tuples(WRITES, SHARES), check)
    finally:
        for topic in topics:
            topic.delete()


#: one step: DeleteRecords of one partition (its index in LAYOUT[0]'s topic) up to a share of
#: what lies between its start and its end, after a few more records to each partition
DELETES = st.tuples(st.integers(0, LAYOUT[0][1] - 1), st.integers(0, 1000), st.integers(1, 3))


@conformance("log/fetch/log-start-after-delete-records", "LOG.R22", api=ApiKey.FETCH)
def test_fetch_answers_each_partitions_log_start(harness: Harness) -> None:
    harness.pick_version(ApiKey.DELETE_RECORDS)
    harness.pick_version(ApiKey.FETCH, f"{LOG_START_FROM}-12")
    version = quiet_version(harness, ApiKey.DELETE_RECORDS)
    req = "LOG.R22"
    topics = some_partitions(harness, LAYOUT[:1])
    try:
        parts = Partitions(harness, topics)
        slots = parts.slots

        def check(step: tuple[int, int, int]) -> None:
            p, share, more = step
            parts.produce(tagged(parts, dict.fromkeys(slots, more)), req)
            slot = (0, p)
            start, end = parts.starts.get(slot, 0), parts.end(slot)
            offset = start + (end - start) * share // 1000
            answer = delete_records(topics[0], version, offset, p, req)
            verify.check(
                (answer["ErrorCode"], answer["LowWatermark"]) == (ErrorCode.NONE, offset),
                f"DeleteRecords v{version} of {parts.name(slot)} to {offset} (log {start}.."
                f"{end}): ErrorCode {answer['ErrorCode']}, LowWatermark "
                f"{answer['LowWatermark']}; expected 0 and {offset}",
                req,
            )
            parts.starts[slot] = offset
            at = {s: parts.starts.get(s, 0) for s in slots}
            answers = parts.fetch(at, req)
            for s in slots:
                entry = answers[s]
                verify.check(
                    (entry["ErrorCode"], entry["LogStartOffset"]) == (ErrorCode.NONE, at[s]),
                    f"Fetch of {len(slots)} partitions in one request, each at its log start, "
                    f"after DeleteRecords of {parts.name(slot)} to {offset}: the entry of "
                    f"{parts.name(s)} (at {at[s]}) has ErrorCode {entry['ErrorCode']}, "
                    f"LogStartOffset {entry['LogStartOffset']}; expected 0 and {at[s]}",
                    req,
                )

        check((0, 500, 4))  # a start that moved past 0 whatever is drawn next
        run_property(harness, DELETES, check)
    finally:
        for topic in topics:
            topic.delete()
