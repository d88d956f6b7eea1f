"""The one exception of the record layer, so callers catch a single type for any bad record data."""

from __future__ import annotations

from conformance.protocol.errors import DecodeError


class CorruptRecordError(DecodeError):
    """Record bytes that cannot be decoded: bad CRC, bad length, bad varint, unknown codec, ...

    ``offset`` is the byte offset into the decoded buffer (for records inside a compressed
    payload: into the decompressed payload, and ``path`` says so); ``path`` names the batch and
    record (``batch[1].records[3].key``).
    """

    def __init__(self, reason: str, *, offset: int = 0, path: str = "", what: str = "records"):
        super().__init__(what, path, offset, reason)


class PartialBatchError(CorruptRecordError):
    """The data ends inside a batch (a fetch response may do this; a produce request may not)."""
