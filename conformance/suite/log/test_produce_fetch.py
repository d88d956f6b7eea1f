"""What Produce acknowledges is what Fetch returns (LOG.R1-R5, R13): offsets, partitions, acks,
record contents and CreateTime timestamps, each on a fresh suite topic."""

from __future__ import annotations

import struct

from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.errors import DecodeError
from conformance.protocol.records import TimestampType
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, run_property
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import (
    FETCH_ANY,
    PRODUCE_ANY,
    PRODUCE_VERSIONS,
    SuiteTopic,
    batch_bytes,
    now_ms,
    oldest_and_newest,
)
from conformance.suite.kit.records_io import quiet_version
from conformance.suite.log.shared import BATCHES


def shown(r) -> str:
    return f"key={r.key!r} value={r.value!r} headers={list(r.headers)} timestamp={r.timestamp}"


@conformance("log/produce-fetch/round-trip", "LOG.R1", "LOG.R2", api=ApiKey.PRODUCE)
def test_acknowledged_records_are_fetched_as_produced(harness: Harness) -> None:
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    with SuiteTopic.create(harness, "log-round-trip") as topic:
        next_offset = 0

        def check(drawn: list[tuple]) -> None:
            nonlocal next_offset
            base_ts = now_ms()
            items = [(base_ts + dt, k, v, hs) for dt, k, v, hs in drawn]
            base = topic.produce_ok(0, items, "LOG.R1")
            expected, next_offset = next_offset, next_offset + len(items)
            verify.check(
                base == expected,
                f"Produce of {len(items)} records to {topic.name}-0: BaseOffset {base}, "
                f"expected {expected} (the log end after the earlier batches)",
                "LOG.R2",
            )
            _, _, records = topic.fetch_records(0, base, "LOG.R1")
            got = [r for r in records if base <= r.offset < base + len(items)]
            verify.check(
                [r.offset for r in got] == list(range(base, base + len(items))),
                f"Fetch of {topic.name}-0 at {base}: offsets {[r.offset for r in got]}, "
                f"expected {list(range(base, base + len(items)))}",
                "LOG.R1",
            )
            for (ts, key, value, headers), r in zip(items, got, strict=True):
                verify.check(
                    (r.key, r.value, list(r.headers), r.timestamp) == (key, value, headers, ts),
                    f"record at offset {r.offset} of {topic.name}-0: fetched {shown(r)}; "
                    f"produced key={key!r} value={value!r} headers={headers} timestamp={ts}",
                    "LOG.R1",
                )

        run_property(harness, BATCHES, check)


@conformance("log/produce-fetch/oldest-and-newest-versions", "LOG.R1", "LOG.R2", api=ApiKey.PRODUCE)
def test_round_trip_at_the_oldest_and_newest_versions(harness: Harness) -> None:
    """LOG.R1/R2 at both ends of what the target advertises (issue 37): a batch produced at the
    oldest Produce version (3+, record batch v2) is fetched at the oldest Fetch version (4+), one
    produced at the newest at the newest; from v13 Produce and Fetch name the topic by the id
    Metadata gave (by-name versions only where it gave none)."""
    harness.require(ApiKey.FETCH)
    with SuiteTopic.create(harness, "log-versions") as topic:
        by_id = topic.topic_id is not None
        fetch_vs = oldest_and_newest(harness, ApiKey.FETCH, FETCH_ANY, by_id)
        # noted last: the test's results name Produce
        produce_vs = oldest_and_newest(harness, ApiKey.PRODUCE, PRODUCE_ANY, by_id)
        expected = 0
        for pv, fv in ((produce_vs[0], fetch_vs[0]), (produce_vs[-1], fetch_vs[-1])):
            value = f"produced at v{pv}".encode()
            items = [(now_ms(), b"k", value, [])]
            base = topic.produce_ok(0, items, "LOG.R1", version=pv)
            verify.check(
                base == expected,
                f"Produce v{pv} of one record to {topic.name}-0: BaseOffset {base}, expected "
                f"{expected}",
                "LOG.R2",
            )
            expected = base + 1
            _, _, records = topic.fetch_records(0, base, "LOG.R1", version=fv)
            got = [(r.offset, r.key, r.value) for r in records if r.offset == base]
            verify.check(
                got == [(base, b"k", value)],
                f"Fetch v{fv} of {topic.name}-0 at {base} (produced at Produce v{pv}): "
                f"{got}, expected {[(base, b'k', value)]}",
                "LOG.R1",
            )


@conformance("log/produce/named-partition-only", "LOG.R3", api=ApiKey.PRODUCE)
def test_a_write_lands_in_the_partition_it_names(harness: Harness) -> None:
    # every partition on one broker: a write stored in the wrong partition is then accepted
    # by the same leader, so only where it lands can tell
    first = cluster.brokers(harness)[0].node_id
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    with SuiteTopic.create(harness, "log-partitions", partitions=3, on_broker=first) as topic:
        target = topic.partitions - 1
        items = [(now_ms(), b"k", f"for partition {target}".encode())]
        base = topic.produce_ok(target, items, "LOG.R3")
        for p in range(topic.partitions):
            answer, _, records = topic.fetch_records(p, 0, "LOG.R3")
            values = [r.value for r in records]
            if p == target:
                verify.check(
                    [r.offset for r in records] == [base] and values == [items[0][2]],
                    f"Fetch of {topic.name}-{p}: records {values} at "
                    f"{[r.offset for r in records]}, expected the one produced there at {base}",
                    "LOG.R3",
                )
            else:
                verify.check(
                    not records and answer["HighWatermark"] == 0,
                    f"Fetch of {topic.name}-{p} after producing only to partition {target}: "
                    f"high watermark {answer['HighWatermark']}, records {values}; "
                    "expected an empty partition",
                    "LOG.R3",
                )


@conformance("log/produce/unknown-partition", "LOG.R4", api=ApiKey.PRODUCE)
def test_produce_to_an_unknown_partition_is_refused(harness: Harness) -> None:
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    with SuiteTopic.create(harness, "log-unknown-partition") as topic:
        missing = topic.partitions
        answer = topic.produce(missing, batch_bytes([(now_ms(), None, b"x")]), "LOG.R4")
        verify.check(
            answer["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            f"Produce to partition {missing} of {topic.name} (it has {topic.partitions}): "
            f"ErrorCode {answer['ErrorCode']}, expected 3 (UNKNOWN_TOPIC_OR_PARTITION)",
            "LOG.R4",
        )
        fetched = topic.fetch(0, 0, "LOG.R4")
        verify.check(
            fetched["HighWatermark"] == 0,
            f"after the refused Produce, partition 0 of {topic.name} has high watermark "
            f"{fetched['HighWatermark']}, expected 0",
            "LOG.R4",
        )


@conformance("log/produce/acks", "LOG.R5", api=ApiKey.PRODUCE)
def test_acks_zero_is_not_answered_and_acks_one_and_all_are(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    with SuiteTopic.create(harness, "log-acks") as topic:
        conn = topic.conn(0)
        body = topic.produce_body(0, batch_bytes([(now_ms(), None, b"acks=0")]), acks=0)
        cid = 0x7FFF0000
        frame = harness.frame(ApiKey.PRODUCE, version, cid, body)
        conn.send_raw(struct.pack(">i", len(frame)) + frame)
        meta_v = quiet_version(harness, ApiKey.METADATA, "1+")
        try:  # (a version whose answers do not decode: one set-up defect, another version)
            body = {"Topics": [], "AllowAutoTopicCreation": False}
            # twice: the second round trip catches an acks=0 answer that came after the first.
            # The connection is checked first each time, since setup_request would open a new
            # one in place of a connection an unsolicited answer closed
            for _ in range(2):
                if conn.closed:
                    raise ConnectionClosed(f"closed before Metadata ({conn.conn.close_reason})")
                harness.setup_request(conn, ApiKey.METADATA, body, "1+")
        except ConnectionClosed as e:
            if "unsolicited response" not in str(e):
                raise verify.Failed(
                    f"Produce v{version} with acks=0, then Metadata: no Metadata answer ({e})",
                    "LOG.R5",
                ) from None
            # the Produce answer came before the Metadata request was sent: the same failure
            raise verify.Failed(
                f"Produce v{version} with acks=0, then Metadata v{meta_v} on the same "
                f"connection: the first answer is not Metadata's ({e}); acks=0 must not be "
                "answered",
                "LOG.R5",
            ) from None
        except ProtocolViolation as e:
            raise verify.Failed(
                f"Produce v{version} with acks=0, then Metadata v{meta_v} on the same "
                f"connection: the first answer is not Metadata's ({e}); acks=0 must not be "
                "answered",
                "LOG.R5",
            ) from None
        except (TimeoutError, DecodeError) as e:
            raise verify.Failed(
                f"Produce v{version} with acks=0, then Metadata: no Metadata answer ({e})",
                "LOG.R5",
            ) from None
        for acks in (1, -1):
            answer = topic.produce(
                0, batch_bytes([(now_ms(), None, f"acks={acks}".encode())]), "LOG.R5", acks=acks
            )
            verify.check(
                answer["ErrorCode"] == ErrorCode.NONE,
                f"Produce v{version} with acks={acks}: ErrorCode {answer['ErrorCode']}, "
                "expected an answer with 0 (NONE)",
                "LOG.R5",
            )


@conformance("log/produce/create-time-kept", "LOG.R13", api=ApiKey.PRODUCE)
def test_create_time_is_kept(harness: Harness) -> None:
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    with SuiteTopic.create(harness, "log-create-time") as topic:
        base_ts = now_ms() - 3_600_000
        items = [(base_ts + 7 * i, None, f"r{i}".encode()) for i in range(3)]
        answer = topic.produce(0, batch_bytes(items), "LOG.R13")
        verify.check(
            answer["ErrorCode"] == ErrorCode.NONE and answer["LogAppendTimeMs"] == -1,
            f"Produce to a CreateTime topic: ErrorCode {answer['ErrorCode']}, "
            f"LogAppendTimeMs {answer['LogAppendTimeMs']}; expected 0 and -1",
            "LOG.R13",
        )
        _, batches, records = topic.fetch_records(0, answer["BaseOffset"], "LOG.R13")
        types = {b.timestamp_type for b in batches}
        verify.check(
            types == {TimestampType.CREATE_TIME},
            f"fetched batches of a CreateTime topic have timestamp types "
            f"{sorted(t.name for t in types)}, expected CREATE_TIME",
            "LOG.R13",
        )
        verify.check(
            [r.timestamp for r in records[:3]] == [i[0] for i in items],
            f"fetched timestamps {[r.timestamp for r in records[:3]]}, produced "
            f"{[i[0] for i in items]}",
            "LOG.R13",
        )


@conformance("log/produce/log-append-time-applied", "LOG.R18", api=ApiKey.PRODUCE)
def test_log_append_time_is_applied(harness: Harness) -> None:
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    configs = {"message.timestamp.type": "LogAppendTime"}
    with SuiteTopic.create(harness, "log-append-time", configs=configs) as topic:
        sent = now_ms() - 3_600_000
        items = [(sent + i, None, f"r{i}".encode()) for i in range(3)]
        answer = topic.produce(0, batch_bytes(items), "LOG.R18")
        stamped = answer["LogAppendTimeMs"]
        verify.check(
            answer["ErrorCode"] == ErrorCode.NONE and stamped not in (-1, sent),
            f"Produce to a LogAppendTime topic (records stamped {sent}): ErrorCode "
            f"{answer['ErrorCode']}, LogAppendTimeMs {stamped}; expected 0 and the append time",
            "LOG.R18",
        )
        _, batches, records = topic.fetch_records(0, answer["BaseOffset"], "LOG.R18")
        types = {b.timestamp_type for b in batches}
        got = [r.timestamp for r in records[:3]]
        verify.check(
            types == {TimestampType.LOG_APPEND_TIME} and got == [stamped] * 3,
            f"fetched from a LogAppendTime topic: timestamp types "
            f"{sorted(t.name for t in types)}, record timestamps {got}; expected "
            f"LOG_APPEND_TIME and the append time {stamped} for each",
            "LOG.R18",
        )
