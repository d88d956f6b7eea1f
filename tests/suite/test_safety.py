"""The rules that keep generated requests harmless: every admin mutation the suite generates
only validates, whatever the spec calls the flag (CreateTopics spells it ``validateOnly``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from conformance.protocol import Codec
from conformance.strategies.messages import message_values
from conformance.suite.safety import make_safe

CODEC = Codec.from_specs()

#: (request spec, version, the flag's name) wherever a request has a validate-only flag
VALIDATING = [
    pytest.param(m, v, f.name, id=f"{m.name}-v{v}")
    for m in CODEC.specs
    if m.type == "request"
    for f in m.struct.fields
    if f.name.lower() == "validateonly"
    for v in m.valid_versions
    if v in f.versions
]


def test_every_admin_mutation_with_the_flag_is_covered() -> None:
    names = {p.values[0].name for p in VALIDATING}
    assert {"CreateTopicsRequest", "CreatePartitionsRequest", "AlterConfigsRequest"} <= names


@pytest.mark.parametrize(("spec", "version", "flag"), VALIDATING)
def test_generated_mutations_only_validate(spec, version, flag) -> None:
    @settings(max_examples=5)
    @given(message_values(spec, version))
    def check(value: dict) -> None:
        assert make_safe(spec, version, value)[flag] is True

    check()
