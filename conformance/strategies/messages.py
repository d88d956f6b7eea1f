"""Hypothesis strategies for message values, generated from the message specs.

A value follows the codec's model: every field of the struct is present, fields outside the
version hold their default, null appears only in nullable versions, tagged fields and unknown
tagged fields only in flexible versions, and map keys are unique within their array.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from hypothesis import strategies as st

from conformance.protocol.compiler import UNKNOWN_TAGS
from conformance.protocol.spec import INT_RANGES, ZERO_UUID, FieldSpec, MessageSpec, StructSpec

#: Text that survives UTF-8 round trips (no lone surrogates).
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
BYTES = st.binary(max_size=16)
UUIDS = st.one_of(st.just(ZERO_UUID), st.uuids())
FLOATS = st.floats(allow_nan=False)

_PRIMITIVES: dict[str, st.SearchStrategy] = {
    "bool": st.booleans(),
    "float64": FLOATS,
    "string": TEXT,
    "bytes": BYTES,
    "records": BYTES,
    "uuid": UUIDS,
    **{t: st.integers(lo, hi) for t, (lo, hi) in INT_RANGES.items()},
}


def message_values(spec: MessageSpec, version: int) -> st.SearchStrategy[dict]:
    """Valid values of ``spec`` at ``version``, in the codec's value model."""
    spec.check_version(version)
    return _struct(spec.struct, version, spec.flexible(version), 0)


def _unknown_tags(struct: StructSpec) -> st.SearchStrategy[dict[int, bytes]]:
    known = {f.tag for f in struct.fields if f.tag is not None}
    tags = st.integers(0, 300).filter(lambda t: t not in known)
    return st.dictionaries(tags, BYTES, max_size=2)


@cache
def _struct_cached(struct: StructSpec, version: int, flexible: bool, depth: int):
    parts: dict[str, st.SearchStrategy] = {}
    for f in struct.fields:
        if version not in f.versions:
            parts[f.name] = st.builds(f.default_value)
        elif f.tagged_in(version):
            parts[f.name] = st.one_of(
                st.builds(f.default_value), _field(f, version, flexible, depth)
            )
        else:
            parts[f.name] = _field(f, version, flexible, depth)
    base = st.fixed_dictionaries(parts)
    if not flexible:
        return base
    return st.builds(_with_unknown, base, _unknown_tags(struct))


def _with_unknown(value: dict, unknown: dict[int, bytes]) -> dict:
    if unknown:
        value[UNKNOWN_TAGS] = unknown
    return value


def _struct(struct: StructSpec, version: int, flexible: bool, depth: int) -> st.SearchStrategy:
    return _struct_cached(struct, version, flexible, depth)


def _map_key(struct: StructSpec, version: int) -> Any:
    keys = [f.name for f in struct.fields if f.map_key and version in f.versions]
    if not keys:
        return None
    return lambda item: tuple(item[k] for k in keys)


def _field(f: FieldSpec, version: int, flexible: bool, depth: int) -> st.SearchStrategy:
    et = f.element_type
    if f.is_struct:
        elem = _struct(f.struct, version, flexible, depth + 1)
    else:
        elem = _PRIMITIVES[et]
    if f.is_array:
        size = 3 if depth < 2 else 1
        key = _map_key(f.struct, version) if f.is_struct else None
        strategy = (
            st.lists(elem, max_size=size, unique_by=key) if key else st.lists(elem, max_size=size)
        )
    else:
        strategy = elem
    if f.nullable_in(version):
        strategy = st.one_of(st.none(), strategy)
    return strategy
