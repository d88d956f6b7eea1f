"""The mask: what may legitimately differ between two targets' answers, each with its reason.

It lives in one data file, ``mask.json`` beside this module. Two lists:

* ``fields``: an entry names the APIs it covers (names as the specs spell them, without
  ``Request``; ``*`` for every API), a field path pattern or a list of them (``*`` matches any
  run of characters; matched against the path with list positions and keys written ``[]``,
  e.g. ``Topics[].Partitions[].ErrorMessage``, and against the path as it is, e.g.
  ``Topics[__consumer_offsets]``; the path ``<outcome>`` is how the request went: answered,
  closed, silent, malformed), optionally the versions (``"0-3"``, ``"4+"``), the second
  target's kind (``"kafka:3.*"``) and values of the request's fields (``"request":
  {"TimeoutMs": 0, "Topics[0].Name": null}``; ``"<set>"`` for any value but null, UUIDs as
  text; a bound such as ``{"<": 0}`` or ``{">=": 1}`` for a number; ``[*]`` in a path for
  any element of a list, the condition met when one element meets it), the part of the run
  (``"source": "models"`` or ``"stream"``), and how the field is compared:

  - ``ignore``: not compared (a value the target draws or takes from its set-up: ids, hosts,
    ports, times);
  - ``set-alike``: compared only for being set (not null, empty, zero or the nil UUID) on both
    sides or on neither;
  - ``unordered``: a list compared as a multiset;
  - ``pairs``: only the listed value pairs ``[first target's, second target's]`` may differ
    (either order).

* ``versions``: an entry says why the advertised version ranges of some APIs may differ
  (``apis``, optional ``when``, ``only``: ``first`` or ``second`` where that target alone
  advertises the API, and ``reason``).

* ``refusals`` (models only): an entry names an error code (``error``) with which the second
  target (``when``) refuses every entry of a request of ``apis`` that the first carries out,
  a refusal a client answers by sending the request again elsewhere (ZooKeeper-mode Kafka's
  NOT_CONTROLLER: the admin client asks Metadata for the controller and retries there). Such a
  refusal followed by the retry is one step, the retry's answer compared; a refusal the model
  does not retry (a model sending to a broker it names) is not compared, and what the first
  target's model did after the other's run stopped at it is not a difference either. Each is
  counted against the entry.

* ``models``: an entry names model tests (``tests``: patterns over pytest's node ids) that the
  second target (``when``) cannot run at all, with the reason; such a test, when the second
  target took none of its steps, is not compared (its first target's steps counted against the
  entry).

Every entry must have a non-empty reason; a value an entry masked is counted against the entry's
``id`` and reported, so nothing is masked silently.
"""

from __future__ import annotations

import fnmatch
import functools
import json
import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from conformance.protocol.versions import MAX_VERSION, Versions

MASK_FILE = Path(__file__).with_name("mask.json")
COMPARES = ("ignore", "set-alike", "unordered", "pairs")
OUTCOME = "<outcome>"
_POSITION = re.compile(r"\[[^\]]*\]")


class MaskError(ValueError):
    """The mask file is malformed (one line naming the entry)."""


@functools.cache
def glob(pattern: str) -> re.Pattern:
    """A path pattern: ``*`` matches any run of characters, everything else itself (so a list
    key can be named: ``Topics[__transaction_state]``)."""
    return re.compile("^" + re.escape(pattern).replace(r"\*", ".*") + "$")


def normalize(path: str) -> str:
    """A field path with list positions and keys written ``[]``, as mask patterns name them."""
    return _POSITION.sub("[]", path)


@dataclass(frozen=True)
class FieldRule:
    id: str
    apis: tuple[str, ...]
    paths: tuple[str, ...]
    compare: str
    reason: str
    versions: Versions | None = None
    when: str = "*"
    pairs: tuple[tuple[Any, Any], ...] = ()
    request: tuple[tuple[str, Any], ...] = ()
    #: "stream" or "models": only for the answers of that part of the run ("": both)
    source: str = ""

    def covers(
        self, api: str, version: int, path: str, other: str, request: dict, source: str = ""
    ) -> bool:
        return (
            self.source in ("", source)
            and ("*" in self.apis or api in self.apis)
            and (self.versions is None or version in self.versions)
            and fnmatch.fnmatchcase(other, self.when)
            and any(glob(p).match(normalize(path)) or glob(p).match(path) for p in self.paths)
            and all(any(_meets(x, v) for x in lookup_all(request, k)) for k, v in self.request)
        )

    def allows(self, a: Any, b: Any) -> bool:
        """For ``pairs``: whether this pair of values is one the entry allows."""
        return (a, b) in self.pairs or (b, a) in self.pairs


#: a request condition's value meaning "any value but null"
SET = "<set>"


_STEP = re.compile(r"^(?P<name>[A-Za-z]+)(?:\[(?P<index>\d+|\*)\])?$")
#: the bounds a request condition may put on a number
BOUNDS: dict[str, Any] = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


def lookup(request: dict, path: str) -> Any:
    """The request's value at ``path`` (``TimeoutMs``, ``Topics[0].Name``); None if absent."""
    return next(iter(lookup_all(request, path)))


def lookup_all(request: dict, path: str) -> list[Any]:
    """The request's values at ``path``, where ``[*]`` takes every element of a list
    (``Groups[*].Topics[*].Partitions[*]``); [None] where a step finds nothing."""
    values: list[Any] = [request]
    for step in path.split("."):
        m = _STEP.match(step)
        found: list[Any] = []
        for value in values:
            value = value.get(m.group("name")) if m and isinstance(value, dict) else None
            index = m.group("index") if m else None
            if index == "*":
                found.extend(value if isinstance(value, list) else [])
            elif index is not None:
                i = int(index)
                found.append(value[i] if isinstance(value, list) and i < len(value) else None)
            else:
                found.append(value)
        values = found
    return values or [None]


def _meets(value: Any, wanted: Any) -> bool:
    if wanted == SET:
        return value is not None
    if isinstance(wanted, dict):
        ((op, bound),) = wanted.items()
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        return number and BOUNDS[op](value, bound)
    return (str(value) if isinstance(value, uuid.UUID) else value) == wanted


@dataclass(frozen=True)
class VersionRule:
    id: str
    apis: tuple[str, ...]
    reason: str
    when: str = "*"
    #: "first" or "second": only where that target alone advertises the API ("": any difference)
    only: str = ""

    def covers(self, api: str, other: str, alone: str) -> bool:
        return (
            ("*" in self.apis or api in self.apis)
            and fnmatch.fnmatchcase(other, self.when)
            and self.only in ("", alone)
        )


@dataclass(frozen=True)
class RefusalRule:
    """A refusal of every entry of a request with ``error`` by the second target (``when``)."""

    id: str
    apis: tuple[str, ...]
    error: int
    reason: str
    when: str = "*"

    def names(self, api: str, codes: set[int | None]) -> bool:
        """Whether an answer of ``api`` whose entries carry ``codes`` (None: an entry without
        one) is this refusal."""
        return ("*" in self.apis or api in self.apis) and codes == {self.error}


@dataclass(frozen=True)
class ModelRule:
    """Model tests (``tests``: patterns over node ids) the second target cannot run at all."""

    id: str
    when: str
    tests: tuple[str, ...]
    reason: str

    def covers(self, test: str, other: str) -> bool:
        if not fnmatch.fnmatchcase(other, self.when):
            return False
        return any(fnmatch.fnmatchcase(test, t) for t in self.tests)


@dataclass(frozen=True)
class Mask:
    fields: tuple[FieldRule, ...]
    versions: tuple[VersionRule, ...]
    refusals: tuple[RefusalRule, ...] = ()
    models: tuple[ModelRule, ...] = ()

    def field_rules(
        self, api: str, version: int, path: str, other: str, request: dict, source: str = ""
    ) -> list[FieldRule]:
        return [r for r in self.fields if r.covers(api, version, path, other, request, source)]

    def version_rule(self, api: str, other: str, alone: str = "") -> VersionRule | None:
        """The entry explaining a range difference (``alone``: "first" or "second" when only
        that target advertises the API)."""
        return next((r for r in self.versions if r.covers(api, other, alone)), None)

    def entries(self) -> list[dict[str, Any]]:
        """Every entry as the report shows it."""
        out: list[dict[str, Any]] = []
        for r in self.fields:
            item: dict[str, Any] = {"id": r.id, "apis": list(r.apis), "paths": list(r.paths)}
            item["compare"] = r.compare
            if r.versions is not None:
                item["versions"] = str(r.versions)
            if r.when != "*":
                item["when"] = r.when
            if r.pairs:
                item["pairs"] = [list(p) for p in r.pairs]
            if r.request:
                item["request"] = dict(r.request)
            if r.source:
                item["source"] = r.source
            out.append(item | {"reason": r.reason})
        for v in self.versions:
            item = {"id": v.id, "apis": list(v.apis), "when": v.when}
            out.append(item | ({"only": v.only} if v.only else {}) | {"reason": v.reason})
        for refusal in self.refusals:
            out.append(
                {"id": refusal.id, "apis": list(refusal.apis), "when": refusal.when}
                | {"error": refusal.error, "reason": refusal.reason}
            )
        for m in self.models:
            out.append({"id": m.id, "tests": list(m.tests), "when": m.when, "reason": m.reason})
        return out

    def model_rule(self, test: str, other: str) -> ModelRule | None:
        """The entry saying the second target ``other`` cannot run the model ``test``."""
        return next((m for m in self.models if m.covers(test, other)), None)

    def refusal_rules(self, other: str) -> list[RefusalRule]:
        """The refusals the second target ``other`` may answer with."""
        return [r for r in self.refusals if fnmatch.fnmatchcase(other, r.when)]


def _versions(text: str | None, where: str) -> Versions | None:
    if text is None:
        return None
    try:
        v = Versions.parse(text)
    except ValueError as e:
        raise MaskError(f"{where}: {e}") from None
    return Versions(v.lo, min(v.hi, MAX_VERSION))


def _hashable(v: Any) -> Any:
    return tuple(_hashable(x) for x in v) if isinstance(v, list) else v


def _entries(data: dict, kind: str, name: str, ids: set[str]):
    """Each entry of the list ``kind`` as (where, id, reason, raw): every entry needs an id of
    its own (among all lists) and a reason."""
    for i, raw in enumerate(data.get(kind, [])):
        where = f"{name}: {kind}[{i}] ({raw.get('id', '?')})"
        rid, reason = raw.get("id"), raw.get("reason", "")
        if not rid or rid in ids:
            raise MaskError(f"{where}: every entry needs an id of its own")
        if not str(reason).strip():
            raise MaskError(f"{where}: an entry without a reason masks silently")
        ids.add(rid)
        yield where, rid, reason, raw


def load(path: Path = MASK_FILE) -> Mask:
    """The mask in ``path``; MaskError names the first malformed entry."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise MaskError(f"{path}: {e}") from None
    fields, versions, refusals, models = [], [], [], []
    ids: set[str] = set()
    for where, rid, reason, raw in _entries(data, "fields", path.name, ids):
        compare = raw.get("compare")
        if compare not in COMPARES:
            raise MaskError(f"{where}: compare must be one of {', '.join(COMPARES)}")
        pairs = tuple(tuple(_hashable(x) for x in p) for p in raw.get("pairs", []))
        if (compare == "pairs") != bool(pairs):
            raise MaskError(f"{where}: pairs go with compare 'pairs' and only with it")
        apis = raw.get("apis", ["*"])
        for key, wanted in raw.get("request", {}).items():
            if isinstance(wanted, dict) and (
                len(wanted) != 1
                or not set(wanted) <= set(BOUNDS)
                or not all(isinstance(b, (int, float)) for b in wanted.values())
            ):
                raise MaskError(f"{where}: request {key}: a bound is one of {', '.join(BOUNDS)}")
        fields.append(
            FieldRule(
                rid,
                tuple(apis),
                (raw["path"],) if isinstance(raw["path"], str) else tuple(raw["path"]),
                compare,
                reason,
                _versions(raw.get("versions"), where),
                raw.get("when", "*"),
                pairs,
                tuple(raw.get("request", {}).items()),
                raw.get("source", ""),
            )
        )
    for where, rid, reason, raw in _entries(data, "versions", path.name, ids):
        only = raw.get("only", "")
        if only not in ("", "first", "second"):
            raise MaskError(f"{where}: only must be first or second")
        versions.append(VersionRule(rid, tuple(raw["apis"]), reason, raw.get("when", "*"), only))
    for where, rid, reason, raw in _entries(data, "refusals", path.name, ids):
        error = raw.get("error")
        if not isinstance(error, int) or error == 0:
            raise MaskError(f"{where}: error must be an error code (not 0)")
        refusals.append(RefusalRule(rid, tuple(raw["apis"]), error, reason, raw.get("when", "*")))
    for where, rid, reason, raw in _entries(data, "models", path.name, ids):
        tests = raw.get("tests")
        if not tests or not isinstance(tests, list):
            raise MaskError(f"{where}: tests must list the model tests it names")
        models.append(ModelRule(rid, raw.get("when", "*"), tuple(tests), reason))
    return Mask(tuple(fields), tuple(versions), tuple(refusals), tuple(models))
