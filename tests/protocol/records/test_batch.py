"""RecordBatch v2: round trips, exact re-encoding, corruption and truncation, and kafka-python
as an independent implementation read and written in both directions."""

from __future__ import annotations

import dataclasses
import struct
import tracemalloc

import pytest
from crc32c import crc32c
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol.errors import DecodeError, EncodeError
from conformance.protocol.records import (
    Compression,
    ControlType,
    CorruptRecordError,
    Header,
    PartialBatchError,
    Record,
    RecordBatch,
    TimestampType,
    build_batch,
    control_batch,
    decode_batch,
    decode_batches,
    encode_batch,
    parse_end_txn_marker,
    split_batches,
)
from conformance.protocol.records.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, HEADER_SIZE
from conformance.protocol.records.wire import Reader, write_varint
from conformance.strategies.records import encoded_batches, record_batches
from tests.protocol.records import kafka_python


def with_crc(raw: bytes | bytearray) -> bytes:
    """``raw`` with its CRC field recomputed (to get past the CRC to the parser)."""
    raw = bytearray(raw)
    raw[CRC_OFFSET:ATTRIBUTES_OFFSET] = struct.pack(">I", crc32c(bytes(raw[ATTRIBUTES_OFFSET:])))
    return bytes(raw)


def batch_bytes(payload: bytes, *, count: int, attributes: int = 0) -> bytes:
    """A v2 batch around an arbitrary records payload, with correct length and CRC."""
    after_crc = struct.pack(">Hiqqqhii", attributes, 0, 0, 0, -1, -1, -1, count) + payload
    head = struct.pack(">qiibI", 0, len(after_crc) + 9, -1, 2, 0)
    return with_crc(head + after_crc)


# -- round trips --------------------------------------------------------------------------------


@pytest.mark.parametrize("compression", list(Compression), ids=lambda c: c.name)
@given(data=st.data())
def test_decode_inverts_encode_for_every_compression(compression: Compression, data) -> None:
    batch = data.draw(record_batches(compression=compression))
    raw = encode_batch(batch)
    decoded = decode_batch(raw)
    assert decoded == batch
    assert decoded.raw == raw
    assert decoded.crc == crc32c(raw[ATTRIBUTES_OFFSET:])


@given(encoded_batches(compression=Compression.NONE))
def test_encode_reproduces_uncompressed_bytes_exactly(raw: bytes) -> None:
    assert encode_batch(decode_batch(raw)) == raw


@given(st.lists(record_batches(max_records=2), max_size=4), st.data())
def test_back_to_back_batches_and_partial_tail(batches: list[RecordBatch], data) -> None:
    wire = b"".join(encode_batch(b) for b in batches)
    assert decode_batches(wire) == batches
    extra = encode_batch(data.draw(record_batches(max_records=2)))
    cut = data.draw(st.integers(1, len(extra) - 1))
    with pytest.raises(PartialBatchError) as info:
        decode_batches(wire + extra[:cut])
    assert info.value.offset == len(wire)
    assert decode_batches(wire + extra[:cut], allow_partial=True) == batches
    raws, tail = split_batches(wire + extra[:cut])
    assert raws == [encode_batch(b) for b in batches] and tail == extra[:cut]


def test_replace_drops_the_raw_bytes() -> None:
    decoded = decode_batch(encode_batch(build_batch([(5, b"k", b"v")])))
    assert decoded.raw is not None
    moved = dataclasses.replace(decoded, base_offset=100)
    assert moved.raw is None and moved.base_offset == 100
    assert decode_batch(encode_batch(moved)) == moved


def test_attribute_bits() -> None:
    batch = RecordBatch(
        compression=Compression.LZ4,
        timestamp_type=TimestampType.LOG_APPEND_TIME,
        is_transactional=True,
        has_delete_horizon=True,
        producer_id=1,
        producer_epoch=0,
        unused_attribute_bits=0x8000,
    )
    assert batch.attributes == 0x8000 | 0x40 | 0x10 | 0x08 | 0x03
    raw = encode_batch(batch)
    assert raw[ATTRIBUTES_OFFSET : ATTRIBUTES_OFFSET + 2] == b"\x80\x5b"
    assert decode_batch(raw) == batch
    assert RecordBatch(is_control=True).attributes == 0x20


def test_defaults_follow_the_records() -> None:
    batch = build_batch([(1000, b"a", b"1"), (990, None, b"2"), (1010, b"c", None)], base_offset=7)
    assert batch.base_timestamp == 1000 and batch.max_timestamp == 1010
    assert batch.last_offset_delta == 2 and batch.last_offset == 9 and batch.next_offset == 10
    assert [r.offset for r in batch.log_records()] == [7, 8, 9]
    assert [r.timestamp for r in batch.log_records()] == [1000, 990, 1010]
    appended = dataclasses.replace(batch, timestamp_type=TimestampType.LOG_APPEND_TIME)
    assert {r.timestamp for r in appended.log_records()} == {1010}
    empty = RecordBatch()
    assert (empty.last_offset_delta, empty.max_timestamp) == (0, -1)
    assert decode_batch(encode_batch(empty)) == empty


def test_control_batch_markers() -> None:
    batch = control_batch(
        ControlType.COMMIT, producer_id=9, producer_epoch=2, coordinator_epoch=5, timestamp=77
    )
    decoded = decode_batch(encode_batch(batch))
    assert decoded.is_control and decoded.is_transactional
    assert decoded.control_types() == [ControlType.COMMIT]
    assert parse_end_txn_marker(decoded.records[0].value) == (0, 5)
    assert decoded.records[0].key == b"\x00\x00\x00\x01"


@pytest.mark.parametrize("key", [None, b"", b"\x00\x00\x00", b"\xff\xff\x00\x01"])
def test_control_batch_with_a_bad_key_is_corrupt(key: bytes | None) -> None:
    raw = encode_batch(RecordBatch(records=(Record(0, 0, key, b"x"),), is_control=True))
    with pytest.raises(CorruptRecordError, match="control record key") as info:
        decode_batch(raw)
    assert info.value.path == "batch[0].records[0].key"


def test_encode_rejects_out_of_range_values() -> None:
    with pytest.raises(EncodeError):
        encode_batch(RecordBatch(records=(Record(2**31, 0, None, None),)))
    with pytest.raises(EncodeError):
        encode_batch(RecordBatch(producer_epoch=2**15))
    with pytest.raises(EncodeError):
        encode_batch(RecordBatch(records=(Record(0, 2**63, None, None),)))


# -- corruption ---------------------------------------------------------------------------------


@given(encoded_batches(), st.integers(1, 255))
def test_any_flipped_byte_under_the_crc_is_a_crc_mismatch(raw: bytes, flip: int) -> None:
    stored = struct.unpack_from(">I", raw, CRC_OFFSET)[0]
    for pos in range(CRC_OFFSET, len(raw)):
        bad = bytearray(raw)
        bad[pos] ^= flip
        with pytest.raises(CorruptRecordError, match="CRC mismatch") as info:
            decode_batches(bytes(bad))
        err = info.value
        assert isinstance(err, DecodeError) and err.offset == CRC_OFFSET
        if pos >= ATTRIBUTES_OFFSET:  # the message names the stored and the computed CRC
            computed = crc32c(bytes(bad[ATTRIBUTES_OFFSET:]))
            assert f"expected 0x{stored:08x}" in str(err)
            assert f"computed 0x{computed:08x}" in str(err)


@given(encoded_batches())
def test_truncation_at_every_length_is_a_partial_batch(raw: bytes) -> None:
    for n in range(1, len(raw)):
        with pytest.raises(PartialBatchError):
            decode_batches(raw[:n])
        assert decode_batches(raw[:n], allow_partial=True) == []


@given(encoded_batches())
def test_shortened_batch_with_consistent_length_and_crc_is_corrupt(raw: bytes) -> None:
    count = struct.unpack_from(">i", raw, HEADER_SIZE - 4)[0]
    for n in range(12, len(raw)):
        short = bytearray(raw[:n])
        struct.pack_into(">i", short, 8, n - 12)
        short = with_crc(short) if n >= ATTRIBUTES_OFFSET else bytes(short)
        try:
            batch = decode_batch(short)
        except CorruptRecordError:
            continue
        # only an empty batch cut right after its header (an empty payload) is still valid
        assert count == 0 and n == HEADER_SIZE and batch.records == ()


@given(encoded_batches(), st.lists(st.tuples(st.integers(0), st.integers(0, 255)), max_size=4))
def test_mutated_payload_with_fixed_crc_decodes_or_is_corrupt(raw: bytes, edits) -> None:
    bad = bytearray(raw)
    for pos, value in edits:
        bad[ATTRIBUTES_OFFSET + pos % (len(raw) - ATTRIBUTES_OFFSET)] = value
    try:
        decode_batch(with_crc(bad))
    except CorruptRecordError:
        pass


@given(st.integers(0, 7), st.integers(-3, 3), st.binary(max_size=80))
def test_arbitrary_payload_with_valid_crc_decodes_or_is_corrupt(codec, count, payload) -> None:
    try:
        decode_batch(batch_bytes(payload, count=count, attributes=codec))
    except CorruptRecordError:
        pass


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_compression_codec(codec: int) -> None:
    with pytest.raises(CorruptRecordError, match=f"unknown compression codec {codec}"):
        decode_batch(batch_bytes(b"", count=0, attributes=codec))


def test_wrong_magic_and_short_length() -> None:
    raw = bytearray(encode_batch(build_batch([(1, b"k", b"v")])))
    raw[16] = 1
    with pytest.raises(CorruptRecordError, match="magic 1"):
        decode_batches(bytes(raw))
    short = struct.pack(">qiib", 0, 30, 0, 2) + bytes(25)
    with pytest.raises(CorruptRecordError, match="less than the minimum 49"):
        decode_batches(short)
    with pytest.raises(CorruptRecordError, match="less than the minimum 14"):
        decode_batches(struct.pack(">qi", 0, 13) + bytes(13))


def _record(body: bytes) -> bytes:
    out = bytearray()
    write_varint(out, len(body))
    return bytes(out) + body


@pytest.mark.parametrize(
    ("record", "reason"),
    [
        (_record(b"\x00\x00\x00\xfe\xff\xff\xff\x0f"), "length 2147483647 exceeds"),  # key
        (_record(b"\x00\x00\x00\x03\x00\x00"), "invalid length -2"),  # key length -2
        (_record(b"\x00\x00\x00\x01\x01\x01"), "negative header count -1"),
        (_record(b"\x00\x00\x00\x01\x01\xfe\xff\xff\xff\x0f"), "fields take|needs|past the end"),
        (_record(b"\x00\x00\x00\x01\x01\x02\x02\xff\xfe\x01"), "not UTF-8"),
        (_record(b"\x00\x00\x00\x01\x01\x00\x00"), "fields take 6 bytes"),
        (b"\xfe\xff\xff\xff\x0f\x00", "record length 2147483647 is invalid"),
        (b"\x01", "record length -1 is invalid"),
        (_record(b"\x00\x80\x80\x80\x80\x80\x80\x80\x80\x80\x80"), "longer than 10 bytes"),
        (_record(b"\x00\x00\xff\xff\xff\xff\x1f"), "does not fit in 32 bits"),
    ],
)
def test_bad_record_fields_are_corrupt(record: bytes, reason: str) -> None:
    with pytest.raises(CorruptRecordError, match=reason) as info:
        decode_batch(batch_bytes(record, count=1))
    assert info.value.path.startswith("batch[0].records[0]")
    assert HEADER_SIZE <= info.value.offset <= HEADER_SIZE + len(record)


def test_count_mismatches_are_corrupt() -> None:
    one = _record(b"\x00\x00\x00\x01\x01\x00")
    with pytest.raises(CorruptRecordError, match="declares 2 records but holds only 1"):
        decode_batch(batch_bytes(one, count=2))
    with pytest.raises(CorruptRecordError, match="bytes left after the 1 declared"):
        decode_batch(batch_bytes(one + one, count=1))
    with pytest.raises(CorruptRecordError, match="negative record count"):
        decode_batch(batch_bytes(b"", count=-1))


def test_non_minimal_varints_are_accepted_and_overflow_is_not() -> None:
    assert Reader(b"\x80\x00").varint() == 0
    assert Reader(b"\xff\xff\xff\xff\x0f").varint() == -(2**31)
    assert Reader(b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01").varlong() == 2**63 - 1
    with pytest.raises(CorruptRecordError, match="does not fit"):
        Reader(b"\xff\xff\xff\xff\xff\xff\xff\xff\xff\x03").varlong()


def test_huge_claimed_lengths_do_not_allocate() -> None:
    """Lengths near 2 GiB in the batch length, record count, record, key and header count."""
    huge_batch = struct.pack(">qii", 0, 2**31 - 1, 0) + bytes(60)
    cases = [
        (huge_batch, PartialBatchError),
        (batch_bytes(b"", count=2**31 - 1), CorruptRecordError),
        (batch_bytes(b"\xfe\xff\xff\xff\x0f" + bytes(10), count=1), CorruptRecordError),
        (batch_bytes(_record(b"\x00\x00\x00\xfe\xff\xff\xff\x0f"), count=1), CorruptRecordError),
        (
            batch_bytes(_record(b"\x00\x00\x00\x01\x01\xfe\xff\xff\xff\x0f"), count=1),
            CorruptRecordError,
        ),
    ]
    tracemalloc.start()
    try:
        for raw, error in cases:
            with pytest.raises(error):
                decode_batches(raw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024


# -- kafka-python, both directions --------------------------------------------------------------


def _zero_record_attributes(batch: RecordBatch) -> RecordBatch:
    # kafka-python reads the record attributes int8 as a varint (a bug of its own; Java reads a
    # byte), so it can only read records whose attributes are 0, as every producer writes them
    records = tuple(dataclasses.replace(r, attributes=0) for r in batch.records)
    return dataclasses.replace(batch, records=records)


@given(record_batches().map(_zero_record_attributes))
def test_kafka_python_reads_our_batches_identically(batch: RecordBatch) -> None:
    raw = encode_batch(batch)
    (theirs,) = kafka_python.read_all(raw)
    assert theirs.validate_crc()
    assert (
        theirs.magic,
        theirs.base_offset,
        theirs.leader_epoch,
        theirs.crc,
        theirs.attributes & 0xFFFF,
        theirs.last_offset_delta,
        theirs.first_timestamp,
        theirs.max_timestamp,
        theirs.producer_id,
        theirs.producer_epoch,
        theirs.base_sequence,
        theirs.records_count,
        theirs.is_transactional,
        theirs.is_control_batch,
        theirs.compression_type,
        theirs.timestamp_type,
    ) == (
        2,
        batch.base_offset,
        batch.partition_leader_epoch,
        batch.crc,
        batch.attributes,
        batch.last_offset_delta,
        batch.base_timestamp,
        batch.max_timestamp,
        batch.producer_id,
        batch.producer_epoch,
        batch.base_sequence,
        len(batch.records),
        batch.is_transactional,
        batch.is_control,
        batch.compression,
        batch.timestamp_type,
    )
    if not batch.records:
        return  # kafka-python decompresses even empty batches and fails on empty snappy
    assert kafka_python.record_tuples(theirs) == [
        (
            r.offset,
            r.timestamp,
            r.timestamp_type,
            r.key,
            r.value,
            [(h.key, h.value) for h in r.headers],
        )
        for r in batch.log_records()
    ]


_items = st.lists(
    st.tuples(
        st.integers(0, 2**41),
        st.none() | st.binary(max_size=16),
        st.none() | st.binary(max_size=64),
        st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=2),
    ),
    min_size=1,
    max_size=6,
)


@st.composite
def _producer_state(draw) -> dict:
    if not draw(st.booleans()):
        return {}
    return {
        "producer_id": draw(st.integers(0, 2**63 - 1)),
        "producer_epoch": draw(st.integers(0, 2**15 - 1)),
        "base_sequence": draw(st.integers(0, 2**31 - 1)),
        "transactional": draw(st.booleans()),
    }


@given(st.sampled_from(Compression), _items, _producer_state())
def test_we_read_kafka_python_batches_identically(compression, items, producer) -> None:
    raw = kafka_python.build(2, compression, items, **producer)
    batch = decode_batch(raw)
    (theirs,) = kafka_python.read_all(raw)
    assert batch.compression == theirs.compression_type  # it skips codecs that do not shrink
    assert batch.crc == theirs.crc
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (
        producer.get("producer_id", -1),
        producer.get("producer_epoch", -1),
        producer.get("base_sequence", -1),
    )
    assert batch.is_transactional == producer.get("transactional", False)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch.log_records()] == [
        (i, ts, key, value, tuple(Header(k, v) for k, v in headers))
        for i, (ts, key, value, headers) in enumerate(items)
    ]
    if batch.compression == Compression.NONE:
        assert encode_batch(batch) == raw
    else:
        assert decode_batch(encode_batch(batch)) == batch


def test_same_bytes_as_kafka_python_for_a_known_batch() -> None:
    items = [(1_700_000_000_000, b"key", b"value", [("h", b"1"), ("n", None)])]
    items.append((1_700_000_000_005, None, b"v2", []))
    raw = kafka_python.build(2, 0, items)
    ours = build_batch(
        [(ts, k, v, [Header(hk, hv) for hk, hv in h]) for ts, k, v, h in items],
        partition_leader_epoch=0,
    )
    assert encode_batch(ours) == raw
