"""Kafka's record formats: v2 record batches, legacy message sets, and their compression.

The codec hands ``records`` fields over as raw bytes; this package decodes and encodes them.
Every decoding failure raises CorruptRecordError (a DecodeError) with the byte offset.
"""

from conformance.protocol.records.batch import (
    RecordBatch,
    build_batch,
    control_batch,
    decode_batch,
    decode_batches,
    encode_batch,
)
from conformance.protocol.records.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Compression,
    compress,
    decompress,
)
from conformance.protocol.records.control import (
    ControlType,
    control_key,
    end_txn_marker,
    parse_control_key,
    parse_end_txn_marker,
)
from conformance.protocol.records.entries import split_batches
from conformance.protocol.records.errors import CorruptRecordError, PartialBatchError
from conformance.protocol.records.legacy import (
    LegacyMessage,
    decode_message_set,
    encode_message,
    encode_message_set,
    wrap_messages,
)
from conformance.protocol.records.record import Header, LogRecord, Record, TimestampType
from conformance.protocol.records.record_set import (
    RecordSet,
    decode_record_set,
    encode_record_set,
)

__all__ = [
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "Compression",
    "ControlType",
    "CorruptRecordError",
    "Header",
    "LegacyMessage",
    "LogRecord",
    "PartialBatchError",
    "Record",
    "RecordBatch",
    "RecordSet",
    "TimestampType",
    "build_batch",
    "compress",
    "control_batch",
    "control_key",
    "decode_batch",
    "decode_batches",
    "decode_message_set",
    "decode_record_set",
    "decompress",
    "encode_batch",
    "encode_message",
    "encode_message_set",
    "encode_record_set",
    "end_txn_marker",
    "parse_control_key",
    "parse_end_txn_marker",
    "split_batches",
    "wrap_messages",
]
