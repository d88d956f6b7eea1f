"""The Java oracle harness itself: known frames, broken frames, process life cycle."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.oracle.java_oracle import JavaOracle, OracleError

pytestmark = pytest.mark.java

# ApiVersionsRequest v3: ClientSoftwareName "test", ClientSoftwareVersion "1", no tagged fields.
API_VERSIONS_REQUEST_V3 = bytes.fromhex("05 74657374 02 31 00")
# ApiVersionsResponse v3: ErrorCode 0, one ApiKeys entry (18, 0..4), ThrottleTimeMs 0, then the
# known tagged field ZkMigrationReady (tag 3) = true and an unknown tag 7 of two bytes.
API_VERSIONS_RESPONSE_V3 = bytes.fromhex("0000 02 0012 0000 0004 00 00000000 02 030101 0702abcd")


def test_kafka_clients_is_3_9(java_oracle: JavaOracle) -> None:
    assert java_oracle.kafka_version().startswith("3.9.")


def test_known_request_round_trips(java_oracle: JavaOracle) -> None:
    assert java_oracle.reserialise(18, 3, "request", API_VERSIONS_REQUEST_V3) == (
        API_VERSIONS_REQUEST_V3
    )


def test_unknown_tagged_field_is_kept(java_oracle: JavaOracle) -> None:
    assert java_oracle.reserialise(18, 3, "response", API_VERSIONS_RESPONSE_V3) == (
        API_VERSIONS_RESPONSE_V3
    )


def test_empty_body_round_trips(java_oracle: JavaOracle) -> None:
    assert java_oracle.reserialise(18, 0, "request", b"") == b""


def test_headers_round_trip(java_oracle: JavaOracle) -> None:
    v1 = bytes.fromhex("0012 0003 00000007 0004") + b"test"
    assert java_oracle.reserialise(-1, 1, "request", v1) == v1
    assert java_oracle.reserialise(-1, 2, "request", v1 + b"\x00") == v1 + b"\x00"
    assert java_oracle.reserialise(-2, 1, "response", bytes.fromhex("0000000700")) == (
        bytes.fromhex("0000000700")
    )


def test_truncated_frame_is_an_error(java_oracle: JavaOracle) -> None:
    with pytest.raises(OracleError, match="only 3 byte"):
        java_oracle.reserialise(18, 3, "request", API_VERSIONS_REQUEST_V3[:4])


def test_corrupted_tagged_fields_are_an_error(java_oracle: JavaOracle) -> None:
    corrupted = API_VERSIONS_RESPONSE_V3[:-3] + b"\x05\xab\xcd"  # tag 7 claims 5 bytes
    with pytest.raises(OracleError, match=r"BufferUnderflowException|byte"):
        java_oracle.reserialise(18, 3, "response", corrupted)


def test_trailing_bytes_are_reported(java_oracle: JavaOracle) -> None:
    with pytest.raises(OracleError, match=r"^trailing 2$"):
        java_oracle.reserialise(18, 3, "request", API_VERSIONS_REQUEST_V3 + b"\x99\x99")


def test_unknown_api_is_an_error(java_oracle: JavaOracle) -> None:
    with pytest.raises(OracleError, match=r"UnsupportedVersionException|IllegalArgument"):
        java_oracle.reserialise(999, 0, "request", b"")


def test_versions_and_header_versions(java_oracle: JavaOracle) -> None:
    assert java_oracle.versions(18) == (0, 4)
    assert java_oracle.header_versions(18, 3) == (2, 0)  # ApiVersionsResponse keeps header v0
    assert java_oracle.header_versions(3, 12) == (2, 1)
    assert java_oracle.header_versions(3, 8) == (1, 0)


def test_default_message(java_oracle: JavaOracle) -> None:
    # HeartbeatResponse v0: ErrorCode 0 and nothing else.
    assert java_oracle.default(12, 0, "response") == b"\x00\x00"


def test_the_oracle_keeps_going_after_errors(java_oracle: JavaOracle) -> None:
    for _ in range(3):
        with pytest.raises(OracleError):
            java_oracle.reserialise(18, 3, "request", b"\xff")
    assert java_oracle.reserialise(18, 3, "request", API_VERSIONS_REQUEST_V3)


def test_close_stops_the_process(java_oracle: JavaOracle, tmp_path: Path) -> None:
    own = JavaOracle(java_oracle.classes, tmp_path / "stderr.log")
    pid = own.proc.pid
    assert own.kafka_version()
    own.close()
    assert own.proc.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_java_canonicalises_what_a_sloppy_codec_would_write(java_oracle: JavaOracle) -> None:
    """The oracle is sensitive: Java drops a tagged field sent with its default value and
    re-orders tagged fields by tag, so a codec doing either fails the byte-identical check."""
    default_sent = bytes.fromhex("0000 02 0012 0000 0004 00 00000000 01 030100")
    assert java_oracle.reserialise(18, 3, "response", default_sent) == (
        bytes.fromhex("0000 02 0012 0000 0004 00 00000000 00")
    )
    unsorted = bytes.fromhex("0000 02 0012 0000 0004 00 00000000 02 0702abcd 030101")
    assert java_oracle.reserialise(18, 3, "response", unsorted) == API_VERSIONS_RESPONSE_V3


def test_latest_oracle_is_4_4_0(java_oracle_latest: JavaOracle) -> None:
    """The second oracle runs the cached 4.4.0 classes: ApiVersions v5, request headers from
    v1, the APIs 4.0 removed unknown, the streams-group APIs known."""
    assert java_oracle_latest.kafka_version() == "4.4.0"
    assert java_oracle_latest.versions(18) == (0, 5)
    assert java_oracle_latest.versions(-1) == (1, 2)
    assert not java_oracle_latest.defines(4, 0)  # LeaderAndIsr
    assert java_oracle_latest.defines(88, 0)  # StreamsGroupHeartbeat
    assert not java_oracle_latest.defines(1, 3)  # Fetch v0-3 went in 4.0
