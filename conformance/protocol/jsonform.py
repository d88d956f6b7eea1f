"""The JSON form of message values, for people and for files (CLI output, reports, fixtures).

The codec's values hold ``bytes`` and ``uuid.UUID``, which JSON lacks, so the form is driven by
the spec: each value is written according to its field's type, and read back the same way.

=================  ==========================================================================
spec type          JSON form
=================  ==========================================================================
int8 … int64,      number (integer)
uint16, uint32
bool               true / false
float64            number; the non-finite values as the strings "NaN", "Infinity", "-Infinity"
string             string
bytes, records     string of lowercase hex digits ("" for empty); whitespace is ignored on input
uuid               string in the canonical 8-4-4-4-12 form
struct             object keyed by the spec's field names
array              array
null (nullable)    null
=================  ==========================================================================

Unknown tagged fields, kept by the codec under ``"_unknown_tagged_fields": {tag: bytes}``, are
written as ``{"<tag in decimal>": "<hex>"}``. :func:`from_json` accepts exactly what
:func:`to_json` writes; fields may be left out (the codec gives them their defaults), but a key
that is not a field of the struct is an error, so that a misspelt field is never silently lost.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from typing import Any

from conformance.protocol.compiler import UNKNOWN_TAGS
from conformance.protocol.spec import INT_RANGES, FieldSpec, MessageSpec, StructSpec

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class JsonFormError(ValueError):
    """A JSON value that does not fit its field; names the field path."""

    def __init__(self, path: str, reason: str) -> None:
        self.path, self.reason = path, reason
        super().__init__(f"{path or '(top level)'}: {reason}")


def to_json(spec: MessageSpec | StructSpec, value: dict, version: int | None = None) -> dict:
    """The JSON form of a message value (a dict in the codec's value model). With ``version``,
    only the fields that version has: the decoder gives the others their defaults, which are not
    on the wire and would mislead a reader."""
    return _struct_to_json(spec.fields, value, "", version)


def from_json(spec: MessageSpec | StructSpec, obj: Any) -> dict:
    """The codec value of a JSON form written by :func:`to_json` (or by hand)."""
    return _struct_from_json(spec.fields, obj, "")


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _struct_to_json(
    fields: list[FieldSpec], value: dict, path: str, version: int | None = None
) -> dict:
    by_name = {f.name: f for f in fields}
    out: dict[str, Any] = {}

    def element(f: FieldSpec, item: Any, where: str) -> Any:
        return _element_to_json(f, item, where, version)

    for key, item in value.items():
        if key == UNKNOWN_TAGS:
            out[key] = {str(tag): bytes(raw).hex() for tag, raw in sorted(item.items())}
        elif key in by_name:
            f = by_name[key]
            if version is None or version in f.versions:
                out[key] = _field(f, item, _join(path, key), element)
        else:
            raise JsonFormError(_join(path, key), "not a field of this struct")
    return out


def _field(f: FieldSpec, value: Any, path: str, element: Callable[..., Any]) -> Any:
    """Apply ``element`` to a field's value, or to each item when the field is an array."""
    if value is None:
        return None  # whether null is allowed here is the codec's rule (per version)
    if not f.is_array:
        return element(f, value, path)
    if not isinstance(value, list):
        raise JsonFormError(path, f"expected an array, got {_kind(value)}")
    return [element(f, item, f"{path}[{i}]") for i, item in enumerate(value)]


def _element_to_json(f: FieldSpec, value: Any, path: str, version: int | None = None) -> Any:
    if f.is_struct:
        return _struct_to_json(f.struct.fields, value, path, version)
    t = f.element_type
    if t in ("bytes", "records"):
        return bytes(value).hex()
    if t == "uuid":
        return str(value)
    if t == "float64" and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


def _struct_from_json(fields: list[FieldSpec], obj: Any, path: str) -> dict:
    if not isinstance(obj, dict):
        raise JsonFormError(path, f"expected an object, got {_kind(obj)}")
    by_name = {f.name: f for f in fields}
    out: dict[str, Any] = {}
    for key, item in obj.items():
        if key == UNKNOWN_TAGS:
            out[key] = _unknown_from_json(item, _join(path, key))
        elif key in by_name:
            out[key] = _field(by_name[key], item, _join(path, key), _element_from_json)
        else:
            known = ", ".join(by_name) or "none"
            raise JsonFormError(_join(path, key), f"not a field of this struct (fields: {known})")
    return out


def _unknown_from_json(obj: Any, path: str) -> dict[int, bytes]:
    if not isinstance(obj, dict):
        raise JsonFormError(path, f"expected an object of tag: hex, got {_kind(obj)}")
    out: dict[int, bytes] = {}
    for tag, raw in obj.items():
        if not tag.isdigit():
            raise JsonFormError(f"{path}.{tag}", "a tag must be a decimal number")
        out[int(tag)] = _hex(raw, f"{path}.{tag}")
    return out


def _element_from_json(f: FieldSpec, obj: Any, path: str) -> Any:
    if f.is_struct:
        return _struct_from_json(f.struct.fields, obj, path)
    t = f.element_type
    if t in INT_RANGES:
        if isinstance(obj, bool) or not isinstance(obj, int):
            raise JsonFormError(path, f"expected an integer ({t}), got {_kind(obj)}")
        return obj
    if t == "bool":
        if not isinstance(obj, bool):
            raise JsonFormError(path, f"expected true or false, got {_kind(obj)}")
        return obj
    if t == "float64":
        if isinstance(obj, str) and obj in _NON_FINITE:
            return _NON_FINITE[obj]
        if isinstance(obj, bool) or not isinstance(obj, int | float):
            raise JsonFormError(path, f"expected a number, got {_kind(obj)}")
        return float(obj)
    if t == "string":
        if not isinstance(obj, str):
            raise JsonFormError(path, f"expected a string, got {_kind(obj)}")
        return obj
    if t in ("bytes", "records"):
        return _hex(obj, path)
    if t == "uuid":
        if not isinstance(obj, str):
            raise JsonFormError(path, f"expected a uuid string, got {_kind(obj)}")
        try:
            return uuid.UUID(obj)
        except ValueError:
            raise JsonFormError(path, f"not a uuid: {obj!r}") from None
    raise JsonFormError(path, f"no JSON form for type {t}")


def _hex(obj: Any, path: str) -> bytes:
    if not isinstance(obj, str):
        raise JsonFormError(path, f"expected a hex string, got {_kind(obj)}")
    try:
        return bytes.fromhex("".join(obj.split()))
    except ValueError as e:
        raise JsonFormError(path, f"not hex: {e}") from None


def _kind(obj: Any) -> str:
    if obj is None:
        return "null"
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
            list: "an array", dict: "an object"}.get(type(obj), type(obj).__name__)  # fmt: skip
