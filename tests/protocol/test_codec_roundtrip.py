"""Round trips of every (message, version) of the project's specs, both directions.

decode(encode(x)) == x for generated values, and encode(decode(b)) == b for the bytes.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import Codec
from conformance.protocol.compiler import Trace, _uuid
from conformance.strategies.messages import message_values

CODEC = Codec.from_specs()
PAIRS = [
    pytest.param(m, v, id=f"{m.name}-v{v}")
    for m in CODEC.specs
    if m.type in ("request", "response")
    for v in m.valid_versions
]


def test_every_api_in_scope_has_both_kinds() -> None:
    requests = {m.api_key for m in CODEC.specs if m.type == "request"}
    responses = {m.api_key for m in CODEC.specs if m.type == "response"}
    assert requests == responses
    assert len(requests) == 95  # every API of Kafka 3.9's and 4.4's specs


@pytest.mark.parametrize(("spec", "version"), PAIRS)
def test_round_trip(spec, version) -> None:
    @given(message_values(spec, version))
    def check(value: dict) -> None:
        raw = CODEC.encode(spec.api_key, version, spec.type, value)
        back = CODEC.decode(spec.api_key, version, spec.type, raw)
        assert back == value
        assert CODEC.encode(spec.api_key, version, spec.type, back) == raw

    check()


@given(st.binary(min_size=16, max_size=16))
def test_fast_uuid_is_the_uuid_the_library_makes(raw: bytes) -> None:
    """The compiled decoder builds uuids without ``UUID.__init__``: the value must not differ."""
    ours, theirs = _uuid(raw), uuid.UUID(bytes=raw)
    assert (ours, hash(ours), str(ours), ours.is_safe) == (
        theirs,
        hash(theirs),
        str(theirs),
        theirs.is_safe,
    )
    assert type(ours) is uuid.UUID


@given(st.lists(st.integers(-(2**31), 2**31 - 1), min_size=250, max_size=300))
def test_fixed_arrays_of_any_count_decode_on_the_fast_path(replicas: list[int]) -> None:
    # counts up to 256 come from a table, larger ones take the general path: both in the fast
    # decoder itself (no fall back to the checked one), and both give the values back
    value = {
        "Brokers": [],
        "ClusterId": None,
        "ControllerId": 1,
        "Topics": [{"ErrorCode": 0, "Name": "t", "TopicId": uuid.UUID(int=1), "IsInternal": False,
                    "Partitions": [{"ErrorCode": 0, "PartitionIndex": 0, "LeaderId": 1,
                                    "LeaderEpoch": 0, "ReplicaNodes": replicas,
                                    "IsrNodes": replicas[:3], "OfflineReplicas": []}]}],
    }  # fmt: skip
    raw = CODEC.encode(3, 12, "response", value)
    decoded, end = CODEC.compiled(3, 12, "response").decode_fast(raw, 0)
    assert end == len(raw)
    assert decoded["Topics"][0]["Partitions"][0]["ReplicaNodes"] == replicas
    assert decoded == CODEC.decode(3, 12, "response", raw)


def _fast_and_checked(api_key: int, version: int, kind: str, value: dict) -> tuple[bytes, bytes]:
    """The fast encoder's bytes (it must not fail: no fall back) and the checked encoder's."""
    unit = CODEC.compiled(api_key, version, kind)
    fast: list[bytes] = []
    checked: list[bytes] = []
    unit.encode_fast(value, fast.append)
    unit.encode_checked(value, checked.append, Trace())
    return b"".join(fast), b"".join(checked)


@given(
    st.lists(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=130), min_size=3, max_size=3),
    st.sampled_from([None, {}, {7: b"x"}]),
    st.sampled_from([0, 1, 9, 12]),
)
def test_a_struct_of_fixed_layout_is_written_in_one_pack_as_the_field_by_field_code_does(
    arrays: list[list[int]], unknown: dict | None, version: int
) -> None:
    """A partition of MetadataResponse (fixed-size fields, arrays of int32) is one ``pack`` of
    a layout chosen by its counts; a count of 127 or more (a two-byte compact length), unknown
    tagged fields, a field left out (its default) or an old, non-flexible version take the
    field-by-field code: the same bytes either way, in the fast encoder itself."""
    replicas, isr, offline = arrays
    partition = {"ErrorCode": 3, "PartitionIndex": 1, "ReplicaNodes": replicas,
                 "IsrNodes": isr, "OfflineReplicas": offline}  # fmt: skip
    if unknown is not None and version >= 9:
        partition["_unknown_tagged_fields"] = unknown
    value = {"Brokers": [], "Topics": [{"Name": "t", "Partitions": [partition, {}]}]}
    fast, checked = _fast_and_checked(3, version, "response", value)
    assert fast == checked
    back = CODEC.decode(3, version, "response", fast)["Topics"][0]["Partitions"][0]
    assert back["ReplicaNodes"] == replicas and back["LeaderEpoch"] == -1  # the default
