"""Control records (KIP-98 transaction markers and KRaft's own): their key and marker value.

A control batch holds records whose key is ``version int16, type int16`` and, for ABORT and
COMMIT markers, whose value is ``version int16, coordinator_epoch int32`` (EndTxnMarker).
"""

from __future__ import annotations

import struct
from enum import IntEnum

from conformance.protocol.records.errors import CorruptRecordError

_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")


class ControlType(IntEnum):
    """The ``type`` of a control record key."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


def control_key(control_type: int, version: int = 0) -> bytes:
    """The key of a control record."""
    return _KEY.pack(version, control_type)


def _unpack(fmt: struct.Struct, data: bytes | None, what: str) -> tuple[int, int]:
    if data is None or len(data) < fmt.size:
        got = "null" if data is None else f"{len(data)} bytes"
        raise CorruptRecordError(f"{what} must be at least {fmt.size} bytes, got {got}")
    version, rest = fmt.unpack_from(data)
    if version < 0:
        raise CorruptRecordError(f"{what} has negative version {version}")
    return version, rest


def parse_control_key(key: bytes | None) -> tuple[int, int]:
    """``(version, type)`` of a control record key; longer keys (later versions) are allowed."""
    return _unpack(_KEY, key, "control record key")


def end_txn_marker(coordinator_epoch: int, version: int = 0) -> bytes:
    """The value of an ABORT or COMMIT control record."""
    return _END_TXN.pack(version, coordinator_epoch)


def parse_end_txn_marker(value: bytes | None) -> tuple[int, int]:
    """``(version, coordinator_epoch)`` of an ABORT or COMMIT marker value."""
    return _unpack(_END_TXN, value, "transaction marker value")
