"""Legacy message sets (magic 0 and 1): round trips, wrapper semantics, corruption, and
kafka-python's legacy reader and builder as the independent implementation."""

from __future__ import annotations

import struct
import zlib

import lz4.frame
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol.records import (
    Compression,
    CorruptRecordError,
    LegacyMessage,
    PartialBatchError,
    Record,
    RecordBatch,
    TimestampType,
    compress,
    decode_message_set,
    decode_record_set,
    encode_message,
    encode_message_set,
    encode_record_set,
    wrap_messages,
)
from conformance.strategies.records import (
    LEGACY_CODECS,
    encoded_message_sets,
    legacy_messages,
    message_sets,
)
from tests.protocol.records import kafka_python


def message_bytes(
    *, magic: int, attributes: int = 0, key: bytes | None, value: bytes | None, offset: int = 0
) -> bytes:
    """One entry built by hand (for shapes our model refuses to build), with a correct CRC."""
    body = struct.pack(">bB", magic, attributes) + (struct.pack(">q", 0) if magic else b"")
    for field in (key, value):
        body += struct.pack(">i", -1) if field is None else struct.pack(">i", len(field)) + field
    return entry(body, offset=offset)


def entry(body: bytes, *, offset: int = 0) -> bytes:
    """A message-set entry around a message body (magic onwards), with a correct CRC."""
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


# -- round trips --------------------------------------------------------------------------------


@given(st.lists(legacy_messages(codecs=tuple(Compression)), max_size=3))
def test_decode_inverts_encode(messages: list[LegacyMessage]) -> None:
    raw = encode_message_set(messages)
    decoded = decode_message_set(raw)
    assert decoded == messages
    assert b"".join(m.raw or b"" for m in decoded) == raw
    assert [m.crc for m in decoded] == [zlib.crc32(m.raw[16:]) for m in decoded if m.raw]


@given(
    st.sampled_from([0, 1]).flatmap(
        lambda m: legacy_messages(magic=m, compression=Compression.NONE)
    )
)
def test_encode_reproduces_uncompressed_bytes_exactly(message: LegacyMessage) -> None:
    raw = encode_message(message)
    assert encode_message_set(decode_message_set(raw)) == raw


def test_wrapper_offsets_and_timestamps() -> None:
    inner = [LegacyMessage(i, b"k", b"v%d" % i, timestamp=100 + i) for i in range(3)]
    wrapper = wrap_messages(inner, Compression.GZIP, offset=41)
    assert wrapper.timestamp == 102
    logs = wrapper.log_records()
    assert [r.offset for r in logs] == [39, 40, 41]  # magic 1: relative inner offsets
    assert [r.timestamp for r in logs] == [100, 101, 102]
    appended = wrap_messages(
        inner, Compression.GZIP, timestamp=500, timestamp_type=TimestampType.LOG_APPEND_TIME
    )
    assert {r.timestamp for r in appended.log_records()} == {500}
    v0 = wrap_messages([LegacyMessage(7, None, b"x", magic=0)], Compression.SNAPPY)
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in v0.log_records()] == [
        (7, None, None)
    ]


def test_model_refuses_inconsistent_messages() -> None:
    with pytest.raises(ValueError):
        LegacyMessage(0, magic=2)
    with pytest.raises(ValueError):
        LegacyMessage(0, magic=0, timestamp=5)
    with pytest.raises(ValueError):
        LegacyMessage(0, value=b"x", compression=Compression.GZIP)
    with pytest.raises(ValueError):
        LegacyMessage(0, inner=(LegacyMessage(0),))


def test_record_set_mixes_formats_and_keeps_the_tail() -> None:
    v0 = LegacyMessage(0, b"a", b"1", magic=0)
    v1 = wrap_messages([LegacyMessage(0, b"b", b"2", timestamp=5)], Compression.LZ4, offset=1)
    entries = [v0, v1]
    wire = encode_record_set(entries)
    tail = encode_record_set([RecordBatch(records=(Record(0, 0, None, b"x"),))])[:20]
    record_set = decode_record_set(wire + tail)
    assert list(record_set.entries) == entries and record_set.partial == tail
    assert [(r.offset, r.value) for r in record_set.log_records()] == [(0, b"1"), (1, b"2")]
    v2 = RecordBatch(records=(Record(0, 0, None, b"3"),), base_offset=2)
    assert decode_record_set(wire + encode_record_set([v2])).entries == (v0, v1, v2)
    unknown = bytearray(encode_record_set([v2]))
    unknown[16] = 3
    with pytest.raises(CorruptRecordError, match="unknown magic 3"):
        decode_record_set(wire + bytes(unknown))


# -- corruption ---------------------------------------------------------------------------------


@given(encoded_message_sets(), st.integers(1, 255))
def test_any_flipped_byte_under_the_crc_is_a_crc_mismatch(raw: bytes, flip: int) -> None:
    pos = 0
    while pos < len(raw):
        size = struct.unpack_from(">i", raw, pos + 8)[0]
        end = pos + 12 + size
        for i in range(pos + 12, end):  # the CRC field itself, then magic .. end
            bad = bytearray(raw)
            bad[i] ^= flip
            with pytest.raises(CorruptRecordError, match="CRC mismatch"):
                decode_message_set(bytes(bad))
        pos = end


@given(encoded_message_sets().filter(bool))
def test_truncation_at_every_length_is_a_partial_message(raw: bytes) -> None:
    (last_start,) = [len(raw) - len(encode_message(m)) for m in decode_message_set(raw)[-1:]]
    for n in range(last_start + 1, len(raw)):
        with pytest.raises(PartialBatchError):
            decode_message_set(raw[:n])
        assert len(decode_message_set(raw[:n], allow_partial=True)) == len(
            decode_message_set(raw[:last_start])
        )


@given(legacy_messages())
def test_shortened_message_with_consistent_size_and_crc_is_corrupt(message) -> None:
    raw = encode_message(message)
    for n in range(12 + 14, len(raw)):
        body = raw[16:n]
        short = struct.pack(">qiI", 0, n - 12, zlib.crc32(body)) + body
        with pytest.raises(CorruptRecordError):
            decode_message_set(short)


MALFORMED = [
    (message_bytes(magic=1, key=None, value=None)[: 12 + 14], "minimum"),
    (message_bytes(magic=0, attributes=5, key=None, value=b""), "unknown compression codec 5"),
    (message_bytes(magic=1, attributes=1, key=None, value=None), "null value"),
    (entry(b"\x00\x00" + struct.pack(">i", 100) + b"abcd\xff\xff\xff\xff"), "length 100"),
    (entry(b"\x00\x00\xff\xff\xff\xfe\xff\xff\xff\xff"), "length -2"),
    (entry(b"\x00\x00" + b"\xff" * 8 + b"zz"), "2 bytes left after the value"),
    (
        message_bytes(magic=0, attributes=1, key=None, value=compress(Compression.GZIP, b"")),
        "holds no messages",
    ),
    (
        message_bytes(
            magic=1,
            attributes=1,
            key=None,
            value=compress(
                Compression.GZIP,
                message_bytes(
                    magic=1, attributes=1, key=None, value=compress(Compression.GZIP, b"")
                ),
            ),
        ),
        "compressed message inside a compressed message",
    ),
    (
        message_bytes(
            magic=1,
            attributes=2,
            key=None,
            value=compress(Compression.SNAPPY, message_bytes(magic=0, key=b"k", value=b"v")),
        ),
        "inner message magic 0 differs",
    ),
    (
        message_bytes(
            magic=0,
            attributes=1,
            key=None,
            value=compress(Compression.GZIP, message_bytes(magic=0, key=None, value=b"v")[:-1]),
        ),
        "ends inside a message",
    ),
]


@pytest.mark.parametrize(
    ("raw", "reason"), [pytest.param(raw, why, id=why) for raw, why in MALFORMED]
)
def test_malformed_messages_are_corrupt(raw: bytes, reason: str) -> None:
    if reason == "minimum":  # a magic 1 message needs 22 bytes, 14 are enough only for magic 0
        body = raw[16:]
        raw = struct.pack(">qiI", 0, 14, zlib.crc32(body)) + body
    with pytest.raises(CorruptRecordError, match=reason):
        decode_message_set(raw)


def test_magic_zero_lz4_carries_the_broken_header_checksum() -> None:
    inner = [LegacyMessage(i, None, b"payload %d" % i, magic=0) for i in range(3)]
    for magic, broken in ((0, True), (1, False)):
        msgs = [LegacyMessage(m.offset, m.key, m.value, magic=magic) for m in inner]
        wrapper = wrap_messages(msgs, Compression.LZ4)
        raw = encode_message(wrapper)
        value_at = 26 + 8 * magic  # after offset, size, crc, magic, attributes, [ts], key -1
        (value_len,) = struct.unpack_from(">i", raw, value_at - 4)
        frame = raw[value_at : value_at + value_len]
        if broken:  # standard LZ4 readers reject it; Kafka's magic 0 reader expects it
            with pytest.raises(RuntimeError, match="headerChecksum"):
                lz4.frame.decompress(frame)
        else:
            assert lz4.frame.decompress(frame) == encode_message_set(msgs)
        assert decode_message_set(raw) == [wrapper]


# -- kafka-python, both directions --------------------------------------------------------------


@given(message_sets())
def test_kafka_python_reads_our_message_sets_identically(messages: list[LegacyMessage]) -> None:
    raw = encode_message_set(messages)
    theirs = kafka_python.read_all(raw)
    assert len(theirs) == len(messages)
    for ours, batch in zip(messages, theirs, strict=True):
        assert batch.magic == ours.magic and batch.compression_type == ours.compression
        records = list(batch)
        assert all(r.validate_crc() for r in records)
        assert kafka_python.record_tuples(records) == [
            (r.offset, r.timestamp, r.timestamp_type, r.key, r.value, [])
            for r in ours.log_records()
        ]


_items = st.lists(
    st.tuples(
        st.integers(0, 2**41), st.none() | st.binary(max_size=16), st.binary(max_size=64)
    ).map(lambda t: (*t, [])),
    min_size=1,
    max_size=5,
)


@given(st.sampled_from([0, 1]), st.sampled_from(LEGACY_CODECS), _items)
def test_we_read_kafka_python_message_sets_identically(magic, compression, items) -> None:
    raw = kafka_python.build(magic, compression, items)
    decoded = decode_message_set(raw)
    theirs = kafka_python.read_all(raw)  # one entry per message, or one wrapper
    assert [m.compression for m in decoded] == [b.compression_type for b in theirs]
    logs = [r for m in decoded for r in m.log_records()]
    assert [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, []) for r in logs] == [
        t for b in theirs for t in kafka_python.record_tuples(b)
    ]
    assert [(r.key, r.value) for r in logs] == [(k, v) for _ts, k, v, _h in items]
    if compression == Compression.NONE:
        assert encode_message_set(decoded) == raw
    else:
        assert decode_message_set(encode_message_set(decoded)) == decoded
