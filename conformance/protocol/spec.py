"""Kafka's JSON message-spec dialect, loaded into a small typed model.

The files are JSON with ``//`` comments (the upstream files carry licence headers and notes).
Everything the codec, the strategies and the suite know about a message comes from here.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from conformance import specs
from conformance.protocol.errors import SpecError, UnknownMessageError
from conformance.protocol.versions import NONE, Versions

#: Primitive types of the dialect, with the Python type a decoded value has.
PRIMITIVES: dict[str, type] = {
    "bool": bool,
    "int8": int,
    "int16": int,
    "uint16": int,
    "int32": int,
    "uint32": int,
    "int64": int,
    "float64": float,
    "string": str,
    "bytes": bytes,
    "records": bytes,
    "uuid": uuid.UUID,
}
INT_RANGES: dict[str, tuple[int, int]] = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
ZERO_UUID = uuid.UUID(int=0)
MESSAGE_TYPES = ("request", "response", "header", "data")
#: The project's own specs (package data).
SPEC_DIR = specs.MESSAGES


#: a JSON string (to keep, even unterminated), a line comment, or a block comment (to the end
#: of the text when unterminated): one ``re.sub`` is ~3x faster than walking the characters.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|//[^\n]*|/\*.*?(?:\*/|\Z)', re.S)


def _strip_token(m: re.Match[str]) -> str:
    t = m.group()
    if t[0] == '"':
        return t
    return "" if t[1] == "/" else "\n" * t.count("\n")


def strip_comments(text: str) -> str:
    """Remove ``//`` and ``/* */`` comments outside strings, keeping line numbers.

    Every node and suite process loads all 192 specs of the project, which have no comments
    (Kafka's upstream files do): a text without ``//`` or ``/*`` is returned as it is."""
    if "//" not in text and "/*" not in text:
        return text
    return _TOKEN.sub(_strip_token, text)


def read_spec_json(path: Path, *, strict: bool = True) -> dict[str, Any]:
    """Parse one spec file. ``strict=False`` ignores content after the top-level object, as
    Kafka's own generator does (one upstream release ships a file with a stray ``]}``)."""
    text = strip_comments(path.read_text(encoding="utf-8"))
    try:
        obj, end = json.JSONDecoder().raw_decode(text.lstrip())
    except json.JSONDecodeError as e:
        where = f"line {e.lineno} column {e.colno}"
        raise SpecError(str(path), "$", f"not JSON: {e.msg} at {where}") from None
    rest = text.lstrip()[end:].strip()
    if strict and rest:
        raise SpecError(
            str(path), "$", f"unexpected content after the top-level object: {rest[:20]!r}"
        )
    if not isinstance(obj, dict):
        raise SpecError(str(path), "$", "the top level must be an object")
    return obj


@dataclass(eq=False)
class StructSpec:
    """A struct: the message itself, an inline struct of a field, or a commonStruct."""

    name: str
    versions: Versions
    fields: list[FieldSpec]

    def fields_in(self, version: int) -> list[FieldSpec]:
        return [f for f in self.fields if version in f.versions]


@dataclass(eq=False)
class FieldSpec:
    name: str
    type: str
    versions: Versions
    nullable_versions: Versions = NONE
    tagged_versions: Versions = NONE
    tag: int | None = None
    default: Any = None
    ignorable: bool = False
    map_key: bool = False
    entity_type: str | None = None
    zero_copy: bool = False
    flexible_versions: Versions | None = None
    about: str | None = None
    #: the struct of a struct field (or of an array's elements); the loader sets it before the spec
    #: is returned, and only struct fields read it
    struct: StructSpec = None  # type: ignore[assignment]
    json_path: str = ""

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type not in PRIMITIVES

    def nullable_in(self, version: int) -> bool:
        return version in self.nullable_versions

    def tagged_in(self, version: int) -> bool:
        return version in self.tagged_versions

    def default_value(self) -> Any:
        """The value a field takes when it is absent in a version or its tag is not sent."""
        if self.default is None and not self.is_array and self.is_struct:
            if not self.nullable_versions.empty:
                return None  # a nullable struct defaults to null (every such field says so)
            return {f.name: f.default_value() for f in self.struct.fields}
        return self.default


@dataclass(eq=False)
class MessageSpec:
    name: str
    type: str
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    fields: list[FieldSpec]
    common_structs: dict[str, StructSpec] = field(default_factory=dict)
    listeners: tuple[str, ...] = ()
    deprecated_versions: Versions = NONE
    latest_version_unstable: bool = False
    path: str = ""

    @cached_property
    def struct(self) -> StructSpec:
        return StructSpec(self.name, self.valid_versions, self.fields)

    def flexible(self, version: int) -> bool:
        return version in self.flexible_versions

    def check_version(self, version: int) -> None:
        if version not in self.valid_versions:
            raise UnknownMessageError(
                f"{self.name} has no version {version} (valid versions: {self.valid_versions})"
            )


def _versions(obj: dict, key: str, file: str, path: str, default: Versions | None) -> Versions:
    if key not in obj:
        if default is None:
            raise SpecError(file, path, f"missing required key {key!r}")
        return default
    try:
        return Versions.parse(obj[key])
    except ValueError as e:
        raise SpecError(file, f"{path}.{key}", str(e)) from None


def _parse_default(raw: Any, fs: FieldSpec, file: str) -> Any:
    """Turn the spec's textual default into the Python value a decoded field holds."""
    path = f"{fs.json_path}.default"
    t = fs.element_type
    nullable = not fs.nullable_versions.empty
    if raw is None:
        if fs.is_array:
            return []
        return {
            "bool": False,
            "float64": 0.0,
            "string": "",
            "bytes": b"",
            "records": None,
            "uuid": ZERO_UUID,
        }.get(t, 0 if t in INT_RANGES else None)
    if raw == "null":
        if not nullable:
            raise SpecError(file, path, "default null on a field with no nullableVersions")
        return None
    if fs.is_array or fs.is_struct:
        raise SpecError(file, path, "arrays and structs may only default to null")
    text = str(raw).strip() if not isinstance(raw, bool) else str(raw).lower()
    try:
        if t == "bool":
            if text not in ("true", "false"):
                raise ValueError("expected true or false")
            return text == "true"
        if t in INT_RANGES:
            value = int(text, 16) if text.lower().startswith(("0x", "-0x")) else int(text)
            lo, hi = INT_RANGES[t]
            if not lo <= value <= hi:
                raise ValueError(f"{value} is outside the range of {t}")
            return value
        if t == "float64":
            return float(text)
        if t == "string":
            return str(raw)
        if t == "uuid":
            return ZERO_UUID if text in ("", "AAAAAAAAAAAAAAAAAAAAAA") else uuid.UUID(text)
        raise ValueError(f"type {t} takes no default but null")
    except ValueError as e:
        raise SpecError(file, path, f"invalid default {raw!r}: {e}") from None


class _Builder:
    """Builds the model of one file, resolving struct types and checking the dialect's rules."""

    def __init__(self, obj: dict, file: str) -> None:
        self.obj, self.file = obj, file
        self.structs: dict[str, StructSpec] = {}
        self.pending: list[tuple[FieldSpec, str]] = []
        self.raw_defaults: dict[int, Any] = {}

    def build(self) -> MessageSpec:
        obj, file = self.obj, self.file
        for key in ("name", "type", "validVersions", "fields"):
            if key not in obj:
                raise SpecError(file, "$", f"missing required key {key!r}")
        if obj["type"] not in MESSAGE_TYPES:
            raise SpecError(file, "$.type", f"must be one of {', '.join(MESSAGE_TYPES)}")
        api_key = obj.get("apiKey")
        if obj["type"] in ("request", "response") and not isinstance(api_key, int):
            raise SpecError(file, "$.apiKey", "requests and responses need an integer apiKey")
        valid = _versions(obj, "validVersions", file, "$", None)
        flexible = _versions(obj, "flexibleVersions", file, "$", NONE)
        commons = {}
        for i, cs in enumerate(obj.get("commonStructs", [])):
            path = f"$.commonStructs[{i}]"
            st = StructSpec(cs["name"], _versions(cs, "versions", file, path, valid), [])
            commons[st.name] = st
            self._declare(st, path)
        for i, cs in enumerate(obj.get("commonStructs", [])):
            commons[cs["name"]].fields = self._fields(cs.get("fields", []), f"$.commonStructs[{i}]")
        fields = self._fields(obj["fields"], "$")
        for fs, path in self.pending:
            found = self.structs.get(fs.element_type)
            if found is None:
                raise SpecError(file, f"{path}.type", f"unknown type {fs.type!r}")
            fs.struct = found
        for fs, _ in self.pending:
            fs.default = _parse_default(self.raw_defaults[id(fs)], fs, file)
        listeners = obj.get("listeners", ())
        return MessageSpec(
            name=obj["name"],
            type=obj["type"],
            api_key=api_key,
            valid_versions=valid,
            flexible_versions=flexible,
            fields=fields,
            common_structs=commons,
            listeners=tuple(listeners),
            deprecated_versions=_versions(obj, "deprecatedVersions", file, "$", NONE),
            latest_version_unstable=bool(obj.get("latestVersionUnstable", False)),
            path=file,
        )

    def _declare(self, st: StructSpec, path: str) -> None:
        if st.name in self.structs or st.name in PRIMITIVES:
            raise SpecError(self.file, f"{path}.name", f"struct {st.name!r} is defined twice")
        self.structs[st.name] = st

    def _fields(self, raw_fields: list, path: str) -> list[FieldSpec]:
        if not isinstance(raw_fields, list):
            raise SpecError(self.file, f"{path}.fields", "must be an array")
        out, names, tags = [], set(), set()
        for i, raw in enumerate(raw_fields):
            fpath = f"{path}.fields[{i}]"
            fs = self._field(raw, fpath)
            if fs.name in names:
                raise SpecError(self.file, f"{fpath}.name", f"duplicate field name {fs.name!r}")
            if fs.tag is not None:
                if fs.tag in tags:
                    raise SpecError(self.file, f"{fpath}.tag", f"duplicate tag {fs.tag}")
                tags.add(fs.tag)
            names.add(fs.name)
            out.append(fs)
        return out

    def _field(self, raw: dict, path: str) -> FieldSpec:
        file = self.file
        if not isinstance(raw, dict):
            raise SpecError(file, path, "a field must be an object")
        for key in ("name", "type"):
            if not isinstance(raw.get(key), str):
                raise SpecError(file, path, f"missing required string {key!r}")
        fs = FieldSpec(
            name=raw["name"],
            type=raw["type"],
            # A tagged field may leave out "versions": it then exists where it is tagged.
            versions=_versions(
                raw, "versions" if "versions" in raw else "taggedVersions", file, path, None
            ),
            nullable_versions=_versions(raw, "nullableVersions", file, path, NONE),
            tagged_versions=_versions(raw, "taggedVersions", file, path, NONE),
            # Kafka's generator reads tags leniently: "tag": "0" means tag 0.
            tag=int(raw["tag"]) if str(raw.get("tag", "")).isdigit() else raw.get("tag"),
            ignorable=bool(raw.get("ignorable", False)),
            map_key=bool(raw.get("mapKey", False)),
            entity_type=raw.get("entityType"),
            zero_copy=bool(raw.get("zeroCopy", False)),
            flexible_versions=(
                _versions(raw, "flexibleVersions", file, path, None)
                if "flexibleVersions" in raw
                else None
            ),
            about=raw.get("about"),
            json_path=path,
        )
        if (fs.tag is None) != fs.tagged_versions.empty:
            raise SpecError(file, path, "tag and taggedVersions must be given together")
        if fs.tag is not None and (not isinstance(fs.tag, int) or fs.tag < 0):
            raise SpecError(file, f"{path}.tag", "must be a non-negative integer")
        et = fs.element_type
        if fs.type.startswith("[][]") or not et:
            raise SpecError(file, f"{path}.type", f"invalid type {fs.type!r}")
        if et in PRIMITIVES:
            if "fields" in raw:
                raise SpecError(file, f"{path}.fields", f"a {fs.type} field cannot have fields")
            if (
                not fs.nullable_versions.empty
                and et not in ("string", "bytes", "records")
                and not fs.is_array
            ):
                raise SpecError(file, f"{path}.nullableVersions", f"type {et} cannot be null")
            fs.default = _parse_default(raw.get("default"), fs, file)
        else:
            if not et[0].isupper():
                raise SpecError(file, f"{path}.type", f"unknown type {fs.type!r}")
            if "fields" in raw:
                st = StructSpec(et, fs.versions, [])
                self._declare(st, path)
                st.fields = self._fields(raw["fields"], path)
            self.raw_defaults[id(fs)] = raw.get("default")
            self.pending.append((fs, path))
        return fs


def parse_spec(obj: dict, file: str) -> MessageSpec:
    """Build the model of one already-parsed spec object; ``file`` names it in errors."""
    return _Builder(obj, file).build()


def load_spec(path: Path, *, strict: bool = True) -> MessageSpec:
    return parse_spec(read_spec_json(path, strict=strict), str(path))


class SpecSet:
    """All message specs of one folder, looked up by api key and kind, or by name."""

    def __init__(self, specs: list[MessageSpec], source: str = "") -> None:
        self.source = source
        self.by_name = {s.name: s for s in specs}
        self.by_key = {(s.api_key, s.type): s for s in specs if s.api_key is not None}

    @classmethod
    def load(cls, spec_dir: Path | str | None = None, *, strict: bool = True) -> SpecSet:
        folder = Path(spec_dir) if spec_dir is not None else SPEC_DIR
        if not folder.is_dir():
            raise SpecError(str(folder), "$", "not a folder of message specs")
        files = sorted(folder.glob("*.json"))
        if not files:
            raise SpecError(str(folder), "$", "no *.json message specs in this folder")
        return cls([load_spec(p, strict=strict) for p in files], str(folder))

    def message(self, api_key: int, kind: str) -> MessageSpec:
        try:
            return self.by_key[(api_key, kind)]
        except KeyError:
            raise UnknownMessageError(f"no {kind} spec for api key {api_key}") from None

    def __iter__(self) -> Iterator[MessageSpec]:
        return iter(self.by_name.values())

    def apis(self) -> dict[int, str]:
        """api key -> API name (the request's name without ``Request``)."""
        return {
            k: s.name.removesuffix("Request")
            for (k, kind), s in sorted(self.by_key.items())
            if kind == "request"
        }
