"""The edge pass: documented special values and shapes, sent for every (API, version) on every
run, before the random examples, so that verdicts on them never depend on the seed.

From a valid body (``conformance.suite.kit.bodies``: one element in each list, fresh suite names)
the
spec gives the shapes: every field nullable in the version sent null, every list sent empty (the
top level and one level down), each variant on its own. :data:`SPECIAL` adds the values Kafka
gives a meaning to (special timestamps, "use the broker's default"), each with the versions that
define it and its basis. Every variant then goes through ``safety.make_safe``, so an edge never
widens what a request may touch; :data:`NEVER_NULL` lists the nulls that would mean "every
partition of the cluster" for a mutating API, which are not sent. Each edge uses suite names of its
own, so no edge meets a group or topic an earlier one left (an empty protocol list on a new group
is not the same request as on a group another edge joined).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from conformance.protocol import ApiKey, Codec
from conformance.protocol.spec import StructSpec
from conformance.protocol.versions import Versions
from conformance.suite.kit.bodies import valid_body
from conformance.suite.kit.safety import CLUSTER_ACTION, PREFIX, fresh_name, make_safe


@dataclass(frozen=True)
class Special:
    value: Any
    versions: str
    basis: str


#: (api key, field name) -> values with a documented meaning, wherever the field occurs
SPECIAL: dict[tuple[int, str], tuple[Special, ...]] = {
    (ApiKey.LIST_OFFSETS, "Timestamp"): (
        Special(-1, "0+", "the latest offset (protocol guide: ListOffsets)"),
        Special(-2, "0+", "the earliest offset (protocol guide: ListOffsets)"),
        Special(-3, "7+", "the offset of the largest timestamp (KIP-734)"),
        Special(-4, "8+", "the earliest local offset of a tiered topic (KIP-405)"),
        Special(-5, "9+", "the latest tiered offset (KIP-1005)"),
    ),
    (ApiKey.LIST_OFFSETS, "IsolationLevel"): (
        Special(1, "2+", "read committed: up to the last stable offset (KIP-98)"),
    ),
    (ApiKey.FETCH, "IsolationLevel"): (
        Special(1, "4+", "read committed: up to the last stable offset (KIP-98)"),
    ),
    (ApiKey.CREATE_TOPICS, "NumPartitions"): (
        Special(-1, "4+", "the broker's default partition count (KIP-464)"),
    ),
    (ApiKey.CREATE_TOPICS, "ReplicationFactor"): (
        Special(-1, "4+", "the broker's default replication factor (KIP-464)"),
    ),
    (ApiKey.OFFSET_COMMIT, "GenerationIdOrMemberEpoch"): (
        Special(-1, "1+", "a commit from outside any generation (simple consumer)"),
    ),
    (ApiKey.OFFSET_COMMIT, "RetentionTimeMs"): (
        Special(-1, "2-4", "the broker's offsets retention (KIP-211)"),
    ),
    (ApiKey.FIND_COORDINATOR, "KeyType"): (Special(1, "1+", "a transaction coordinator (KIP-98)"),),
}

#: (api key, field name): a null that would reach beyond the suite's own resources
NEVER_NULL = {(ApiKey.ELECT_LEADERS, "TopicPartitions")}

#: lists emptied at this depth and above (0: the request's own fields)
EMPTY_DEPTH = 1

Path = tuple[tuple[str, int | None], ...]


def edge_requests(codec: Codec, api_key: int, version: int) -> list[tuple[str, dict]]:
    """(what, body) of each edge of ``api_key`` at ``version``: the valid body first."""
    if api_key in CLUSTER_ACTION:
        return []
    spec = codec.message(api_key, "request")
    base = valid_body(codec, api_key, version)
    out: list[tuple[str, dict]] = [("a valid body, one element per list", base)]
    seen = {_key(base)}
    names = sorted({s for s in _strings(base) if s.startswith(PREFIX)})
    for what, path, value in _variants(api_key, spec.struct, base, version, (), 0):
        body = make_safe(spec, version, _set(base, path, value))
        if _key(body) not in seen:
            seen.add(_key(body))
            # each edge on names of its own: none meets a group or topic another edge left
            out.append((what, _renamed(body, {n: fresh_name() for n in names})))
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _renamed(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return names.get(value, value)
    if isinstance(value, dict):
        return {k: _renamed(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, names) for v in value]
    return value


def _variants(api_key: int, struct: StructSpec, value: dict, version: int, path: Path, depth: int):
    for f in struct.fields_in(version):
        here = (*path, (f.name, None))
        where = ".".join(n if i is None else f"{n}[{i}]" for n, i in here)
        current = value.get(f.name)
        if f.nullable_in(version) and (api_key, f.name) not in NEVER_NULL:
            yield f"{where} null", here, None
        if f.is_array and current and depth <= EMPTY_DEPTH:
            yield f"{where} empty", here, []
        for special in SPECIAL.get((api_key, f.name), ()):
            if version in Versions.parse(special.versions):
                yield f"{where} = {special.value} ({special.basis})", here, special.value
        if f.is_struct and current:
            if f.is_array:
                inner = (*path, (f.name, 0))
                yield from _variants(api_key, f.struct, current[0], version, inner, depth + 1)
            else:
                yield from _variants(api_key, f.struct, current, version, here, depth + 1)


def _set(base: dict, path: Path, value: Any) -> dict:
    out = copy.deepcopy(base)
    node: Any = out
    for name, index in path[:-1]:
        node = node[name] if index is None else node[name][index]
    node[path[-1][0]] = value
    return out


def _key(body: dict) -> str:
    return json.dumps(body, sort_keys=True, default=repr)
