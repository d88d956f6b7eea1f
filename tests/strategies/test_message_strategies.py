"""The generated values obey the spec: types and ranges, nullability, tagged fields, map keys."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import Codec
from conformance.protocol.compiler import UNKNOWN_TAGS
from conformance.protocol.spec import INT_RANGES, PRIMITIVES, StructSpec
from conformance.strategies.messages import message_values

CODEC = Codec.from_specs()
SPECS = [m for m in CODEC.specs if m.type in ("request", "response")]


@st.composite
def generated(draw):
    spec = draw(st.sampled_from(SPECS))
    version = draw(st.sampled_from(list(spec.valid_versions)))
    return spec, version, draw(message_values(spec, version))


def _check_struct(st_: StructSpec, value: dict, version: int, flexible: bool, path: str) -> None:
    known = {f.name for f in st_.fields}
    extra = set(value) - known - {UNKNOWN_TAGS}
    assert not extra, f"{path}: unexpected keys {extra}"
    if UNKNOWN_TAGS in value:
        assert flexible, f"{path}: unknown tagged fields in a non-flexible version"
        tags = {f.tag for f in st_.fields if f.tag is not None}
        assert value[UNKNOWN_TAGS] and not set(value[UNKNOWN_TAGS]) & tags
    for f in st_.fields:
        v = value[f.name]
        where = f"{path}.{f.name}"
        if version not in f.versions:
            assert v == f.default_value(), f"{where}: absent in v{version} but not the default"
            continue
        if f.tagged_in(version):
            assert flexible, f"{where}: tagged field in a non-flexible version"
        if v is None:
            assert f.nullable_in(version), f"{where}: null in a non-nullable version"
            continue
        items = v if f.is_array else [v]
        if f.is_array:
            assert isinstance(v, list)
            keys = [g.name for g in (f.struct.fields if f.is_struct else []) if g.map_key]
            keys = [
                k
                for k in keys
                if version in next(g for g in f.struct.fields if g.name == k).versions
            ]
            if keys:
                seen = [tuple(item[k] for k in keys) for item in v]
                assert len(seen) == len(set(seen)), f"{where}: duplicate map keys {seen}"
        for i, item in enumerate(items):
            if f.is_struct:
                _check_struct(f.struct, item, version, flexible, f"{where}[{i}]")
                continue
            et = f.element_type
            assert isinstance(item, PRIMITIVES[et]), f"{where}: {item!r} is not {et}"
            if et in INT_RANGES:
                lo, hi = INT_RANGES[et]
                assert lo <= item <= hi and not isinstance(item, bool)
            if et == "string":
                item.encode("utf-8")  # no lone surrogates
            if et == "uuid":
                assert isinstance(item, uuid.UUID)


@given(generated())
def test_values_obey_their_spec(case) -> None:
    spec, version, value = case
    _check_struct(spec.struct, value, version, spec.flexible(version), spec.name)


@given(generated())
def test_values_encode(case) -> None:
    spec, version, value = case
    assert isinstance(CODEC.encode(spec.api_key, version, spec.type, value), bytes)
