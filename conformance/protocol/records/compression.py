"""The compression codecs of record batches and message sets, with Kafka's framing quirks.

Kafka's snappy is xerial-framed (a 16-byte header then ``[int32 length][raw snappy block]``
chunks, as the Java client's SnappyOutputStream writes) but raw snappy is accepted on decode,
as the Java reader does. LZ4 is the LZ4 frame format with independent 64 KiB blocks; in magic 0
message sets the Java client writes a header checksum computed over the wrong bytes (the
4-byte frame magic included), so that checksum is rewritten before decoding and written the
same broken way when encoding for magic 0. Decompression is capped (``max_size``) so a small
payload cannot expand into an unbounded allocation.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from enum import IntEnum

import cramjam
import lz4.frame
import xxhash
import zstandard

from conformance.protocol.records.errors import CorruptRecordError

#: Default cap on the decompressed size of one batch or wrapper message.
DEFAULT_MAX_DECOMPRESSED_SIZE = 64 * 1024 * 1024


class Compression(IntEnum):
    """Attribute bits 0-2 of a batch (or message): the codec of its payload."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def codec(bits: int, *, offset: int = 0, path: str = "") -> Compression:
    """The codec named by attribute bits 0-2; CorruptRecordError for 5, 6 and 7."""
    try:
        return Compression(bits & 0x07)
    except ValueError:
        raise CorruptRecordError(
            f"unknown compression codec {bits & 0x07}", offset=offset, path=path
        ) from None


def compress(compression: Compression, data: bytes, *, magic: int = 2) -> bytes:
    """Compress a payload the way the Java client does for this codec and message format."""
    if compression == Compression.NONE:
        return bytes(data)
    if compression == Compression.GZIP:
        return gzip.compress(data, compresslevel=6, mtime=0)
    if compression == Compression.SNAPPY:
        return xerial_snappy_compress(data)
    if compression == Compression.LZ4:
        return lz4_compress(data, broken_header_checksum=magic == 0)
    if compression == Compression.ZSTD:
        return zstandard.ZstdCompressor(level=3).compress(data)
    raise ValueError(f"unknown compression codec {compression!r}")


def decompress(
    compression: Compression,
    data: bytes,
    *,
    magic: int = 2,
    max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
) -> bytes:
    """Decompress a payload; CorruptRecordError if it is invalid or expands beyond ``max_size``."""
    try:
        if compression == Compression.NONE:
            out = bytes(data)
        elif compression == Compression.GZIP:
            out = _gunzip(data, max_size)
        elif compression == Compression.SNAPPY:
            out = snappy_decompress(data, max_size)
        elif compression == Compression.LZ4:
            out = _lz4_decompress(data, max_size, fix_header_checksum=magic == 0)
        elif compression == Compression.ZSTD:
            out = _unzstd(data, max_size)
        else:
            raise CorruptRecordError(f"unknown compression codec {int(compression)}")
    except CorruptRecordError:
        raise
    except (
        cramjam.DecompressionError,
        ValueError,
        RuntimeError,
        EOFError,
        OSError,
        zlib.error,
        zstandard.ZstdError,
    ) as e:  # the libraries' own errors (lz4 raises RuntimeError)
        raise CorruptRecordError(f"{compression.name} decompression failed: {e}") from e
    if compression != Compression.NONE and len(out) > max_size:
        raise _too_big(compression, max_size)
    return out


def _too_big(compression: Compression, max_size: int) -> CorruptRecordError:
    return CorruptRecordError(
        f"{compression.name} payload decompresses to more than the limit of {max_size} bytes"
    )


# -- gzip ---------------------------------------------------------------------------------------


def _gunzip(data: bytes, max_size: int) -> bytes:
    """gzip members back to back (as GZIPInputStream reads them), output capped."""
    out = bytearray()
    rest = bytes(data)
    while True:
        d = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        out += d.decompress(rest, max_size + 1 - len(out))
        while d.unconsumed_tail and len(out) <= max_size:
            out += d.decompress(d.unconsumed_tail, max_size + 1 - len(out))
        if len(out) > max_size:
            raise _too_big(Compression.GZIP, max_size)
        if not d.eof:
            out += d.flush()
            if not d.eof:
                raise CorruptRecordError("GZIP payload is truncated (no end of stream)")
        rest = d.unused_data
        if not rest:
            return bytes(out)


# -- snappy -------------------------------------------------------------------------------------

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)  # version 1, compatible version 1
XERIAL_BLOCK_SIZE = 32 * 1024  # SnappyOutputStream's default block size


def xerial_snappy_compress(data: bytes) -> bytes:
    """xerial framing: header, then one raw snappy block per 32 KiB of input.

    Like SnappyOutputStream, which writes its header with the first block, empty input gives
    empty output.
    """
    if not data:
        return b""
    out = bytearray(_XERIAL_HEADER)
    view = memoryview(data)
    for i in range(0, len(data), XERIAL_BLOCK_SIZE):
        block = bytes(cramjam.snappy.compress_raw(bytes(view[i : i + XERIAL_BLOCK_SIZE])))
        out += struct.pack(">i", len(block))
        out += block
    return bytes(out)


def snappy_decompress(data: bytes, max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
    """xerial-framed or raw snappy (detected by the xerial magic), output capped."""
    data = bytes(data)
    if not data:  # what SnappyOutputStream writes for no input
        return b""
    if not (len(data) >= 16 and data.startswith(XERIAL_MAGIC)):
        return _raw_snappy(data, max_size, 0)
    # version and compatible-version words are not checked: some producers write them
    # little-endian, and there has only ever been one version of the framing.
    out = bytearray()
    pos = 16
    while pos < len(data):
        if len(data) - pos < 4:
            raise CorruptRecordError(f"xerial snappy block length truncated at byte {pos}")
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        if n < 0 or n > len(data) - pos:
            raise CorruptRecordError(
                f"xerial snappy block at byte {pos - 4} claims {n} bytes, {len(data) - pos} remain"
            )
        out += _raw_snappy(data[pos : pos + n], max_size, len(out))
        pos += n
    return bytes(out)


def _raw_snappy(block: bytes, max_size: int, already: int) -> bytes:
    # the raw format starts with the uncompressed length: check it before allocating
    if already + int(cramjam.snappy.decompress_raw_len(block)) > max_size:
        raise _too_big(Compression.SNAPPY, max_size)
    return bytes(cramjam.snappy.decompress_raw(block))


# -- lz4 ----------------------------------------------------------------------------------------

_LZ4_MAGIC = b"\x04\x22\x4d\x18"


def _lz4_header_checksum_pos(frame: bytes | bytearray) -> int:
    """Index of the header-checksum byte (HC) of an LZ4 frame."""
    if len(frame) < 7 or not frame.startswith(_LZ4_MAGIC):
        raise CorruptRecordError("LZ4 payload does not start with an LZ4 frame header")
    flg = frame[4]
    pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if pos >= len(frame):
        raise CorruptRecordError("LZ4 frame header is truncated")
    return pos


def lz4_compress(data: bytes, *, broken_header_checksum: bool = False) -> bytes:
    """An LZ4 frame like KafkaLZ4BlockOutputStream's: 64 KiB independent blocks, no sizes."""
    frame = bytearray(
        lz4.frame.compress(
            data,
            block_size=lz4.frame.BLOCKSIZE_MAX64KB,
            block_linked=False,
            content_checksum=False,
            store_size=False,
        )
    )
    if broken_header_checksum:
        hc = _lz4_header_checksum_pos(frame)
        frame[hc] = (xxhash.xxh32_intdigest(bytes(frame[:hc])) >> 8) & 0xFF
    return bytes(frame)


def _lz4_decompress(data: bytes, max_size: int, *, fix_header_checksum: bool) -> bytes:
    out = bytearray()
    rest = bytes(data)
    while True:
        if fix_header_checksum:
            # magic 0 frames carry Kafka's broken header checksum: the Java reader ignores it
            hc = _lz4_header_checksum_pos(rest)
            fixed = (xxhash.xxh32_intdigest(rest[4:hc]) >> 8) & 0xFF
            rest = rest[:hc] + bytes([fixed]) + rest[hc + 1 :]
        d = lz4.frame.LZ4FrameDecompressor()
        out += d.decompress(rest, max_length=max_size + 1 - len(out))
        while not d.eof and not d.needs_input and len(out) <= max_size:
            out += d.decompress(b"", max_length=max_size + 1 - len(out))
        if len(out) > max_size:
            raise _too_big(Compression.LZ4, max_size)
        if not d.eof:
            raise CorruptRecordError("LZ4 payload is truncated (no end mark)")
        rest = d.unused_data
        if not rest:
            return bytes(out)


# -- zstd ---------------------------------------------------------------------------------------

# zstd can expand one input byte into ~32 KiB, so input is fed in small steps and the output
# checked after each: the overshoot past the cap stays bounded (~8 MiB for 256-byte steps).
_ZSTD_STEP = 256


def _unzstd(data: bytes, max_size: int) -> bytes:
    """zstd frames back to back (as ZstdInputStream reads them), output capped."""
    out = bytearray()
    rest = bytes(data)
    if not rest:
        raise CorruptRecordError("ZSTD payload is empty")
    while rest:
        d = zstandard.ZstdDecompressor().decompressobj()
        view = memoryview(rest)
        for i in range(0, len(rest), _ZSTD_STEP):
            out += d.decompress(view[i : i + _ZSTD_STEP])
            if len(out) > max_size:
                raise _too_big(Compression.ZSTD, max_size)
            if d.eof:
                break
        if not d.eof:
            raise CorruptRecordError("ZSTD payload is truncated (frame not complete)")
        rest = d.unused_data
    return bytes(out)
