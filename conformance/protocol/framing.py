"""Request and response headers, and which header version goes with which message version.

Rules (Kafka's): a request in a flexible version has header v2, otherwise v1 — except
ControlledShutdown v0, whose header is v0 (no client id). A response in a flexible version has
header v1, otherwise v0 — except ApiVersions, whose response header is always v0 so that a
client can read it before it knows which versions the server speaks.
"""

from __future__ import annotations

import struct

from conformance.protocol._generated.api_keys import ApiKey
from conformance.protocol.codec import Codec
from conformance.protocol.errors import DecodeError

_KEY_VERSION = struct.Struct(">hh")


def request_header_version(codec: Codec, api_key: int, version: int) -> int:
    if api_key == ApiKey.CONTROLLED_SHUTDOWN and version == 0:
        return 0
    return 2 if codec.message(api_key, "request").flexible(version) else 1


def response_header_version(codec: Codec, api_key: int, version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if codec.message(api_key, "response").flexible(version) else 0


def encode_request(
    codec: Codec,
    api_key: int,
    version: int,
    correlation_id: int,
    client_id: str | None,
    body: dict,
) -> bytes:
    """Header and body of a request (the 4-byte size prefix is the transport's business)."""
    hv = request_header_version(codec, api_key, version)
    header = {
        "RequestApiKey": api_key,
        "RequestApiVersion": version,
        "CorrelationId": correlation_id,
        "ClientId": client_id,
    }
    return codec.compiled_header("request", hv).encode(header) + codec.encode(
        api_key, version, "request", body
    )


def decode_request(codec: Codec, raw: bytes) -> tuple[dict, dict]:
    """Split a request into (header, body); the api key and version pick the header version."""
    if len(raw) < 4:
        raise DecodeError("RequestHeader", "RequestApiKey", 0, "truncated: fewer than 4 bytes")
    api_key, version = _KEY_VERSION.unpack_from(raw, 0)
    hv = request_header_version(codec, api_key, version)
    hdr_unit = codec.compiled_header("request", hv)
    header, off = decode_header_prefix(hdr_unit, raw)
    return header, codec.decode(api_key, version, "request", raw[off:])


def encode_response(
    codec: Codec, api_key: int, version: int, correlation_id: int, body: dict
) -> bytes:
    hv = response_header_version(codec, api_key, version)
    header = codec.compiled_header("response", hv).encode({"CorrelationId": correlation_id})
    return header + codec.encode(api_key, version, "response", body)


def decode_response(codec: Codec, api_key: int, version: int, raw: bytes) -> tuple[dict, dict]:
    hv = response_header_version(codec, api_key, version)
    header, off = decode_header_prefix(codec.compiled_header("response", hv), raw)
    return header, codec.decode(api_key, version, "response", raw[off:])


def decode_header_prefix(unit, raw: bytes) -> tuple[dict, int]:
    """Decode a header at the start of ``raw``; returns it and where the body starts."""
    return unit.decode_prefix(bytes(raw))
