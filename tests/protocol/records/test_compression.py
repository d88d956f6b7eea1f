"""Compression codecs: round trips, Kafka's framing quirks (xerial snappy, LZ4 frames and the
magic 0 header checksum), interop with kafka-python's codecs, and bounded decompression."""

from __future__ import annotations

import gzip
import struct
import tracemalloc

import cramjam
import kafka.codec
import lz4.frame
import pytest
import zstandard
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol.records import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Compression,
    CorruptRecordError,
    RecordBatch,
    build_batch,
    compress,
    decode_batch,
    decompress,
    encode_batch,
)
from conformance.protocol.records.compression import XERIAL_BLOCK_SIZE, XERIAL_MAGIC

CODECS = [c for c in Compression if c != Compression.NONE]
#: Compressible but not trivially so: spans several xerial (32 KiB) and LZ4 (64 KiB) blocks.
SAMPLE = b"".join(b"record %d of the sample; " % i for i in range(8000))


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@given(data=st.binary(max_size=2000), magic=st.sampled_from([0, 1, 2]))
def test_decompress_inverts_compress(codec: Compression, data: bytes, magic: int) -> None:
    assert decompress(codec, compress(codec, data, magic=magic), magic=magic) == data


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_multi_block_payloads_round_trip(codec: Compression) -> None:
    packed = compress(codec, SAMPLE)
    assert len(packed) < len(SAMPLE) // 2
    assert decompress(codec, packed) == SAMPLE


def test_snappy_is_xerial_framed_like_the_java_client() -> None:
    packed = compress(Compression.SNAPPY, SAMPLE)
    assert packed[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, sizes = 16, []
    while pos < len(packed):
        (n,) = struct.unpack_from(">i", packed, pos)
        sizes.append(cramjam.snappy.decompress_raw_len(packed[pos + 4 : pos + 4 + n]))
        pos += 4 + n
    assert pos == len(packed)
    assert sizes == [XERIAL_BLOCK_SIZE] * (len(sizes) - 1) + [len(SAMPLE) % XERIAL_BLOCK_SIZE]
    assert compress(Compression.SNAPPY, b"") == b""  # SnappyOutputStream writes nothing


def test_snappy_decode_accepts_raw_and_lenient_xerial_headers() -> None:
    raw = bytes(cramjam.snappy.compress_raw(SAMPLE))
    assert decompress(Compression.SNAPPY, raw) == SAMPLE
    xerial = compress(Compression.SNAPPY, SAMPLE)
    little_endian_versions = XERIAL_MAGIC + struct.pack("<ii", 1, 1) + xerial[16:]
    assert decompress(Compression.SNAPPY, little_endian_versions) == SAMPLE
    assert decompress(Compression.SNAPPY, b"") == b""


def test_lz4_frames_look_like_kafkas() -> None:
    frame = compress(Compression.LZ4, SAMPLE)
    assert frame[:4] == b"\x04\x22\x4d\x18"
    # FLG: version 01, independent blocks, no block/content checksum, no content size;
    # BD: 64 KiB maximum block size (KafkaLZ4BlockOutputStream's defaults)
    assert frame[4:6] == b"\x60\x40"
    assert lz4.frame.decompress(frame) == SAMPLE


def test_lz4_decode_accepts_other_frame_options_and_several_frames() -> None:
    with_size = lz4.frame.compress(SAMPLE, store_size=True, content_checksum=True)
    assert decompress(Compression.LZ4, with_size) == SAMPLE
    assert decompress(Compression.LZ4, with_size + with_size) == SAMPLE * 2
    assert decompress(Compression.LZ4, with_size, magic=0) == SAMPLE  # correct HC in magic 0


def test_gzip_and_zstd_read_concatenated_members_and_frames() -> None:
    assert decompress(Compression.GZIP, gzip.compress(b"a") + gzip.compress(b"b")) == b"ab"
    cctx = zstandard.ZstdCompressor(write_content_size=False)
    assert decompress(Compression.ZSTD, cctx.compress(b"a") + cctx.compress(b"b")) == b"ab"


@pytest.mark.parametrize("magic", [0, 1])
def test_interop_with_kafka_python_codecs(magic: int) -> None:
    lz4_theirs = kafka.codec.lz4_encode_old_kafka if magic == 0 else kafka.codec.lz4_encode
    lz4_read = kafka.codec.lz4_decode_old_kafka if magic == 0 else kafka.codec.lz4_decode
    ours = {c: compress(c, SAMPLE, magic=magic) for c in CODECS}
    assert kafka.codec.gzip_decode(ours[Compression.GZIP]) == SAMPLE
    assert kafka.codec.snappy_decode(ours[Compression.SNAPPY]) == SAMPLE
    assert lz4_read(ours[Compression.LZ4]) == SAMPLE
    assert kafka.codec.zstd_decode(ours[Compression.ZSTD]) == SAMPLE
    theirs = {
        Compression.GZIP: kafka.codec.gzip_encode(SAMPLE),
        Compression.SNAPPY: kafka.codec.snappy_encode(SAMPLE),
        Compression.LZ4: lz4_theirs(SAMPLE),
        Compression.ZSTD: kafka.codec.zstd_encode(SAMPLE),
    }
    for codec, packed in theirs.items():
        assert decompress(codec, packed, magic=magic) == SAMPLE


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_truncated_compressed_data_is_corrupt(codec: Compression) -> None:
    packed = compress(codec, SAMPLE[:3000])
    for n in range(len(packed)):
        try:
            out = decompress(codec, packed[:n])
        except CorruptRecordError:
            continue
        # xerial framing has no end mark: a cut between blocks (here: before the only block)
        # is a valid shorter stream, caught one level up by the batch's record count
        assert codec == Compression.SNAPPY and n in (0, 16) and out == b""


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
@given(garbage=st.binary(max_size=200))
def test_garbage_is_corrupt_or_decodes(codec: Compression, garbage: bytes) -> None:
    try:
        decompress(codec, garbage, magic=0)
    except CorruptRecordError as e:
        assert codec.name.lower() in str(e).lower()


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_trailing_garbage_is_corrupt(codec: Compression) -> None:
    with pytest.raises(CorruptRecordError):
        decompress(codec, compress(codec, SAMPLE[:100]) + b"\x00garbage")


BOMB = bytes(64 << 20)  # 64 MiB of zeros: a few KiB compressed


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_decompression_bombs_stop_at_the_limit(codec: Compression) -> None:
    packed = compress(codec, BOMB) if codec != Compression.GZIP else gzip.compress(BOMB, 1)
    assert len(packed) < 4 << 20
    tracemalloc.start()
    try:
        with pytest.raises(CorruptRecordError, match="more than the limit of 1048576 bytes"):
            decompress(codec, packed, max_size=1 << 20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 24 << 20, f"peak {peak >> 20} MiB while refusing a 64 MiB bomb"


def test_raw_snappy_claiming_a_huge_length_is_refused_before_allocating() -> None:
    claim = bytes([0xFF, 0xFF, 0xFF, 0xFF, 0x07]) + b"\x00" * 8  # preamble: 2 GiB uncompressed
    with pytest.raises(CorruptRecordError, match="more than the limit"):
        decompress(Compression.SNAPPY, claim)


def test_batch_decoding_applies_the_limit() -> None:
    assert DEFAULT_MAX_DECOMPRESSED_SIZE == 64 << 20
    batch = build_batch([(0, None, bytes(2 << 20))], compression=Compression.ZSTD)
    raw = encode_batch(batch)
    assert decode_batch(raw) == batch
    with pytest.raises(CorruptRecordError, match="limit of 1048576") as info:
        decode_batch(raw, max_decompressed_size=1 << 20)
    assert info.value.path == "batch[0].records" and info.value.offset == 61


@pytest.mark.parametrize("codec", CODECS, ids=lambda c: c.name)
def test_empty_compressed_batches(codec: Compression) -> None:
    batch = RecordBatch(compression=codec)
    assert decode_batch(encode_batch(batch)) == batch
