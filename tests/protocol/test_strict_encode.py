"""Strict encode: a body key the spec does not have is an error naming the key, message and
version, while the lenient default (for other users of the codec) still drops it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.protocol import ApiKey, Codec, EncodeError
from conformance.protocol.keys import UnknownKeyError
from conformance.strategies.messages import message_values

LENIENT = Codec.from_specs()
STRICT = LENIENT.strict()
SPECS = [m for m in LENIENT.specs if m.type in ("request", "response")]


def topics_body(**extra: object) -> dict:
    topic = {"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": []}
    return {"Topics": [dict(topic, Configs=[])], "timeoutMs": 1000, **extra}


def test_a_misspelt_top_level_key_names_key_message_and_version() -> None:
    body = topics_body(ValidateOnly=True)  # the spec's field is validateOnly
    with pytest.raises(UnknownKeyError) as info:
        STRICT.encode(ApiKey.CREATE_TOPICS, 7, "request", body)
    text = str(info.value)
    assert "'ValidateOnly'" in text and "CreateTopicsRequest v7" in text, text
    assert "validateOnly" in text, text  # the fields it has, so the right spelling shows
    assert isinstance(info.value, EncodeError)
    # the lenient form drops it: the request goes out without validateOnly
    assert LENIENT.encode(ApiKey.CREATE_TOPICS, 7, "request", body) == LENIENT.encode(
        ApiKey.CREATE_TOPICS, 7, "request", topics_body()
    )


def test_a_misspelt_nested_key_names_its_path() -> None:
    body = topics_body()
    body["Topics"][0]["Config"] = []
    with pytest.raises(UnknownKeyError) as info:
        STRICT.encode(ApiKey.CREATE_TOPICS, 5, "request", body)
    assert "'Config' in Topics[0]" in str(info.value) and "v5" in str(info.value)


def test_a_field_of_another_version_and_unknown_tags_are_accepted() -> None:
    # validateOnly exists from v1: a body written for a range of versions still serves v0
    body = topics_body(validateOnly=False)
    assert STRICT.encode(ApiKey.CREATE_TOPICS, 0, "request", body) == LENIENT.encode(
        ApiKey.CREATE_TOPICS, 0, "request", body
    )
    tagged = dict(topics_body(), _unknown_tagged_fields={9: b"x"})
    assert STRICT.encode(ApiKey.CREATE_TOPICS, 7, "request", tagged)


def test_strict_shares_the_compiled_units() -> None:
    assert STRICT.strict() is STRICT and not LENIENT.strict_keys
    STRICT.encode(ApiKey.METADATA, 12, "request", {"Topics": None})
    assert LENIENT._compiled is STRICT._compiled


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_spec_derived_body_passes_strict(data) -> None:
    spec = data.draw(st.sampled_from(SPECS))
    version = data.draw(st.sampled_from(list(spec.valid_versions)))
    value = data.draw(message_values(spec, version))
    assert STRICT.encode(spec.api_key, version, spec.type, value) == LENIENT.encode(
        spec.api_key, version, spec.type, value
    )


def test_the_projects_own_request_builders_encode_strictly() -> None:
    """The client's default codec (its producer, consumer and group requests) and every codec
    a hand confirmation makes are strict: d73ba00 found confirmations sending CreateTopics'
    defaults for ``TimeoutMs``/``ValidateOnly`` (the spec spells them ``timeoutMs`` and
    ``validateOnly``), and one more such body was left (kafka_scram_and_operations)."""
    import re
    from pathlib import Path

    from conformance.client.metadata import ClusterMetadata

    assert ClusterMetadata("127.0.0.1:9092").codec.strict_keys
    root = Path(__file__).resolve().parents[2] / "confirmations"
    made = {
        p.name: re.findall(r"Codec\.from_specs\([^)]*\)(\.strict\(\))?", p.read_text())
        for p in sorted(root.glob("*.py"))
    }
    assert sum(len(m) for m in made.values()) >= 10, made  # the scan sees them
    lenient = sorted(name for name, found in made.items() if any(s == "" for s in found))
    assert not lenient, f"confirmations making a lenient codec: {lenient}"
