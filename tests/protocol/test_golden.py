"""Golden vectors, byte for byte: frames real clients sent, and hand-derived frames."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from conformance.protocol import Codec
from conformance.protocol.framing import decode_request, encode_request

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "golden"
CODEC = Codec.from_specs()
CLIENT_FRAMES = json.loads((GOLDEN / "client-frames.json").read_text())
VECTORS = json.loads((GOLDEN / "vectors.json").read_text())["vectors"]

#: What each client's first frame must say (ApiVersions, the version it opens with, its name).
EXPECTED_OPENING = {
    "kafka-python": (4, "kafka-python"),
    "confluent-kafka": (3, "confluent-kafka-python"),
    "aiokafka": (0, None),
}


@pytest.mark.parametrize("client", sorted(CLIENT_FRAMES))
def test_client_frame_decodes_and_re_encodes_byte_for_byte(client: str) -> None:
    raw = bytes.fromhex(CLIENT_FRAMES[client])
    header, body = decode_request(CODEC, raw)
    version, software = EXPECTED_OPENING[client.split()[0]]
    assert header["RequestApiKey"] == 18
    assert header["RequestApiVersion"] == version
    assert header["CorrelationId"] == 1
    assert header["ClientId"] == "golden"
    if software is not None:
        assert body["ClientSoftwareName"] == software
        assert body["ClientSoftwareVersion"].split("-")[0] in client
    again = encode_request(CODEC, 18, version, 1, "golden", body)
    assert again == raw


def _from_json(value):
    """Vectors write uuids as their canonical text; everything else is plain JSON."""
    if isinstance(value, dict):
        return {k: _from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_json(v) for v in value]
    if isinstance(value, str) and len(value) == 36 and value.count("-") == 4:
        return uuid.UUID(value)
    return value


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_hand_derived_vector(vector: dict) -> None:
    raw = bytes.fromhex(vector["hex"].replace(" ", ""))
    value = _from_json(vector["value"])
    args = (vector["api_key"], vector["version"], vector["kind"])
    assert CODEC.decode(*args, raw) == value
    assert CODEC.encode(*args, value) == raw
