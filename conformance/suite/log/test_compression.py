"""Compressed and corrupt batches (LOG.R14-R16): every codec round-trips, zstd needs Produce
v7, and a batch whose CRC does not match is refused without being appended."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records import Compression, Header
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import PRODUCE_VERSIONS, SuiteTopic, batch_bytes, now_ms

#: the first Produce and Fetch versions that may carry zstd batches (KIP-110)
ZSTD_PRODUCE, ZSTD_FETCH = 7, 10
#: where the CRC-32C sits in a v2 batch
CRC_AT = 17


def sample(codec: Compression) -> list[tuple]:
    ts = now_ms()
    text = f"{codec.name} compressed ".encode() * 20
    return [
        (ts + i, f"k{i}".encode(), text + bytes([i]), [Header("codec", codec.name.encode())])
        for i in range(3)
    ]


@conformance("log/produce/compression-round-trip", "LOG.R14", api=ApiKey.PRODUCE)
def test_every_codec_round_trips(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    codecs = [Compression.GZIP, Compression.SNAPPY, Compression.LZ4]
    if version >= ZSTD_PRODUCE and harness.advertised[ApiKey.FETCH][1] >= ZSTD_FETCH:
        codecs.append(Compression.ZSTD)
    with SuiteTopic.create(harness, "log-codecs") as topic:
        for codec in codecs:
            items = sample(codec)
            answer = topic.produce(0, batch_bytes(items, compression=codec), "LOG.R14")
            verify.check(
                answer["ErrorCode"] == ErrorCode.NONE,
                f"Produce v{version} of a {codec.name} batch: ErrorCode {answer['ErrorCode']}, "
                "expected 0 (NONE)",
                "LOG.R14",
            )
            base = answer["BaseOffset"]
            _, _, records = topic.fetch_records(0, base, "LOG.R14")
            got = [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in records[:3]]
            want = [(base + i, ts, k, v, hs) for i, (ts, k, v, hs) in enumerate(items)]
            verify.check(
                got == want,
                f"the {codec.name} batch produced at {base} fetched back as {got!r:.300}, "
                f"expected {want!r:.300}",
                "LOG.R14",
            )


@conformance("log/produce/zstd-before-v7-refused", "LOG.R15", api=ApiKey.PRODUCE)
def test_zstd_below_v7_is_refused(harness: Harness) -> None:
    version = harness.pick_version(ApiKey.PRODUCE, f"3-{ZSTD_PRODUCE - 1}")
    with SuiteTopic.create(harness, "log-zstd-old") as topic:
        items = sample(Compression.ZSTD)
        answer = topic.produce(
            0, batch_bytes(items, compression=Compression.ZSTD), "LOG.R15", version=version
        )
        verify.check(
            answer["ErrorCode"] == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
            f"Produce v{version} of a zstd batch: ErrorCode {answer['ErrorCode']}, expected "
            "76 (UNSUPPORTED_COMPRESSION_TYPE)",
            "LOG.R15",
        )
        hw = topic.fetch(0, 0, "LOG.R15")["HighWatermark"]
        verify.check(
            hw == 0, f"after the refused batch the high watermark is {hw}, not 0", "LOG.R15"
        )


@conformance("log/produce/bad-crc-refused", "LOG.R16", api=ApiKey.PRODUCE)
def test_a_batch_with_a_bad_crc_is_refused(harness: Harness) -> None:
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    with SuiteTopic.create(harness, "log-bad-crc") as topic:
        good = batch_bytes([(now_ms(), b"k", b"the CRC of this batch is wrong")])
        bad = bytearray(good)
        bad[CRC_AT] ^= 0xFF
        answer = topic.produce(0, bytes(bad), "LOG.R16")
        verify.check(
            answer["ErrorCode"] == ErrorCode.CORRUPT_MESSAGE,
            f"Produce of a batch whose CRC-32C was altered: ErrorCode {answer['ErrorCode']}, "
            "expected 2 (CORRUPT_MESSAGE)",
            "LOG.R16",
        )
        hw = topic.fetch(0, 0, "LOG.R16")["HighWatermark"]
        verify.check(
            hw == 0, f"after the refused batch the high watermark is {hw}, not 0", "LOG.R16"
        )
