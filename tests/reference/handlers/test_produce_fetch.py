"""Produce, Fetch, ListOffsets and InitProducerId as a client sees them, on in-process brokers:
exact bytes stored and served, Kafka's error codes for malformed or refused batches,
idempotent producers, long-polling, byte limits, offsets by time."""

from __future__ import annotations

import asyncio
import struct
import time
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from conformance.client.wire import ConnectionClosed
from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.framing import encode_request
from conformance.protocol.records import (
    Compression,
    build_batch,
    control_batch,
    decode_batches,
    encode_batch,
    encode_message_set,
)
from conformance.protocol.records.legacy import LegacyMessage
from tests.reference.data_plane import CODEC, MiniCluster, fetch_body, produce_body


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def batch(*values: bytes, ts: int = 1_000, **kw) -> bytes:
    return encode_batch(build_batch([(ts + i, b"k", v) for i, v in enumerate(values)], **kw))


def recrc(raw: bytes | bytearray) -> bytes:
    """The batch with its length and CRC made right again (to get past them to what follows)."""
    buf = bytearray(raw)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


async def single(tmp_path: Path, **settings) -> MiniCluster:
    c = await MiniCluster(tmp_path, brokers=1, settings=settings).start()
    await c.create_topic("t", partitions=2)
    return c


async def produce(c: MiniCluster, records: bytes | None, *, version: int = 9, **kw) -> dict:
    conn = await c.connect(1)
    try:
        resp = await conn.request(ApiKey.PRODUCE, version, produce_body("t", records, **kw))
    finally:
        await conn.close()
    return resp.body["Responses"][0]["PartitionResponses"][0]


async def fetch_all(c: MiniCluster, index: int = 0, version: int = 12) -> list[bytes]:
    conn = await c.connect(1)
    out: list[bytes] = []
    offset = 0
    try:
        while True:
            resp = await conn.request(ApiKey.FETCH, version, fetch_body("t", offset, index=index))
            part = resp.body["Responses"][0]["Partitions"][0]
            assert part["ErrorCode"] == 0
            batches = decode_batches(part["Records"])
            if not batches:
                return out
            out += [b.raw for b in batches]
            offset = batches[-1].next_offset
    finally:
        await conn.close()


def stamped(raw: bytes, base: int, epoch: int = 0) -> bytes:
    buf = bytearray(raw)
    struct.pack_into(">q", buf, 0, base)
    struct.pack_into(">i", buf, 12, epoch)
    return bytes(buf)


# -- storing and serving ----------------------------------------------------------------------


@pytest.mark.parametrize("compression", list(Compression))
def test_batches_are_stored_and_served_exactly_as_produced(tmp_path: Path, compression) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            sent = [batch(b"v%d" % i, b"w" * i, compression=compression) for i in range(5)]
            for i, raw in enumerate(sent):
                r = await produce(c, raw)
                assert (r["ErrorCode"], r["BaseOffset"]) == (0, 2 * i)
            got = await fetch_all(c)
            # only the leader-assigned base offset and leader epoch differ (outside the CRC)
            assert got == [stamped(raw, 2 * i) for i, raw in enumerate(sent)]
        finally:
            await c.stop()

    run(main())


def test_fetch_v13_addresses_topics_by_id(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            await produce(c, batch(b"x"))
            body = fetch_body("t", 0)
            body["Topics"][0]["TopicId"] = c.topics["t"].topic_id
            unknown = dict(body["Topics"][0], TopicId=__import__("uuid").uuid4())
            body["Topics"].append(unknown)
            conn = await c.connect(1)
            resp = await conn.request(ApiKey.FETCH, 16, body)
            await conn.close()
            known, missing = resp.body["Responses"]
            assert known["TopicId"] == c.topics["t"].topic_id
            assert decode_batches(known["Partitions"][0]["Records"])[0].records[0].value == b"x"
            assert missing["Partitions"][0]["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_ID
        finally:
            await c.stop()

    run(main())


def test_produce_v13_and_fetch_v18_address_topics_by_id(tmp_path: Path) -> None:
    """Kafka 4.4's newest: Produce v13 names topics by id (an unknown one UNKNOWN_TOPIC_ID) and
    answers by id; Fetch v18 reads what it wrote; ListOffsets v10 finds its end."""

    async def main():
        c = await single(tmp_path)
        try:
            topic_id = c.topics["t"].topic_id
            body = produce_body("t", batch(b"by-id"))
            body["TopicData"][0]["TopicId"] = topic_id
            unknown = dict(body["TopicData"][0], TopicId=__import__("uuid").uuid4())
            body["TopicData"].append(unknown)
            conn = await c.connect(1)
            resp = await conn.request(ApiKey.PRODUCE, 13, body)
            known, missing = resp.body["Responses"]
            assert known["TopicId"] == topic_id
            assert known["PartitionResponses"][0]["ErrorCode"] == 0
            assert missing["PartitionResponses"][0]["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_ID
            fetch = fetch_body("t", 0)
            fetch["Topics"][0]["TopicId"] = topic_id
            got = (await conn.request(ApiKey.FETCH, 18, fetch)).body["Responses"][0]
            assert decode_batches(got["Partitions"][0]["Records"])[0].records[0].value == b"by-id"
            # ListOffsets v10 (KIP-1075's TimeoutMs): the latest offset, at once
            part = {"PartitionIndex": 0, "CurrentLeaderEpoch": -1, "Timestamp": -1}
            body = {
                "ReplicaId": -1,
                "IsolationLevel": 0,
                "Topics": [{"Name": "t", "Partitions": [part]}],
                "TimeoutMs": 1000,
            }
            listed = (await conn.request(ApiKey.LIST_OFFSETS, 10, body)).body
            assert listed["Topics"][0]["Partitions"][0]["Offset"] == 1
            await conn.close()
        finally:
            await c.stop()

    run(main())


def test_old_versions_are_not_served_as_in_kafka_4(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            conn = await c.connect(1)
            versions = await conn.api_versions()
            assert versions[ApiKey.PRODUCE][0] == 3 and versions[ApiKey.FETCH][0] == 4
            assert versions[ApiKey.LIST_OFFSETS][0] == 1
            with pytest.raises(ConnectionClosed):
                await conn.request(ApiKey.PRODUCE, 2, produce_body("t", batch(b"x")), timeout=5)
        finally:
            await c.stop()

    run(main())


# -- refused batches --------------------------------------------------------------------------


def _bad_varint() -> bytes:
    raw = bytearray(batch(b"value"))
    raw[61:66] = b"\xff\xff\xff\xff\xff"  # a record length varint that never ends
    return recrc(raw)


def _count_mismatch() -> bytes:
    raw = bytearray(batch(b"a", b"b"))
    struct.pack_into(">i", raw, 57, 3)  # three records declared, two present
    struct.pack_into(">i", raw, 23, 2)  # and an offset range to match
    return recrc(raw)


def _length(raw: bytes, length: int) -> bytes:
    buf = bytearray(raw)
    struct.pack_into(">i", buf, 8, length)
    return bytes(buf)


MALFORMED = {
    "bad_crc": (lambda: batch(b"x")[:-2] + b"y\x00", ErrorCode.CORRUPT_MESSAGE),
    "length_below_header": (lambda: _length(batch(b"x"), 30), ErrorCode.CORRUPT_MESSAGE),
    "length_below_minimum": (lambda: _length(batch(b"x"), 3), ErrorCode.CORRUPT_MESSAGE),
    "length_claims_huge_size": (lambda: _length(batch(b"x"), 0x7FFFFFF0), ErrorCode.INVALID_RECORD),
    "truncated_batch": (lambda: batch(b"x" * 50)[:-10], ErrorCode.INVALID_RECORD),
    "bad_record_varint": (_bad_varint, ErrorCode.INVALID_RECORD),
    "record_count_mismatch": (_count_mismatch, ErrorCode.INVALID_RECORD),
    "two_batches": (lambda: batch(b"x") + batch(b"y"), ErrorCode.INVALID_RECORD),
    "empty_records": (lambda: b"", ErrorCode.INVALID_RECORD),
    "null_records": (lambda: None, ErrorCode.INVALID_RECORD),
    "magic_1_message_set": (
        lambda: encode_message_set([LegacyMessage(0, None, b"x", magic=1, timestamp=5)]),
        ErrorCode.INVALID_RECORD,
    ),
    "nonzero_base_offset": (lambda: batch(b"x", base_offset=7), ErrorCode.INVALID_RECORD),
    "control_batch": (
        lambda: encode_batch(
            control_batch(0, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=1)
        ),
        ErrorCode.INVALID_RECORD,
    ),
    "garbage_gzip_payload": (
        lambda: recrc(batch(b"x", compression=Compression.GZIP)[:61] + b"\x1f\x8b junk"),
        ErrorCode.CORRUPT_MESSAGE,
    ),
    "unknown_codec": (
        lambda: recrc(bytearray(batch(b"x"))[:22] + b"\x07" + batch(b"x")[23:]),
        ErrorCode.CORRUPT_MESSAGE,
    ),
}


def test_malformed_batches_get_kafkas_error_codes_and_change_nothing(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            good = batch(b"kept")
            assert (await produce(c, good))["ErrorCode"] == 0
            for name, (make, code) in MALFORMED.items():
                r = await produce(c, make())
                assert r["ErrorCode"] == code, name
                assert r["BaseOffset"] == -1, name
            assert await fetch_all(c) == [stamped(good, 0)]
            r = await produce(c, batch(b"after"))
            assert (r["ErrorCode"], r["BaseOffset"]) == (0, 1)
        finally:
            await c.stop()

    run(main())


def test_too_large_batches_and_unknown_partitions(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path, log={"max_message_bytes": 500})
        try:
            r = await produce(c, batch(b"x" * 600))
            assert r["ErrorCode"] == ErrorCode.MESSAGE_TOO_LARGE
            r = await produce(c, batch(b"x"), index=9)
            assert r["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            r = await produce(c, batch(b"x"), acks=2)
            assert r["ErrorCode"] == ErrorCode.INVALID_REQUIRED_ACKS
            r = await produce(c, batch(b"x", compression=Compression.ZSTD), version=6)
            assert r["ErrorCode"] == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
            assert await fetch_all(c) == []
        finally:
            await c.stop()

    run(main())


def test_acks_0_gets_no_answer_and_an_error_closes_the_connection(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            conn = await c.connect(1)
            body = produce_body("t", batch(b"x"), acks=0)
            frame = encode_request(CODEC, ApiKey.PRODUCE, 9, 5, "t", body)
            conn.writer.write(struct.pack(">i", len(frame)) + frame)
            # the next request's answer comes first: nothing was sent for acks=0
            versions = await conn.api_versions()
            assert ApiKey.PRODUCE in versions
            assert await fetch_all(c) != []
            bad = produce_body("t", batch(b"x")[:-2] + b"y\x00", acks=0)
            frame = encode_request(CODEC, ApiKey.PRODUCE, 9, 6, "t", bad)
            await conn.send_raw(struct.pack(">i", len(frame)) + frame)
            assert await conn.wait_closed_by_peer(5)
        finally:
            await c.stop()

    run(main())


@given(
    st.lists(
        st.tuples(st.integers(0, 10_000), st.binary(min_size=1, max_size=8)),
        min_size=1,
        max_size=4,
    ),
    st.integers(0, 40),
)
def test_mutated_produce_requests_never_harm_stored_records_or_other_clients(
    tmp_path_factory, patches, cut
) -> None:
    """Any mutation of a produce body: an error answer, a closed connection, or (when the
    mutation left a valid request) an append; stored batches and other clients unaffected."""
    tmp_path = tmp_path_factory.mktemp("mutated")

    async def main():
        c = await single(tmp_path)
        try:
            good = batch(b"first", b"second")
            assert (await produce(c, good))["ErrorCode"] == 0
            watcher = await c.connect(1)  # a client in the middle of a long poll
            poll = asyncio.ensure_future(
                watcher.request(
                    ApiKey.FETCH, 12, fetch_body("t", 0, index=1, max_wait_ms=3000, min_bytes=1)
                )
            )
            frame = bytearray(
                encode_request(
                    CODEC, ApiKey.PRODUCE, 9, 1, "t", produce_body("t", batch(b"new" * 30))
                )
            )
            head = 4 + 2 + 4 + 2 + 1  # key, version, correlation id, client id "t", tags
            for pos, data in patches:
                at = head + pos % (len(frame) - head)
                frame[at : at + len(data)] = data
            if cut:
                frame = frame[: max(head, len(frame) - cut)]
            conn = await c.connect(1)
            fut = conn.send_frame(bytes(frame), ApiKey.PRODUCE, 9, 1)
            try:
                resp = await asyncio.wait_for(fut, 3)
                codes = [
                    p["ErrorCode"] for t in resp.body["Responses"] for p in t["PartitionResponses"]
                ]
                assert all(isinstance(x, int) for x in codes)
            except (ConnectionClosed, TimeoutError):
                pass  # closed, or a mutation that made it acks=0 / a long timeout
            except Exception:
                pass  # an answer our client cannot decode still leaves the broker healthy
            await conn.close()
            stored = await fetch_all(c)
            assert stored[0] == stamped(good, 0), "the stored batch is untouched"
            expect = 0
            for raw in stored:
                b = decode_batches(raw)[0]  # every stored batch still passes its CRC
                assert b.base_offset == expect
                expect = b.next_offset
            r = await produce(c, batch(b"later"), index=1)
            assert r["ErrorCode"] == 0
            part = (await poll).body["Responses"][0]["Partitions"][0]
            assert decode_batches(part["Records"])[0].records[0].value == b"later"
            await watcher.close()
        finally:
            await c.stop()

    run(main())


# -- idempotent producers ---------------------------------------------------------------------


def test_idempotent_producer_duplicates_and_sequence_gaps(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            conn = await c.connect(1)
            resp = await conn.request(
                ApiKey.INIT_PRODUCER_ID, 4, {"TransactionalId": None, "TransactionTimeoutMs": 1000}
            )
            pid, epoch = resp.body["ProducerId"], resp.body["ProducerEpoch"]
            other = (
                await conn.request(
                    ApiKey.INIT_PRODUCER_ID, 4, {"TransactionalId": None, "TransactionTimeoutMs": 1}
                )
            ).body
            assert other["ProducerId"] != pid and pid >= 1 << 32  # broker 1's id space
            await conn.close()

            def idem(seq: int, *values: bytes, pe: int = epoch) -> bytes:
                return batch(*values, producer_id=pid, producer_epoch=pe, base_sequence=seq)

            assert (await produce(c, idem(0, b"a", b"b")))["BaseOffset"] == 0
            assert (await produce(c, idem(2, b"c")))["BaseOffset"] == 2
            dup = await produce(c, idem(0, b"a", b"b"))
            assert (dup["ErrorCode"], dup["BaseOffset"]) == (0, 0), "a retry gets its offset"
            gap = await produce(c, idem(5, b"d"))
            assert gap["ErrorCode"] == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
            assert (await produce(c, idem(0, b"e", pe=epoch + 1)))["BaseOffset"] == 3
            fenced = await produce(c, idem(1, b"f", pe=epoch))
            assert fenced["ErrorCode"] == ErrorCode.INVALID_PRODUCER_EPOCH
            values = [r.value for raw in await fetch_all(c) for r in decode_batches(raw)[0].records]
            assert values == [b"a", b"b", b"c", b"e"]
        finally:
            await c.stop()

    run(main())


def test_producer_ids_are_not_reused_after_a_restart(tmp_path: Path) -> None:
    async def ids(c: MiniCluster, n: int) -> list[int]:
        conn = await c.connect(1)
        out = []
        for _ in range(n):
            resp = await conn.request(
                ApiKey.INIT_PRODUCER_ID, 4, {"TransactionalId": None, "TransactionTimeoutMs": 1}
            )
            out.append(resp.body["ProducerId"])
        await conn.close()
        return out

    async def main():
        c = await single(tmp_path)
        try:
            first = await ids(c, 3)
            await c.crash(1)
            await c.restart(1)
            second = await ids(c, 3)
            assert len(set(first + second)) == 6
        finally:
            await c.stop()

    run(main())


# -- fetch: long poll and limits --------------------------------------------------------------


def test_fetch_long_polls_until_data_arrives_or_max_wait(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            conn = await c.connect(1)
            t0 = time.monotonic()
            resp = await conn.request(ApiKey.FETCH, 12, fetch_body("t", 0, max_wait_ms=400))
            waited = time.monotonic() - t0
            assert resp.body["Responses"][0]["Partitions"][0]["Records"] == b""
            assert 0.35 <= waited < 2
            t0 = time.monotonic()
            poll = asyncio.ensure_future(
                conn.request(ApiKey.FETCH, 12, fetch_body("t", 0, max_wait_ms=5000))
            )
            await asyncio.sleep(0.2)
            await produce(c, batch(b"wake"))
            part = (await poll).body["Responses"][0]["Partitions"][0]
            assert time.monotonic() - t0 < 2, "answered when data arrived, not at max wait"
            assert decode_batches(part["Records"])[0].records[0].value == b"wake"
            await conn.close()
        finally:
            await c.stop()

    run(main())


def test_fetch_byte_limits_return_whole_batches_and_at_least_one(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            sizes = []
            for i in range(4):
                raw = batch(b"x" * 300)
                sizes.append(len(raw))
                await produce(c, raw, index=i % 2)
            conn = await c.connect(1)
            small = fetch_body("t", 0, partition_max_bytes=10)
            part = (await conn.request(ApiKey.FETCH, 12, small)).body["Responses"][0]["Partitions"][
                0
            ]
            assert len(decode_batches(part["Records"])) == 1, "the first batch comes whole"
            two = fetch_body("t", 0, partition_max_bytes=sizes[0] * 2)
            body = two
            body["Topics"][0]["Partitions"].append(
                dict(body["Topics"][0]["Partitions"][0], Partition=1)
            )
            body["MaxBytes"] = sizes[0] * 3
            parts = (await conn.request(ApiKey.FETCH, 12, body)).body["Responses"][0]["Partitions"]
            got = [len(decode_batches(p["Records"])) for p in parts]
            assert got == [2, 1], "the request limit cuts the second partition"
            body["MaxBytes"] = 1
            parts = (await conn.request(ApiKey.FETCH, 12, body)).body["Responses"][0]["Partitions"]
            assert [len(decode_batches(p["Records"])) for p in parts] == [1, 0]
            await conn.close()
        finally:
            await c.stop()

    run(main())


def test_fetch_errors_out_of_range_fenced_epoch_and_sessions(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            await produce(c, batch(b"x"))
            conn = await c.connect(1)

            async def code(body):
                resp = await conn.request(ApiKey.FETCH, 12, body)
                if resp.body["ErrorCode"]:
                    return resp.body["ErrorCode"]
                return resp.body["Responses"][0]["Partitions"][0]["ErrorCode"]

            assert await code(fetch_body("t", 5)) == ErrorCode.OFFSET_OUT_OF_RANGE
            await c.elect("t", 0, 1)  # leader epoch 1 now
            assert await code(fetch_body("t", 0, current_leader_epoch=0)) == 74
            assert await code(fetch_body("t", 0, current_leader_epoch=5)) == 75
            assert await code(fetch_body("t", 0, current_leader_epoch=1)) == 0
            session = dict(fetch_body("t", 0), SessionId=12, SessionEpoch=3)
            assert await code(session) == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
            await conn.close()
        finally:
            await c.stop()

    run(main())


# -- list offsets ---------------------------------------------------------------------------


def test_list_offsets_earliest_latest_by_time_and_max_time(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            await produce(c, batch(b"a", b"b", ts=1_000))  # offsets 0, 1 at 1000, 1001
            await produce(c, batch(b"c", ts=5_000))  # offset 2 at 5000
            await produce(c, batch(b"d", ts=3_000))  # offset 3 at 3000
            conn = await c.connect(1)

            async def offset(ts: int, version: int = 7) -> tuple[int, int]:
                body = {
                    "ReplicaId": -1,
                    "IsolationLevel": 0,
                    "Topics": [
                        {"Name": "t", "Partitions": [{"PartitionIndex": 0, "Timestamp": ts}]}
                    ],
                }
                p = (await conn.request(ApiKey.LIST_OFFSETS, version, body)).body["Topics"][0]
                p = p["Partitions"][0]
                assert p["ErrorCode"] == 0
                return p["Offset"], p["Timestamp"]

            assert (await offset(-2))[0] == 0
            assert (await offset(-1))[0] == 4
            assert await offset(1_001) == (1, 1_001)
            assert await offset(2_000) == (2, 5_000)
            assert await offset(-3) == (2, 5_000)
            assert await offset(9_999) == (-1, -1)
            await conn.close()
        finally:
            await c.stop()

    run(main())
