"""Every message and version of every Kafka release's specs compiles and round-trips.

Many releases ship identical files; each distinct (file content, version) is checked once.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from conformance.protocol import Codec
from conformance.protocol.spec import read_spec_json
from conformance.strategies.messages import message_values
from tests.conftest import kafka_release_dirs


def _distinct_pairs() -> list:
    seen: set[tuple[str, int]] = set()
    params = []
    for release in kafka_release_dirs():
        codec = Codec.from_specs(release, strict=False)
        for spec in codec.specs:
            if spec.type not in ("request", "response"):
                continue
            facts = json.dumps(read_spec_json(Path(spec.path), strict=False), sort_keys=True)
            digest = hashlib.sha1(facts.encode()).hexdigest()
            for v in spec.valid_versions:
                if (digest, v) in seen:
                    continue
                seen.add((digest, v))
                params.append(pytest.param(codec, spec, v, id=f"{release.name}-{spec.name}-v{v}"))
    return params


PAIRS = _distinct_pairs()


def test_corpus_is_present(kafka_specs) -> None:
    assert len(PAIRS) > 1000, f"only {len(PAIRS)} distinct pairs found under {kafka_specs}"


@pytest.mark.corpus
@pytest.mark.parametrize(("codec", "spec", "version"), PAIRS)
def test_corpus_round_trip(codec, spec, version) -> None:
    @settings(max_examples=3)
    @given(message_values(spec, version))
    def check(value: dict) -> None:
        raw = codec.encode(spec.api_key, version, spec.type, value)
        back = codec.decode(spec.api_key, version, spec.type, raw)
        assert back == value
        assert codec.encode(spec.api_key, version, spec.type, back) == raw

    check()
