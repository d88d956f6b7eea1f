"""The request stream both targets get: the spec-derived tests' requests, drawn once.

For every (API, version) the first target advertises and the specs know, in key and version
order: a cluster-action API's one inert request (``safety.inert_request``), otherwise the edge
pass (``edges.edge_requests``) then ``examples`` hypothesis examples drawn at the run's seed under
the suite's profile and made harmless (``safety.make_safe``) -- what the spec-derived tests send.

The stream is drawn before anything is sent (no value depends on an answer), and its suite names
are made alike: every name of the suite's namespace is renamed, in order of first appearance,
to ``kc-suite-d<n>``. The edge pass draws fresh random names, so without this two runs of the same
seed would differ by name, and a name decides where a group's coordinator is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from conformance.protocol import ApiKey, Codec
from conformance.protocol.errors import UnknownMessageError
from conformance.protocol.spec import StructSpec
from conformance.protocol.versions import Versions
from conformance.strategies.messages import message_values
from conformance.suite.kit.edges import edge_requests
from conformance.suite.kit.safety import CLUSTER_ACTION, PREFIX, inert_request, make_safe


@dataclass(frozen=True)
class Request:
    """One request of the stream: its place, what it is, and the body sent to both targets."""

    index: int
    api_key: int
    version: int
    label: str
    body: dict


@dataclass(frozen=True)
class Selection:
    """An API and the versions of it to send (all the first target advertises by default)."""

    api_key: int
    versions: Versions | None = None


_SELECT = re.compile(r"^(?P<api>[A-Za-z]+|\d+)(?::(?P<versions>[0-9+-]+))?$")


def parse_selection(text: str) -> Selection:
    """``Metadata``, ``3`` or ``Metadata:9-12`` to a Selection (ValueError when unknown)."""
    m = _SELECT.match(text.strip())
    if m is None:
        raise ValueError(f"cannot read API selection {text!r}: expected NAME or NAME:VERSIONS")
    api = m.group("api")
    by_name = {k.api_name.lower(): k for k in ApiKey}
    key = {int(k): k for k in ApiKey}.get(int(api)) if api.isdigit() else by_name.get(api.lower())
    if key is None:
        raise ValueError(f"unknown API {api!r}")
    versions = Versions.parse(m.group("versions")) if m.group("versions") else None
    return Selection(int(key), versions)


def draw(strategy, examples: int, seed: int | None) -> list:
    """``examples`` values of ``strategy`` as the suite's property tests draw them at ``seed``."""
    from hypothesis import given

    from conformance.suite.kit.profile import seeded, suite_settings

    values: list = []

    @suite_settings(examples)
    @given(strategy)
    def collect(value) -> None:
        values.append(value)

    seeded(collect, seed)()
    return values


def pairs(
    codec: Codec, advertised: dict[int, tuple[int, int]], select: list[Selection] | None = None
) -> list[tuple[int, int]]:
    """The (API key, version) pairs the stream covers, in order."""
    chosen = {s.api_key: s.versions for s in select} if select else None
    out = []
    for key in sorted(advertised):
        if chosen is not None and key not in chosen:
            continue
        try:
            spec = codec.message(key, "request")
        except UnknownMessageError:
            continue
        lo, hi = advertised[key]
        for version in range(lo, hi + 1):
            wanted = chosen.get(key) if chosen else None
            if version in spec.valid_versions and (wanted is None or version in wanted):
                out.append((key, version))
    return out


def build(
    codec: Codec,
    advertised: dict[int, tuple[int, int]],
    seed: int | None,
    examples: int,
    select: list[Selection] | None = None,
) -> list[Request]:
    """The whole stream, names made alike."""
    out: list[Request] = []
    for key, version in pairs(codec, advertised, select):
        spec = codec.message(key, "request")
        items: list[tuple[str, dict]]
        if key in CLUSTER_ACTION:
            items = [("inert", inert_request(codec, key, version))]
        else:
            items = [(f"edge: {what}", body) for what, body in edge_requests(codec, key, version)]
            drawn = draw(message_values(spec, version), examples, seed) if examples else []
            items += [
                (f"example {i + 1}", make_safe(spec, version, value))
                for i, value in enumerate(drawn)
            ]
        for label, body in items:
            out.append(Request(len(out), key, version, label, body))
    return alike(codec, out)


def alike(codec: Codec, stream: list[Request]) -> list[Request]:
    """The stream with every suite name renamed by order of first appearance (see above)."""
    names: dict[str, str] = {}

    def rename(text):
        if not isinstance(text, str) or not text.startswith(PREFIX):
            return text
        return names.setdefault(text, f"{PREFIX}d{len(names)}")

    def walk(struct: StructSpec, value: dict) -> dict:
        out = dict(value)
        for f in struct.fields:
            v = out.get(f.name)
            if v is None:
                continue
            if f.is_struct:
                out[f.name] = [walk(f.struct, x) for x in v] if f.is_array else walk(f.struct, v)
            elif f.element_type == "string":
                out[f.name] = [rename(x) for x in v] if f.is_array else rename(v)
        return out

    return [
        Request(
            r.index,
            r.api_key,
            r.version,
            r.label,
            walk(codec.message(r.api_key, "request").struct, r.body),
        )
        for r in stream
    ]
