"""Hypothesis strategies for record batches, legacy messages and their encoded bytes.

Values cover the whole wire range of each field (so round trips exercise every varint width)
while keeping sums such as ``base_timestamp + timestamp_delta`` inside int64.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.protocol.records import (
    Compression,
    ControlType,
    Header,
    LegacyMessage,
    Record,
    RecordBatch,
    TimestampType,
    control_key,
    encode_batch,
    encode_message_set,
    end_txn_marker,
)
from conformance.protocol.spec import INT_RANGES

INT16 = INT_RANGES["int16"]
INT32 = INT_RANGES["int32"]
INT64 = INT_RANGES["int64"]
_HALF_INT64 = (-(2**62), 2**62 - 1)

LEGACY_CODECS = (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4)


def _ints(bounds: tuple[int, int]) -> st.SearchStrategy[int]:
    return st.integers(*bounds)


def nullable_bytes(max_size: int = 24) -> st.SearchStrategy[bytes | None]:
    return st.none() | st.binary(max_size=max_size)


def headers() -> st.SearchStrategy[Header]:
    """A header: any (surrogate-free) string key, nullable value."""
    return st.builds(Header, key=st.text(max_size=12), value=nullable_bytes(16))


def records(*, offset_delta: st.SearchStrategy[int] | None = None) -> st.SearchStrategy[Record]:
    """A v2 record; the unused attributes byte is usually 0 but may be anything."""
    return st.builds(
        Record,
        offset_delta=offset_delta if offset_delta is not None else _ints(INT32),
        timestamp_delta=_ints(_HALF_INT64) | st.integers(-1000, 1000),
        key=nullable_bytes(),
        value=nullable_bytes(48),
        headers=st.lists(headers(), max_size=3).map(tuple),
        attributes=st.just(0) | st.integers(-128, 127),
    )


@st.composite
def _record_tuples(draw: st.DrawFn, max_records: int) -> tuple[Record, ...]:
    n = draw(st.integers(0, max_records))
    if draw(st.booleans()):  # as producers write them: offset deltas 0..n-1
        return tuple(draw(records(offset_delta=st.just(i))) for i in range(n))
    return tuple(draw(st.lists(records(), min_size=n, max_size=n)))


def _control_records() -> st.SearchStrategy[Record]:
    return st.builds(
        Record,
        offset_delta=st.integers(0, 10),
        timestamp_delta=st.integers(0, 1000),
        key=st.builds(
            control_key,
            st.sampled_from([ControlType.ABORT, ControlType.COMMIT]),
            st.integers(0, 2**15 - 1),
        ),
        value=st.builds(end_txn_marker, _ints(INT32)),
    )


@st.composite
def record_batches(
    draw: st.DrawFn,
    *,
    compression: Compression | None = None,
    control: bool | None = None,
    max_records: int = 5,
) -> RecordBatch:
    """A v2 batch; ``compression`` / ``control`` pin those, otherwise every value is drawn.

    Control batches hold ABORT/COMMIT markers and are transactional with a producer id, as
    the leader writes them; other batches may be idempotent, transactional, or neither.
    """
    is_control = draw(st.booleans()) if control is None else control
    if is_control:
        recs = tuple(draw(st.lists(_control_records(), min_size=1, max_size=2)))
    else:
        recs = draw(_record_tuples(max_records))
    if is_control or draw(st.booleans()):
        producer = (
            draw(st.integers(0, INT64[1])),
            draw(st.integers(0, INT16[1])),
            -1 if is_control else draw(st.integers(0, INT32[1])),
        )
    else:
        producer = (-1, -1, -1)
    return RecordBatch(
        records=recs,
        base_offset=draw(_ints(INT64) | st.integers(0, 10**6)),
        partition_leader_epoch=draw(_ints(INT32) | st.just(-1)),
        compression=draw(st.sampled_from(Compression)) if compression is None else compression,
        timestamp_type=draw(st.sampled_from(TimestampType)),
        is_transactional=True if is_control else draw(st.booleans()),
        is_control=is_control,
        has_delete_horizon=draw(st.booleans()),
        last_offset_delta=draw(st.none() | _ints(INT32)),
        base_timestamp=draw(_ints(_HALF_INT64) | st.just(-1)),
        max_timestamp=draw(st.none() | _ints(INT64)),
        producer_id=producer[0],
        producer_epoch=producer[1],
        base_sequence=producer[2],
        unused_attribute_bits=draw(st.just(0) | st.integers(1, 0x1FF).map(lambda b: b << 7)),
    )


def encoded_batches(
    *, compression: Compression | None = None, control: bool | None = None
) -> st.SearchStrategy[bytes]:
    """The wire bytes of one batch."""
    return record_batches(compression=compression, control=control).map(encode_batch)


@st.composite
def legacy_messages(
    draw: st.DrawFn,
    *,
    magic: int | None = None,
    compression: Compression | None = None,
    codecs: tuple[Compression, ...] = LEGACY_CODECS,
) -> LegacyMessage:
    """A magic 0/1 message; a compressed one wraps 1-4 inner messages of the same magic."""
    m = draw(st.sampled_from([0, 1])) if magic is None else magic
    codec = draw(st.sampled_from(codecs)) if compression is None else compression

    def plain(offset: st.SearchStrategy[int]) -> st.SearchStrategy[LegacyMessage]:
        return st.builds(
            LegacyMessage,
            offset=offset,
            key=nullable_bytes(),
            value=nullable_bytes(48),
            magic=st.just(m),
            timestamp=_ints(INT64) if m == 1 else st.none(),
            timestamp_type=st.sampled_from(TimestampType),
            unused_attribute_bits=st.just(0) | st.integers(1, 15).map(lambda b: b << 4),
        )

    if codec == Compression.NONE:
        return draw(plain(_ints(INT64)))
    n = draw(st.integers(1, 4))
    relative = m == 1 and draw(st.booleans())  # magic 1 producers write offsets 0..n-1
    inner = tuple(
        draw(plain(st.just(i) if relative else _ints(INT64) | st.integers(0, 100)))
        for i in range(n)
    )
    return LegacyMessage(
        offset=draw(_ints(INT64) | st.just(inner[-1].offset)),
        key=draw(st.none() | st.binary(max_size=8)),
        magic=m,
        timestamp=draw(_ints(INT64)) if m == 1 else None,
        compression=codec,
        timestamp_type=draw(st.sampled_from(TimestampType)),
        inner=inner,
    )


def message_sets(*, magic: int | None = None) -> st.SearchStrategy[list[LegacyMessage]]:
    """A message set: 0-3 messages of one magic (as one produce request carries)."""
    return st.sampled_from([0, 1] if magic is None else [magic]).flatmap(
        lambda m: st.lists(legacy_messages(magic=m), max_size=3)
    )


def encoded_message_sets(*, magic: int | None = None) -> st.SearchStrategy[bytes]:
    """The wire bytes of a message set."""
    return message_sets(magic=magic).map(encode_message_set)
