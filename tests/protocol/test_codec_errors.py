"""Malformed input: one exception type, naming the field path and the byte offset."""

from __future__ import annotations

import struct
import tracemalloc
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import ApiKey, Codec, DecodeError, EncodeError, UnknownMessageError
from conformance.strategies.messages import message_values

CODEC = Codec.from_specs()
SPECS = [m for m in CODEC.specs if m.type in ("request", "response")]


@st.composite
def encoded_messages(draw):
    spec = draw(st.sampled_from(SPECS))
    version = draw(st.sampled_from(list(spec.valid_versions)))
    value = draw(message_values(spec, version))
    return spec, version, CODEC.encode(spec.api_key, version, spec.type, value)


@given(encoded_messages())
def test_every_truncation_is_a_decode_error(case) -> None:
    spec, version, raw = case
    for cut in range(len(raw)):
        with pytest.raises(DecodeError) as info:
            CODEC.decode(spec.api_key, version, spec.type, raw[:cut])
        assert 0 <= info.value.offset <= cut
        assert info.value.message == spec.name


@given(encoded_messages(), st.binary(min_size=1, max_size=8))
def test_trailing_bytes_are_a_decode_error(case, extra) -> None:
    spec, version, raw = case
    with pytest.raises(DecodeError, match="trailing bytes") as info:
        CODEC.decode(spec.api_key, version, spec.type, raw + extra)
    assert info.value.offset == len(raw)


@given(st.sampled_from(SPECS), st.data(), st.binary(max_size=64))
def test_arbitrary_bytes_decode_or_raise_decode_error(spec, data, raw) -> None:
    version = data.draw(st.sampled_from(list(spec.valid_versions)))
    try:
        value = CODEC.decode(spec.api_key, version, spec.type, raw)
    except DecodeError:
        return
    again = CODEC.encode(spec.api_key, version, spec.type, value)
    assert CODEC.decode(spec.api_key, version, spec.type, again) == value


def test_array_length_beyond_the_frame_names_the_field_and_allocates_nothing() -> None:
    raw = struct.pack(">i", 0x7FFFFFFF) + b"\x00" * 6  # MetadataRequest v1: Topics count
    # compile outside the measurement, the checked decoder (made on first failure) too
    assert CODEC.compiled(ApiKey.METADATA, 1, "request").decode_checked
    tracemalloc.start()
    try:
        with pytest.raises(DecodeError) as info:
            CODEC.decode(ApiKey.METADATA, 1, "request", raw)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert info.value.path == "Topics"
    assert info.value.offset == 0
    assert "exceeds" in info.value.reason
    assert peak < 64 * 1024


def test_string_length_beyond_the_frame() -> None:
    raw = struct.pack(">ih", 1, 300) + b"abc"  # one topic whose name claims 300 bytes
    with pytest.raises(DecodeError) as info:
        CODEC.decode(ApiKey.METADATA, 1, "request", raw)
    assert info.value.path == "Topics[0].Name"
    assert info.value.offset == 4


def test_null_in_a_non_nullable_string() -> None:
    raw = struct.pack(">ih", 1, -1)
    with pytest.raises(DecodeError, match="non-nullable") as info:
        CODEC.decode(ApiKey.METADATA, 1, "request", raw)
    assert info.value.path == "Topics[0].Name"


def test_invalid_utf8() -> None:
    raw = struct.pack(">ih", 1, 2) + b"\xff\xfe"
    with pytest.raises(DecodeError, match="UTF-8") as info:
        CODEC.decode(ApiKey.METADATA, 1, "request", raw)
    assert info.value.path == "Topics[0].Name"


def test_overlong_varint_in_a_flexible_version() -> None:
    raw = b"\xff\xff\xff\xff\xff\x01"  # MetadataRequest v9: Topics compact length, 6 bytes
    with pytest.raises(DecodeError, match="varint") as info:
        CODEC.decode(ApiKey.METADATA, 9, "request", raw)
    assert info.value.path == "Topics"


def test_tagged_field_claiming_more_than_remains() -> None:
    body = CODEC.encode(ApiKey.METADATA, 9, "request", {"Topics": []})
    raw = body[:-1] + b"\x01\x05\x40"  # one tagged field, tag 5, size 64: nothing follows
    with pytest.raises(DecodeError, match="claims 64 bytes") as info:
        CODEC.decode(ApiKey.METADATA, 9, "request", raw)
    assert info.value.path == "<tagged fields>"


def test_unknown_tagged_fields_are_kept_and_re_encoded() -> None:
    value = {"Topics": [], "_unknown_tagged_fields": {7: b"\x01\x02", 3: b""}}
    raw = CODEC.encode(ApiKey.METADATA, 9, "request", value)
    back = CODEC.decode(ApiKey.METADATA, 9, "request", raw)
    assert back["_unknown_tagged_fields"] == {3: b"", 7: b"\x01\x02"}
    assert raw.endswith(b"\x02\x03\x00\x07\x02\x01\x02")  # two tags, ascending


def test_null_where_not_nullable_is_an_encode_error_with_path() -> None:
    value = {"Topics": [{"Name": None}]}
    with pytest.raises(EncodeError) as info:
        CODEC.encode(ApiKey.METADATA, 1, "request", value)
    assert info.value.path == "Topics[0].Name"
    assert "not nullable" in info.value.reason


def test_out_of_range_int_is_an_encode_error_with_path() -> None:
    with pytest.raises(EncodeError) as info:
        CODEC.encode(ApiKey.METADATA, 12, "response", {"ControllerId": 2**31})
    assert info.value.path == "ControllerId"


def test_wrong_type_is_an_encode_error_with_path() -> None:
    with pytest.raises(EncodeError) as info:
        CODEC.encode(ApiKey.METADATA, 12, "response", {"Topics": [{"TopicId": "not-a-uuid"}]})
    assert info.value.path == "Topics[0].TopicId"


def test_missing_fields_take_their_defaults() -> None:
    raw = CODEC.encode(ApiKey.METADATA, 12, "response", {})
    value = CODEC.decode(ApiKey.METADATA, 12, "response", raw)
    assert value["ControllerId"] == -1
    assert value["ClusterId"] is None
    assert value["Brokers"] == []
    assert value["ClusterAuthorizedOperations"] == -(2**31)


def test_fields_absent_in_a_version_decode_as_their_default() -> None:
    raw = CODEC.encode(ApiKey.METADATA, 0, "response", {"ClusterId": "ignored", "ControllerId": 5})
    value = CODEC.decode(ApiKey.METADATA, 0, "response", raw)
    assert value["ClusterId"] is None
    assert value["ControllerId"] == -1
    assert value["Topics"] == []


def test_uuid_fields_decode_as_uuid() -> None:
    tid = uuid.uuid4()
    raw = CODEC.encode(ApiKey.METADATA, 12, "response", {"Topics": [{"TopicId": tid, "Name": "t"}]})
    assert CODEC.decode(ApiKey.METADATA, 12, "response", raw)["Topics"][0]["TopicId"] == tid


@pytest.mark.parametrize(
    ("api_key", "version", "kind", "match"),
    [
        (999, 0, "request", "api key 999"),
        (3, 14, "request", "valid versions: 0-13"),
        (3, 0, "sideways", "kind"),
    ],
)
def test_unknown_messages_and_versions(api_key, version, kind, match) -> None:
    with pytest.raises(UnknownMessageError, match=match):
        CODEC.decode(api_key, version, kind, b"")


@given(encoded_messages(), st.binary(max_size=8))
def test_decode_prefix_reports_where_the_body_ends(case, extra) -> None:
    spec, version, raw = case
    value, used = CODEC.decode_prefix(spec.api_key, version, spec.type, raw + extra)
    assert used == len(raw)
    assert value == CODEC.decode(spec.api_key, version, spec.type, raw)
