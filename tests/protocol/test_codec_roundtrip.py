"""Round trips of every (message, version) of the project's specs, both directions.

decode(encode(x)) == x for generated values, and encode(decode(b)) == b for the bytes.
"""

from __future__ import annotations

import pytest
from hypothesis import given

from conformance.protocol import Codec
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
    assert len(requests) == 39


@pytest.mark.parametrize(("spec", "version"), PAIRS)
def test_round_trip(spec, version) -> None:
    @given(message_values(spec, version))
    def check(value: dict) -> None:
        raw = CODEC.encode(spec.api_key, version, spec.type, value)
        back = CODEC.decode(spec.api_key, version, spec.type, raw)
        assert back == value
        assert CODEC.encode(spec.api_key, version, spec.type, back) == raw

    check()
