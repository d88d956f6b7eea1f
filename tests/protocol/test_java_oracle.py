"""Differential test of the codec against Kafka's own generated message classes.

For every (api, version, kind) of the project's specs, and for both headers, hypothesis values
encoded by our codec are read by Java and written again: the bytes must be identical, and our
codec must decode Java's bytes back to the value. Unknown tagged fields in flexible versions
come from the strategies, and Java keeps and re-writes them as raw tagged fields.

Each version is judged by the classes of the newest release that defines it, as the facts test
judges the specs: kafka-clients 4.4.0 (from the Kafka cache) for what 4.4.0 defines, 3.9 for the
versions 4.0 removed. Without 4.4.0 cached, 3.9 judges the stable versions it has and the rest
skip naming the command that fetches 4.4.0.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

import pytest
from hypothesis import given

from conformance.protocol import Codec, EncodeError, MessageSpec, SpecSet
from conformance.protocol.framing import request_header_version, response_header_version
from conformance.strategies.messages import message_values
from tests.kafka_jars import LATEST
from tests.oracle.java_oracle import STATS, JavaOracle, OracleError

pytestmark = pytest.mark.java

#: RequestHeader / ResponseHeader travel to the oracle under these pseudo api keys.
HEADER_KEYS = {"request": -1, "response": -2}
UNKNOWN = "_unknown_tagged_fields"


class Pair(NamedTuple):
    api_key: int
    version: int
    kind: str
    name: str


def _pairs() -> list[Pair]:
    specs = SpecSet.load()
    out = []
    for spec in sorted(specs, key=lambda s: (s.api_key is None, s.api_key or 0, s.type, s.name)):
        if spec.type in ("request", "response"):
            out += [Pair(spec.api_key, v, spec.type, spec.name) for v in spec.valid_versions]
    for kind, name in (("request", "RequestHeader"), ("response", "ResponseHeader")):
        out += [Pair(HEADER_KEYS[kind], v, kind, name) for v in specs.by_name[name].valid_versions]
    return out


PAIRS = _pairs()
API_KEYS = sorted({p.api_key for p in PAIRS if p.api_key >= 0})


@pytest.fixture(scope="module")
def codec() -> Codec:
    return Codec.from_specs()


def _spec(codec: Codec, pair: Pair) -> MessageSpec:
    if pair.api_key < 0:
        return codec.header(pair.kind)
    return codec.message(pair.api_key, pair.kind)


def _encode(codec: Codec, pair: Pair, value: dict) -> bytes:
    if pair.api_key < 0:
        return codec.compiled_header(pair.kind, pair.version).encode(value)
    return codec.encode(pair.api_key, pair.version, pair.kind, value)


def _decode(codec: Codec, pair: Pair, raw: bytes) -> dict:
    if pair.api_key < 0:
        return codec.compiled_header(pair.kind, pair.version).decode(raw)
    return codec.decode(pair.api_key, pair.version, pair.kind, raw)


def mismatch(ours: bytes, theirs: bytes) -> str:
    """Where two frames part, with both byte strings around that offset."""
    at = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), None)
    at = min(len(ours), len(theirs)) if at is None else at
    lo = max(0, at - 16)
    return (
        f"ours {len(ours)} bytes, Java's {len(theirs)} bytes, first difference at offset {at}:\n"
        f"  ours  [{lo}:] {ours[lo : at + 32].hex(' ')}\n"
        f"  Java's[{lo}:] {theirs[lo : at + 32].hex(' ')}"
    )


def _has_unknown_tags(value: object) -> bool:
    if isinstance(value, dict):
        return UNKNOWN in value or any(_has_unknown_tags(v) for v in value.values())
    return isinstance(value, list) and any(_has_unknown_tags(v) for v in value)


def _ids(pair: Pair) -> str:
    return f"{pair.name}-v{pair.version}"


def _latest(request: pytest.FixtureRequest) -> tuple[JavaOracle | None, str]:
    """The 4.4.0 oracle, or None and the reason it is not there."""
    try:
        return request.getfixturevalue("java_oracle_latest"), ""
    except pytest.skip.Exception as skipped:
        return None, str(skipped)


def oracle_for(request: pytest.FixtureRequest, pair: Pair) -> JavaOracle:
    """The classes of the newest release that define the pair's version (see the docstring)."""
    latest, why = _latest(request)
    if latest is not None and latest.defines(pair.api_key, pair.version):
        return latest
    old: JavaOracle = request.getfixturevalue("java_oracle")
    if old.defines(pair.api_key, pair.version):
        # a version 3.9 had as unstable may have changed by the time it became stable
        if latest is not None or pair.api_key < 0 or pair.version <= old.stable_max(pair.api_key):
            return old
    if latest is None:
        pytest.skip(why)
    pytest.fail(f"neither kafka-clients 3.9 nor {LATEST} defines {pair.name} v{pair.version}")


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_java_rewrites_our_bytes_identically(
    request: pytest.FixtureRequest, codec: Codec, pair: Pair
) -> None:
    spec = _spec(codec, pair)
    java_oracle = oracle_for(request, pair)

    @given(message_values(spec, pair.version))
    def check(value: dict) -> None:
        ours = _encode(codec, pair, value)
        try:
            theirs = java_oracle.reserialise(pair.api_key, pair.version, pair.kind, ours)
        except OracleError as e:
            pytest.fail(
                f"Java cannot read our {pair.name} v{pair.version}: {e.reason}\n"
                f"  ours: {ours.hex(' ')}"
            )
        assert theirs == ours, mismatch(ours, theirs)
        assert _decode(codec, pair, theirs) == value
        STATS["frames"] += 1
        STATS["frames with unknown tagged fields"] += _has_unknown_tags(value)

    check()
    STATS["pairs"] += 1


@pytest.mark.parametrize("pair", PAIRS, ids=_ids)
def test_javas_default_message_is_our_default(
    request: pytest.FixtureRequest, codec: Codec, pair: Pair
) -> None:
    """The other direction: a message Java builds with nothing set reads as all defaults."""
    spec = _spec(codec, pair)
    java_oracle = oracle_for(request, pair)
    defaults = {f.name: f.default_value() for f in spec.fields}
    try:
        theirs = java_oracle.default(pair.api_key, pair.version, pair.kind)
    except OracleError as e:
        try:
            ours = _encode(codec, pair, defaults)
        except EncodeError:
            STATS["defaults refused by both"] += 1
            return
        pytest.fail(
            f"Java refuses its default {pair.name} v{pair.version} ({e.reason}), ours: {ours.hex()}"
        )
    assert _decode(codec, pair, theirs) == defaults
    ours = _encode(codec, pair, defaults)
    assert ours == theirs, mismatch(ours, theirs)
    STATS["default messages"] += 1


@pytest.mark.parametrize("api_key", API_KEYS)
def test_versions_and_header_versions_agree_with_java(
    request: pytest.FixtureRequest, java_oracle: JavaOracle, codec: Codec, api_key: int
) -> None:
    """Our version ranges are the union of Kafka 3.9's and 4.4.0's, and the header version
    rules are Java's, each version's by the release that judges it."""
    latest, why = _latest(request)
    if latest is None:
        pytest.skip(why)
    request_spec = codec.message(api_key, "request")
    response_spec = codec.message(api_key, "response")
    assert request_spec.valid_versions == response_spec.valid_versions
    known = sorted(
        v
        for v in range(0, request_spec.valid_versions.hi + 2)
        if java_oracle.defines(api_key, v) or latest.defines(api_key, v)
    )
    assert known == list(request_spec.valid_versions)
    for v in request_spec.valid_versions:
        ours = (
            request_header_version(codec, api_key, v),
            response_header_version(codec, api_key, v),
        )
        judge = latest if latest.defines(api_key, v) else java_oracle
        assert judge.header_versions(api_key, v) == ours, f"{request_spec.name} v{v}"


def test_every_api_in_scope_is_covered() -> None:
    """The pair list is the whole of specs/messages: Kafka 3.9's and 4.4's 95 APIs, both kinds,
    both headers."""
    assert len(API_KEYS) == 95
    kinds = Counter((p.api_key, p.kind) for p in PAIRS)
    assert {k for k, _ in kinds} == {*API_KEYS, -1, -2}
    assert all((k, kind) in kinds for k in API_KEYS for kind in ("request", "response"))
