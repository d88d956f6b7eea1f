"""Field-by-field comparison of two answers to the same request, after the mask.

Answers are compared as the codec decodes them at the version sent, field by field along the
response spec (only the fields that version has). Lists of structs with a map key are matched by
key, other lists by position (a list the mask says is unordered by its naming field, a name or
an index, where that is unique on both sides); a field the mask covers is compared its way, and
each difference it hides is counted against its entry (``Comparison.hidden``). How the request
went is compared first (the ``<outcome>`` path): an answer on one side and a closed connection
or silence on the other is a difference of its own, and the bodies are compared only when both
answered.
"""

from __future__ import annotations

import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from conformance.diff.mask import OUTCOME, FieldRule, Mask
from conformance.protocol.spec import FieldSpec

ABSENT = "<absent>"
#: bytes shown in a difference's value: longer ones are cut, their length said
SHOWN_BYTES = 48


@dataclass(frozen=True)
class Answer:
    """How one request went on one target: ``answered`` (with the decoded body), ``closed``,
    ``silent`` (no answer in time) or ``malformed`` (detail says why)."""

    outcome: str
    body: dict | None = None
    detail: str = ""


@dataclass(frozen=True)
class FieldDifference:
    path: str
    a: Any
    b: Any


def plain(value: Any) -> Any:
    """A value as JSON can hold it: bytes as hex (long ones cut), UUIDs as text."""
    if isinstance(value, bytes):
        text = value[:SHOWN_BYTES].hex()
        return f"0x{text}" + (f"...({len(value)} bytes)" if len(value) > SHOWN_BYTES else "")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    return value


def is_set(value: Any) -> bool:
    """Set-alike's test: not null, empty, zero, false or the nil UUID."""
    if isinstance(value, uuid.UUID):
        return value.int != 0
    return bool(value)


def _hashable(value: Any) -> Any:
    value = plain(value)
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


class Comparison:
    """Compares answers for one pair of targets under one mask, counting what the mask hid."""

    def __init__(self, mask: Mask, other: str, source: str = "stream") -> None:
        self.mask, self.other, self.source = mask, other, source
        #: mask entry id -> differences it hid
        self.hidden: Counter[str] = Counter()
        self._request: dict = {}

    def answers(
        self,
        api: str,
        version: int,
        fields: list[FieldSpec],
        a: Answer,
        b: Answer,
        request: dict | None = None,
    ) -> list[FieldDifference]:
        """The differences between two answers to ``request`` (after the mask)."""
        self._request = request or {}
        out: list[FieldDifference] = []
        if a.outcome != b.outcome:
            self._leaf(api, version, OUTCOME, a.outcome, b.outcome, out)
            return out
        if a.body is not None and b.body is not None:
            self._struct(api, version, fields, a.body, b.body, "", out)
        return out

    def _rules(self, api: str, version: int, path: str) -> list[FieldRule]:
        return self.mask.field_rules(api, version, path, self.other, self._request, self.source)

    def _hide(self, rules: list[FieldRule], a: Any, b: Any) -> bool:
        """Whether a rule hides this difference (counted against the first that does)."""
        for rule in rules:
            hides = (
                rule.compare == "ignore"
                or (rule.compare == "set-alike" and is_set(a) == is_set(b))
                or (rule.compare == "pairs" and rule.allows(_hashable(a), _hashable(b)))
                or (rule.compare == "unordered" and _multiset(a) == _multiset(b))
            )
            if hides:
                self.hidden[rule.id] += 1
                return True
        return False

    def _leaf(self, api: str, version: int, path: str, a: Any, b: Any, out: list) -> None:
        if a == b:
            return
        if not self._hide(self._rules(api, version, path), a, b):
            out.append(FieldDifference(path, plain(a), plain(b)))

    def _struct(self, api, version, fields, a: dict, b: dict, path: str, out: list) -> None:
        for f in fields:
            if version not in f.versions:
                continue
            p = f"{path}.{f.name}" if path else f.name
            va, vb = a.get(f.name), b.get(f.name)
            if va == vb:
                continue
            rules = self._rules(api, version, p)
            if any(r.compare in ("ignore", "set-alike") for r in rules):
                if self._hide(rules, va, vb):
                    continue
                if any(r.compare == "set-alike" for r in rules):
                    out.append(FieldDifference(p, plain(va), plain(vb)))
                    continue
            if f.is_struct and isinstance(va, list) and isinstance(vb, list):
                unordered = any(r.compare == "unordered" for r in rules)
                self._list(api, version, f, va, vb, p, out, unordered)
            elif f.is_struct and isinstance(va, dict) and isinstance(vb, dict):
                self._struct(api, version, f.struct.fields, va, vb, p, out)
            else:
                self._leaf(api, version, p, va, vb, out)

    def _list(self, api, version, f: FieldSpec, a: list, b: list, path, out, unordered) -> None:
        keys = [k.name for k in f.struct.fields if k.map_key and version in k.versions]
        if not keys and unordered:  # an unordered list is matched by its naming field, if unique
            keys = [_naming_field(f, version)]
        if keys:
            ka = {tuple(plain(x.get(k)) for k in keys): x for x in a}
            kb = {tuple(plain(x.get(k)) for k in keys): x for x in b}
            if len(ka) == len(a) and len(kb) == len(b):
                for key in [*ka, *(k for k in kb if k not in ka)]:
                    name = ",".join(map(str, key))
                    p = f"{path}[{name}]"
                    if key in ka and key in kb:
                        self._struct(api, version, f.struct.fields, ka[key], kb[key], p, out)
                    else:
                        self._leaf(api, version, p, ka.get(key, ABSENT), kb.get(key, ABSENT), out)
                return
        if unordered:  # by the first field (a name or an index), then by the whole item
            a, b = sorted(a, key=_item_key), sorted(b, key=_item_key)
        for i in range(max(len(a), len(b))):
            p = f"{path}[{i}]"
            if i < len(a) and i < len(b):
                self._struct(api, version, f.struct.fields, a[i], b[i], p, out)
            else:
                va = a[i] if i < len(a) else ABSENT
                vb = b[i] if i < len(b) else ABSENT
                self._leaf(api, version, p, va, vb, out)


def _naming_field(f: FieldSpec, version: int) -> str:
    """The field that names an item of a list: the first whose name ends in Index, Name, Id or
    Key (PartitionIndex, Name, GroupId), else the first."""
    names = [k.name for k in f.struct.fields if version in k.versions]
    for suffix in ("Index", "Name", "Id", "Key"):
        for name in names:
            if name.endswith(suffix):
                return name
    return names[0]


def _item_key(item: Any) -> tuple[str, str]:
    first = next(iter(item.values()), None) if isinstance(item, dict) else item
    return repr(_canonical(first)), repr(_canonical(item))


def _canonical(value: Any) -> Any:
    """A value with every list in it sorted (a dict is its sorted pairs already): the
    order-free form unordered lists sort by."""
    value = _hashable(value)
    if isinstance(value, tuple):
        return tuple(sorted((_canonical(v) for v in value), key=repr))
    return value


def repr_key(value: Any) -> str:
    return repr(_hashable(value))


def _multiset(value: Any) -> Any:
    if isinstance(value, list):
        return sorted(repr_key(v) for v in value)
    return value
