"""RecordBatch v2 (magic 2): the on-disk and on-wire unit of records since Kafka 0.11.

The header's layout is ``header.py``'s; the records follow it, compressed as one payload
when the codec bits say so.

A decoded batch keeps the exact bytes it came from in ``raw`` (a broker stores and serves
batches as received); ``encode_batch`` always re-encodes from the fields.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from crc32c import crc32c

from conformance.protocol.errors import EncodeError
from conformance.protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Compression,
    codec,
    compress,
    decompress,
)
from conformance.protocol.records.control import (
    ControlType,
    control_key,
    end_txn_marker,
    parse_control_key,
)
from conformance.protocol.records.entries import LOG_OVERHEAD, complete_entries
from conformance.protocol.records.errors import CorruptRecordError
from conformance.protocol.records.header import (
    AFTER_CRC,
    ATTRIBUTES_OFFSET,
    CONTROL_BIT,
    CRC,
    CRC_OFFSET,
    DELETE_HORIZON_BIT,
    HEAD,
    HEADER_SIZE,
    KNOWN_BITS,
    MAGIC,
    NO_PRODUCER_ID,
    RECORDS_COUNT_OFFSET,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
)
from conformance.protocol.records.record import (
    Header,
    LogRecord,
    Record,
    TimestampType,
    decode_record,
    encode_record,
)
from conformance.protocol.records.wire import Reader

NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1


@dataclass(frozen=True)
class RecordBatch:
    """A v2 record batch; ``records`` are the decompressed records.

    ``last_offset_delta`` and ``max_timestamp`` default (None) to what the records imply: the
    last record's offset delta (0 when empty) and the largest record timestamp (-1 when empty).
    ``unused_attribute_bits`` keeps attribute bits 7-15 for exact round trips.
    ``raw`` is the exact bytes a decoded batch came from (None for one built in memory, and
    for any copy made with ``dataclasses.replace``).
    """

    records: tuple[Record, ...] = ()
    base_offset: int = 0
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    compression: Compression = Compression.NONE
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    is_transactional: bool = False
    is_control: bool = False
    has_delete_horizon: bool = False
    last_offset_delta: int | None = None
    base_timestamp: int = NO_TIMESTAMP
    max_timestamp: int | None = None
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    base_sequence: int = NO_SEQUENCE
    unused_attribute_bits: int = 0
    raw: bytes | None = field(default=None, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        if not isinstance(self.records, tuple):
            set_(self, "records", tuple(self.records))
        set_(self, "compression", Compression(self.compression))
        set_(self, "timestamp_type", TimestampType(self.timestamp_type))
        if self.unused_attribute_bits & KNOWN_BITS:
            raise ValueError("unused_attribute_bits must not overlap the defined bits 0-6")
        if self.last_offset_delta is None:
            set_(self, "last_offset_delta", self.records[-1].offset_delta if self.records else 0)
        if self.max_timestamp is None:
            max_ts = max(
                (self.base_timestamp + r.timestamp_delta for r in self.records),
                default=NO_TIMESTAMP,
            )
            set_(self, "max_timestamp", max_ts)

    @property
    def magic(self) -> int:
        return MAGIC

    @property
    def attributes(self) -> int:
        """The attributes int16 (as unsigned bits)."""
        return (
            int(self.compression)
            | (TIMESTAMP_TYPE_BIT if self.timestamp_type == TimestampType.LOG_APPEND_TIME else 0)
            | (TRANSACTIONAL_BIT if self.is_transactional else 0)
            | (CONTROL_BIT if self.is_control else 0)
            | (DELETE_HORIZON_BIT if self.has_delete_horizon else 0)
            | self.unused_attribute_bits
        )

    @property
    def last_offset(self) -> int:
        assert self.last_offset_delta is not None
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def crc(self) -> int:
        """The CRC-32C the batch carries (from ``raw`` when decoded, else as encoded)."""
        data = self.raw if self.raw is not None else encode_batch(self)
        return CRC.unpack_from(data, CRC_OFFSET)[0]

    def log_records(self) -> list[LogRecord]:
        """The records with absolute offsets and timestamps, as a consumer sees them."""
        assert self.max_timestamp is not None
        append_time = self.timestamp_type == TimestampType.LOG_APPEND_TIME
        base_ts = self.base_timestamp
        return [
            LogRecord(
                offset=self.base_offset + r.offset_delta,
                timestamp=self.max_timestamp if append_time else base_ts + r.timestamp_delta,
                timestamp_type=self.timestamp_type,
                key=r.key,
                value=r.value,
                headers=r.headers,
            )
            for r in self.records
        ]

    def control_types(self) -> list[int]:
        """The control type of each record of a control batch (see ControlType)."""
        return [parse_control_key(r.key)[1] for r in self.records]


# -- encoding -----------------------------------------------------------------------------------


def encode_batch(batch: RecordBatch) -> bytes:
    """The wire bytes of a batch: records encoded, compressed per ``batch.compression``."""
    payload = bytearray()
    for i, record in enumerate(batch.records):
        try:
            encode_record(payload, record)
        except (ValueError, TypeError, AttributeError) as e:
            raise EncodeError("RecordBatch", f"records[{i}]", str(e)) from e
    body = compress(batch.compression, bytes(payload))
    try:
        after_crc = (
            AFTER_CRC.pack(
                batch.attributes,
                batch.last_offset_delta,
                batch.base_timestamp,
                batch.max_timestamp,
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                len(batch.records),
            )
            + body
        )
        head = HEAD.pack(
            batch.base_offset,
            len(after_crc) + ATTRIBUTES_OFFSET - LOG_OVERHEAD,
            batch.partition_leader_epoch,
            MAGIC,
        )
    except struct.error as e:
        raise EncodeError("RecordBatch", "", f"a header field is out of range: {e}") from e
    return head + CRC.pack(crc32c(after_crc)) + after_crc


#: ``(timestamp_ms, key, value)`` or ``(timestamp_ms, key, value, headers)``
BatchItem = (
    tuple[int, bytes | None, bytes | None]
    | tuple[int, bytes | None, bytes | None, Sequence[Header]]
)


def build_batch(
    items: Iterable[BatchItem],
    **fields: object,
) -> RecordBatch:
    """A batch from ``(timestamp_ms, key, value[, headers])`` items, as a producer builds one.

    Offset deltas are 0..n-1 and the base timestamp is the first item's; any RecordBatch field
    (base_offset, compression, producer_id, ...) can be given as a keyword.
    """
    items = list(items)
    base_ts = items[0][0] if items else NO_TIMESTAMP
    records = tuple(
        Record(
            offset_delta=i,
            timestamp_delta=item[0] - base_ts,
            key=item[1],
            value=item[2],
            headers=tuple(item[3]) if len(item) > 3 else (),
        )
        for i, item in enumerate(items)
    )
    fields.setdefault("base_timestamp", base_ts)
    return RecordBatch(records=records, **fields)  # type: ignore[arg-type]


def control_batch(
    control_type: ControlType | int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> RecordBatch:
    """A transaction marker batch (ABORT or COMMIT), as a coordinator has the leader write it."""
    return RecordBatch(
        records=(Record(0, 0, control_key(control_type), end_txn_marker(coordinator_epoch)),),
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
        is_transactional=True,
        is_control=True,
        base_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
    )


# -- decoding -----------------------------------------------------------------------------------


def decode_batch_at(
    data: bytes,
    start: int,
    end: int,
    *,
    index: int = 0,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> RecordBatch:
    """Decode the batch occupying exactly ``data[start:end]`` (as delimited by its length)."""
    path = f"batch[{index}]"
    if end - start < HEADER_SIZE:
        raise CorruptRecordError(
            f"batch length {end - start - LOG_OVERHEAD} is less than the minimum "
            f"{HEADER_SIZE - LOG_OVERHEAD}",
            offset=start + 8,
            path=path + ".length",
        )
    base_offset, _length, leader_epoch, magic = HEAD.unpack_from(data, start)
    if magic != MAGIC:
        raise CorruptRecordError(
            f"magic {magic} is not a v2 record batch", offset=start + 16, path=path + ".magic"
        )
    (stored_crc,) = CRC.unpack_from(data, start + CRC_OFFSET)
    computed = crc32c(memoryview(data)[start + ATTRIBUTES_OFFSET : end])
    if computed != stored_crc:
        raise CorruptRecordError(
            f"CRC mismatch: expected 0x{stored_crc:08x} (stored), computed 0x{computed:08x}",
            offset=start + CRC_OFFSET,
            path=path + ".crc",
        )
    (attrs, last_delta, base_ts, max_ts, pid, pepoch, base_seq, count) = AFTER_CRC.unpack_from(
        data, start + ATTRIBUTES_OFFSET
    )
    compression = codec(attrs, offset=start + ATTRIBUTES_OFFSET, path=path + ".attributes")
    if count < 0:
        raise CorruptRecordError(
            f"negative record count {count}",
            offset=start + RECORDS_COUNT_OFFSET,
            path=path + ".records",
        )
    payload_start = start + HEADER_SIZE
    if compression == Compression.NONE:
        reader = Reader(data, payload_start, end, path=path)
    elif count == 0 and payload_start == end:
        reader = Reader(b"", path=path)
    else:
        try:
            plain = decompress(compression, data[payload_start:end], max_size=max_decompressed_size)
        except CorruptRecordError as e:
            raise CorruptRecordError(e.reason, offset=payload_start, path=path + ".records") from e
        reader = Reader(plain, path=path + ".records(decompressed)")
    records = []
    control = bool(attrs & CONTROL_BIT)
    for i in range(count):
        if not reader.remaining:
            raise reader.fail(f"the batch declares {count} records but holds only {i}")
        reader.path = f"{path}.records[{i}]"
        record = decode_record(reader)
        if control:
            try:
                parse_control_key(record.key)
            except CorruptRecordError as e:
                raise reader.fail(e.reason, field="key") from e
        records.append(record)
    if reader.remaining:
        reader.path = path
        raise reader.fail(f"{reader.remaining} bytes left after the {count} declared records")
    batch = RecordBatch(
        records=tuple(records),
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
        compression=compression,
        timestamp_type=TimestampType((attrs & TIMESTAMP_TYPE_BIT) >> 3),
        is_transactional=bool(attrs & TRANSACTIONAL_BIT),
        is_control=control,
        has_delete_horizon=bool(attrs & DELETE_HORIZON_BIT),
        last_offset_delta=last_delta,
        base_timestamp=base_ts,
        max_timestamp=max_ts,
        producer_id=pid,
        producer_epoch=pepoch,
        base_sequence=base_seq,
        unused_attribute_bits=attrs & ~KNOWN_BITS,
    )
    object.__setattr__(batch, "raw", bytes(data[start:end]))
    return batch


def decode_batches(
    data: bytes,
    *,
    allow_partial: bool = False,
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> list[RecordBatch]:
    """Every v2 batch in a ``records`` field (zero or more batches back to back).

    Data ending inside a batch raises PartialBatchError unless ``allow_partial`` (a fetch
    response may end so), in which case that tail is left out; ``split_batches`` returns it.
    """
    data = bytes(data)
    spans = complete_entries(data, allow_partial=allow_partial, noun="batch")
    return [
        decode_batch_at(data, s, e, index=i, max_decompressed_size=max_decompressed_size)
        for i, (s, e, _magic) in enumerate(spans)
    ]


def decode_batch(
    data: bytes, *, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
) -> RecordBatch:
    """Exactly one v2 batch: anything before or after it is an error."""
    batches = decode_batches(data, max_decompressed_size=max_decompressed_size)
    if len(batches) != 1:
        raise CorruptRecordError(f"expected exactly one batch, found {len(batches)}")
    return batches[0]
