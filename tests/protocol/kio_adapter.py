"""Translate between the codec's value model and kio's entity dataclasses (kio 0.6.5).

kio is a second, independent Python implementation of the Kafka protocol: one frozen dataclass
per (message, version, struct), a Rust reader (``kio.serial.entity_reader``) and a Python
writer (``kio.serial.entity_writer``). Differential tests need the same message in both models;
this module links our spec fields to kio's attributes and converts values both ways.

Field names: ours are the spec's names verbatim (``ThrottleTimeMs``), kio's are snake_case
(``throttle_time``), and kio drops the ``_ms`` suffix where it types the field as a duration or
a point in time. Types (kio's ``kafka_type`` field metadata -> ours):

  int8/int16/int32/int64/uint16  kio int newtypes (plain ints at run time) <-> int
  error_code     kio ``ErrorCode`` IntEnum <-> int16
  timedelta_i32/i64  ``datetime.timedelta`` <-> milliseconds (int32 / int64)
  datetime_i64   tz-aware ``datetime`` (UTC) or None <-> epoch milliseconds, -1 <-> None
  uuid           ``uuid.UUID``; kio reads the all-zero uuid as None <-> ``UUID(int=0)``
  string/bytes/records/bool/float64  the same Python values
  arrays         tuples (None where nullable) <-> lists
  structs        nested entity dataclasses <-> dicts

kio's value domain is narrower than the wire's in three places; ``fit`` maps a generated value
into kio's domain (deterministically, keeping its variety) instead of weakening our codec:

  error_code     kio's reader raises ValueError for codes missing from its ErrorCode enum, so
                 other int16 values become a known code (``codes[v % len(codes)]``).
  datetime_i64   kio reads -1 as None (and cannot write that None back where its field is not
                 optional, as in the delegation token APIs), raises on other negatives, and
                 converts milliseconds through float seconds, which is exact only below about
                 2**42 ms; values are folded into [0, 2**41).
  timedelta_i64  kio writes ``round(td.total_seconds() * 1000)``, a float, exact only below
                 about 2**50 ms; values are folded into (-2**47, 2**47).
"""

from __future__ import annotations

import dataclasses
import datetime
import io
import re
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from kio.index import load_entity_schema
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.static.constants import EntityType

from conformance.protocol import Codec, MessageSpec
from conformance.protocol.spec import ZERO_UUID, FieldSpec, StructSpec

UNKNOWN = "_unknown_tagged_fields"
EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
MS = datetime.timedelta(milliseconds=1)
ERROR_CODES = sorted(int(c) for c in ErrorCode)
TIME_TYPES = ("timedelta_i32", "timedelta_i64", "datetime_i64")
#: Header specs and the kio schema names that model them.
HEADERS = {"RequestHeader": "request_header", "ResponseHeader": "response_header"}


class KioMismatch(Exception):
    """Our spec and kio's dataclass disagree on the shape of a struct."""


@dataclass(frozen=True)
class FieldLink:
    """One of our fields present in the version, and the kio attribute that carries it."""

    field: FieldSpec
    attr: str
    kafka_type: str | None  # kio's metadata; None for struct fields
    nested: StructLink | None
    is_array: bool


@dataclass(frozen=True)
class StructLink:
    """A struct of ours at one version, linked to one kio dataclass."""

    struct: StructSpec
    entity: type
    links: tuple[FieldLink, ...]
    absent: tuple[FieldSpec, ...]  # our fields outside the version: they hold their default


# --- which (message, version) pairs kio models ------------------------------------------------


def kio_entity(spec: MessageSpec, version: int) -> type | None:
    """kio's dataclass for ``spec`` at ``version``, or None when kio does not model it."""
    if spec.type == "header":
        name, kind = HEADERS.get(spec.name), EntityType.header
    else:
        name, kind = api_key_map.get(spec.api_key), EntityType[spec.type]
    if name is None or kind not in schema_name_map.get(name, {}).get(version, {}):
        return None
    return load_entity_schema(name, version, kind)


def kio_pairs(codec: Codec) -> Iterator[tuple[MessageSpec, int, type]]:
    """Every (spec, version) of ours that kio's package also models, with kio's dataclass."""
    for spec in sorted(codec.specs, key=lambda m: (m.type == "header", m.api_key or 0, m.name)):
        for version in spec.valid_versions:
            entity = kio_entity(spec, version)
            if entity is not None:
                yield spec, version, entity


def kio_absent(codec: Codec) -> set[tuple[str, int]]:
    """(message name, version) pairs of ours that kio does not model."""
    return {
        (spec.name, v)
        for spec in codec.specs
        for v in spec.valid_versions
        if kio_entity(spec, v) is None
    }


# --- linking fields ---------------------------------------------------------------------------


def snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def _unwrap(tp: Any) -> Any:
    """The entity class in ``X``, ``X | None``, ``tuple[X, ...]`` or ``tuple[X, ...] | None``."""
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if typing.get_origin(tp) is tuple:
        tp = typing.get_args(tp)[0]
    return tp


def link(struct: StructSpec, version: int, entity: type, path: str = "") -> StructLink:
    """Pair each of our fields at ``version`` with kio's attribute; raise KioMismatch if the
    two models disagree on names, tags or struct shape."""
    path = path or struct.name
    attrs = {f.name: f for f in dataclasses.fields(entity)}
    links: list[FieldLink] = []
    for f in struct.fields:
        if version not in f.versions:
            continue
        name = snake(f.name)
        attr = attrs.get(name)
        if attr is None and name.endswith("_ms"):
            attr = attrs.get(name.removesuffix("_ms"))
            if attr is not None and attr.metadata.get("kafka_type") not in TIME_TYPES:
                attr = None
        if attr is None:
            raise KioMismatch(f"{path}.{f.name}: no attribute {name!r} on {entity.__name__}")
        tag = attr.metadata.get("tag")
        want = f.tag if f.tagged_in(version) else None
        if tag != want:
            raise KioMismatch(f"{path}.{f.name}: tag {want} here, {tag} in kio")
        nested = None
        if f.is_struct:
            nested = link(f.struct, version, _unwrap(attr.type), f"{path}.{f.name}")
        links.append(FieldLink(f, attr.name, attr.metadata.get("kafka_type"), nested, f.is_array))
    extra = set(attrs) - {lk.attr for lk in links}
    if extra:
        raise KioMismatch(f"{path}: kio has attributes we do not: {sorted(extra)}")
    absent = tuple(f for f in struct.fields if version not in f.versions)
    return StructLink(struct, entity, tuple(links), absent)


# --- values: ours -> kio ----------------------------------------------------------------------


def _prim_to_kio(kafka_type: str, v: Any) -> Any:
    if kafka_type == "error_code":
        return ErrorCode(v)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return datetime.timedelta(milliseconds=v)
    if kafka_type == "datetime_i64":
        return None if v == -1 else EPOCH + datetime.timedelta(milliseconds=v)
    if kafka_type == "uuid":
        return None if v == ZERO_UUID else v
    return v


def _value_to_kio(lk: FieldLink, v: Any) -> Any:
    if lk.nested is not None:
        if lk.is_array:
            return None if v is None else tuple(to_kio(lk.nested, e) for e in v)
        return None if v is None else to_kio(lk.nested, v)
    if lk.is_array:
        return None if v is None else tuple(_prim_to_kio(lk.kafka_type, e) for e in v)
    return _prim_to_kio(lk.kafka_type, v)


def to_kio(sl: StructLink, value: dict) -> Any:
    """The kio entity holding ``value`` (unknown tagged fields are not carried over)."""
    kwargs = {lk.attr: _value_to_kio(lk, value[lk.field.name]) for lk in sl.links}
    return sl.entity(**kwargs)


# --- values: kio -> ours ----------------------------------------------------------------------


def _whole_ms(td: datetime.timedelta) -> int:
    ms, rest = divmod(td, MS)
    if rest:
        raise ValueError(f"{td!r} is not a whole number of milliseconds")
    return ms


def _prim_from_kio(kafka_type: str, v: Any) -> Any:
    if kafka_type == "error_code":
        return int(v)
    if kafka_type in ("timedelta_i32", "timedelta_i64"):
        return _whole_ms(v)
    if kafka_type == "datetime_i64":
        return -1 if v is None else _whole_ms(v - EPOCH)
    if kafka_type == "uuid":
        return ZERO_UUID if v is None else v
    if kafka_type in ("bytes", "records") and v is not None:
        return bytes(v)
    if kafka_type and kafka_type.startswith(("int", "uint")):
        return int(v)
    return v


def _value_from_kio(lk: FieldLink, v: Any) -> Any:
    if lk.nested is not None:
        if lk.is_array:
            return None if v is None else [from_kio(lk.nested, e) for e in v]
        return None if v is None else from_kio(lk.nested, v)
    if lk.is_array:
        return None if v is None else [_prim_from_kio(lk.kafka_type, e) for e in v]
    return _prim_from_kio(lk.kafka_type, v)


def from_kio(sl: StructLink, entity: Any) -> dict:
    """Our value model of a kio entity: every field, absent ones at their default."""
    if type(entity) is not sl.entity:
        raise TypeError(f"expected {sl.entity.__name__}, got {type(entity).__name__}")
    out = {f.name: f.default_value() for f in sl.absent}
    for lk in sl.links:
        out[lk.field.name] = _value_from_kio(lk, getattr(entity, lk.attr))
    return {f.name: out[f.name] for f in sl.struct.fields}


# --- kio's value domain -----------------------------------------------------------------------


def _fit_prim(kafka_type: str, v: Any) -> Any:
    if kafka_type == "error_code" and v not in ERROR_CODES:
        return ERROR_CODES[v % len(ERROR_CODES)]
    if kafka_type == "datetime_i64":
        return v % 2**41
    if kafka_type == "timedelta_i64" and abs(v) >= 2**47:
        return v % 2**47
    return v


def fit(sl: StructLink, value: dict) -> dict:
    """``value`` without unknown tagged fields, with primitives folded into kio's domain."""
    out = {k: v for k, v in value.items() if k != UNKNOWN}
    for lk in sl.links:
        v = out[lk.field.name]
        if v is None:
            continue
        if lk.nested is not None:
            out[lk.field.name] = (
                [fit(lk.nested, e) for e in v] if lk.is_array else fit(lk.nested, v)
            )
        elif lk.is_array:
            out[lk.field.name] = [_fit_prim(lk.kafka_type, e) for e in v]
        else:
            out[lk.field.name] = _fit_prim(lk.kafka_type, v)
    return out


# --- kio's reader and writer ------------------------------------------------------------------


def kio_read(entity: type, raw: bytes) -> tuple[Any, int]:
    """kio's native (Rust) reader: the entity and how many bytes it consumed."""
    return entity_reader(entity)(raw, 0)


def kio_write(entity: Any) -> bytes:
    """kio's writer."""
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()
