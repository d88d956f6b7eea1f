"""What several KIP-590 test modules use: Kafka's serialised principal, as an Envelope
carries it, and an Envelope carrying a CreateTopics."""

from __future__ import annotations

import struct

from conformance.client.create_topics import create_body
from conformance.protocol import ApiKey
from conformance.protocol.framing import encode_request
from conformance.suite.kit.harness import Harness


def principal(name: str) -> bytes:
    """Kafka's serialised principal: version 0 (int16), then DefaultPrincipalData v0: type and
    name as compact strings, TokenAuthenticated false, no tagged fields."""
    kind, _, who = name.partition(":")
    out = struct.pack(">h", 0)
    for text in (kind, who):
        data = text.encode()
        out += bytes([len(data) + 1]) + data  # lengths below 127 fit one varint byte
    return out + b"\x00\x00"


def create_envelope(harness: Harness, topic: str, *, validate_only: bool) -> tuple[dict, int]:
    """An Envelope v0 body carrying a CreateTopics of ``topic`` (one partition, one replica) at
    the newest version the target advertises, as an anonymous client from 127.0.0.1; and that
    version."""
    version = harness.pick_version(ApiKey.CREATE_TOPICS)
    inner = create_body({topic: 1}, timeout_ms=5000, validate_only=validate_only)
    body = {
        "RequestData": encode_request(
            harness.codec, ApiKey.CREATE_TOPICS, version, 1, "kc-suite", inner
        ),
        "RequestPrincipal": principal("User:ANONYMOUS"),
        "ClientHostAddress": bytes([127, 0, 0, 1]),
    }
    return body, version
