"""Where the log ends and what Fetch and ListOffsets say about it (LOG.R6-R12), each on a fresh
suite topic written with acks=-1 and nothing else."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import EARLIEST, LATEST, MAX_TIMESTAMP, SuiteTopic, now_ms

#: the empty fetch's MaxWaitMs, and the share of it an answer must at least have waited
MAX_WAIT_MS = 400
WAITED_SHARE = 0.5


def fill(topic: SuiteTopic, sizes: list[int], req: str) -> int:
    """Produce batches of ``sizes`` records to partition 0; the log end."""
    end = 0
    for i, n in enumerate(sizes):
        items = [(now_ms(), None, f"b{i}r{j}".encode()) for j in range(n)]
        end = topic.produce_ok(0, items, req) + n
    return end


@conformance("log/fetch/high-watermark-after-acks-all", "LOG.R6", api=ApiKey.FETCH)
def test_high_watermark_is_the_log_end(harness: Harness) -> None:
    harness.pick_version(ApiKey.FETCH, "4-12")
    with SuiteTopic.create(harness, "log-hw") as topic:
        end = fill(topic, [2, 1, 3], "LOG.R6")
        answer = topic.fetch(0, 0, "LOG.R6")
        verify.check(
            answer["ErrorCode"] == ErrorCode.NONE and answer["HighWatermark"] == end,
            f"Fetch of {topic.name}-0 after acks=-1 writes ending at offset {end}: ErrorCode "
            f"{answer['ErrorCode']}, HighWatermark {answer['HighWatermark']}; expected 0 and {end}",
            "LOG.R6",
        )


@conformance("log/fetch/at-and-past-the-end", "LOG.R7", api=ApiKey.FETCH)
def test_fetch_at_the_end_is_empty_and_past_it_out_of_range(harness: Harness) -> None:
    harness.pick_version(ApiKey.FETCH, "4-12")
    with SuiteTopic.create(harness, "log-fetch-end") as topic:
        end = fill(topic, [3], "LOG.R7")
        _, _, records = topic.fetch_records(0, end, "LOG.R7")
        verify.check(
            not records,
            f"Fetch of {topic.name}-0 at the high watermark {end}: records at "
            f"{[r.offset for r in records]}, expected none",
            "LOG.R7",
        )
        past = topic.fetch(0, end + 1, "LOG.R7")
        verify.check(
            past["ErrorCode"] == ErrorCode.OFFSET_OUT_OF_RANGE,
            f"Fetch of {topic.name}-0 at {end + 1}, past the log end {end}: ErrorCode "
            f"{past['ErrorCode']}, expected 1 (OFFSET_OUT_OF_RANGE)",
            "LOG.R7",
        )


@conformance("log/fetch/max-wait-on-empty", "LOG.R8", api=ApiKey.FETCH)
def test_an_empty_fetch_waits_for_max_wait(harness: Harness) -> None:
    harness.pick_version(ApiKey.FETCH, "4-12")
    with SuiteTopic.create(harness, "log-max-wait") as topic:
        topic.conn(0)  # connected before the clock starts
        started = time.monotonic()
        _, _, records = topic.fetch_records(0, 0, "LOG.R8", max_wait=MAX_WAIT_MS)
        waited = time.monotonic() - started
        verify.check(
            not records,
            f"Fetch of the empty {topic.name}-0: records {[r.offset for r in records]}",
            "LOG.R8",
        )
        verify.check(
            waited >= MAX_WAIT_MS / 1000 * WAITED_SHARE,
            f"Fetch of the empty {topic.name}-0 with MaxWaitMs {MAX_WAIT_MS}, MinBytes 1: "
            f"answered after {waited * 1000:.0f} ms, expected no sooner than the wait "
            f"(at least {MAX_WAIT_MS * WAITED_SHARE:.0f} ms)",
            "LOG.R8",
        )


@conformance("log/fetch/first-batch-over-the-limit", "LOG.R9", api=ApiKey.FETCH)
def test_a_fetch_smaller_than_the_first_batch_returns_it(harness: Harness) -> None:
    harness.pick_version(ApiKey.FETCH, "4-12")
    with SuiteTopic.create(harness, "log-kip74") as topic:
        value = bytes(range(256)) * 16
        topic.produce_ok(0, [(now_ms(), b"big", value)], "LOG.R9")
        limit = 100
        _, batches, records = topic.fetch_records(
            0, 0, "LOG.R9", partition_max=limit, max_bytes=limit
        )
        verify.check(
            [r.offset for r in records] == [0] and records[0].value == value,
            f"Fetch of {topic.name}-0 at 0 with PartitionMaxBytes and MaxBytes {limit}, the "
            f"first batch being over {len(value)} bytes: got {len(batches)} whole batch(es), "
            "expected the first batch whole",
            "LOG.R9",
        )


@conformance("log/list-offsets/earliest-latest", "LOG.R10", api=ApiKey.LIST_OFFSETS)
def test_earliest_and_latest(harness: Harness) -> None:
    harness.pick_version(ApiKey.LIST_OFFSETS, "1+")
    with SuiteTopic.create(harness, "log-earliest-latest") as topic:
        end = fill(topic, [3, 1], "LOG.R10")
        for spec, want, name in ((EARLIEST, 0, "EARLIEST (-2)"), (LATEST, end, "LATEST (-1)")):
            answer = topic.list_offset(0, spec, "LOG.R10")
            verify.check(
                answer["ErrorCode"] == ErrorCode.NONE and answer["Offset"] == want,
                f"ListOffsets {name} of {topic.name}-0 (log 0..{end}): ErrorCode "
                f"{answer['ErrorCode']}, Offset {answer['Offset']}; expected 0 and {want}",
                "LOG.R10",
            )


@conformance("log/list-offsets/by-timestamp", "LOG.R11", api=ApiKey.LIST_OFFSETS)
def test_offset_by_timestamp(harness: Harness) -> None:
    harness.pick_version(ApiKey.LIST_OFFSETS, "1+")
    with SuiteTopic.create(harness, "log-by-timestamp") as topic:
        t0 = now_ms() - 60_000
        topic.produce_ok(0, [(t0 + 10 * i, None, f"r{i}".encode()) for i in range(3)], "LOG.R11")
        topic.produce_ok(0, [(t0 + 30, None, b"r3")], "LOG.R11")
        cases = [
            (t0 - 1000, 0, t0),
            (t0 + 5, 1, t0 + 10),
            (t0 + 20, 2, t0 + 20),
            (t0 + 21, 3, t0 + 30),
            (t0 + 31, -1, -1),
        ]
        for ts, offset, found in cases:
            answer = topic.list_offset(0, ts, "LOG.R11")
            verify.check(
                (answer["ErrorCode"], answer["Offset"], answer["Timestamp"])
                == (ErrorCode.NONE, offset, found),
                f"ListOffsets of {topic.name}-0 at timestamp t0{ts - t0:+d} (records at "
                f"t0+0, +10, +20, +30): ErrorCode {answer['ErrorCode']}, Offset "
                f"{answer['Offset']}, Timestamp {answer['Timestamp']}; expected 0, {offset}, "
                f"{found if found < 0 else f't0{found - t0:+d}'}",
                "LOG.R11",
            )


@conformance("log/list-offsets/max-timestamp", "LOG.R12", api=ApiKey.LIST_OFFSETS)
def test_max_timestamp(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.LIST_OFFSETS, "7+")
    with SuiteTopic.create(harness, "log-max-timestamp") as topic:
        t0 = now_ms() - 60_000
        for dt in (0, 50, 20):
            topic.produce_ok(0, [(t0 + dt, None, f"t0+{dt}".encode())], "LOG.R12")
        answer = topic.list_offset(0, MAX_TIMESTAMP, "LOG.R12", version=version)
        verify.check(
            (answer["ErrorCode"], answer["Offset"], answer["Timestamp"])
            == (ErrorCode.NONE, 1, t0 + 50),
            f"ListOffsets v{version} MAX_TIMESTAMP (-3) of {topic.name}-0 (timestamps t0, "
            f"t0+50, t0+20 at offsets 0-2): ErrorCode {answer['ErrorCode']}, Offset "
            f"{answer['Offset']}, Timestamp {answer['Timestamp']}; expected 0, 1, t0+50",
            "LOG.R12",
        )
