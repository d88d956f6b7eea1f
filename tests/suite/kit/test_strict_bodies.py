"""The suite's own requests are encoded strictly: a key the spec does not have in a body the
suite builds is an error naming the key, the message and the version (an ERROR verdict, the
suite's fault), never a request sent without it. Users of the codec keep the lenient form."""

from __future__ import annotations

import pytest

from conformance.protocol import ApiKey, Codec
from conformance.protocol.keys import UnknownKeyError
from conformance.results.verdicts import Verdict, verdict_for
from conformance.suite.kit.harness import Harness
from conformance.targets.reference import ReferenceTarget


@pytest.fixture
def harness():
    h = Harness(ReferenceTarget(), Codec.from_specs(), examples=1, seed=1)
    yield h
    h.close()


def test_a_misspelt_key_in_a_suite_body_fails_loudly(harness: Harness) -> None:
    topic = {"Name": "t", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": []}
    body = {"Topics": [dict(topic, Configs=[])], "timeoutMs": 1000, "ValidateOnly": True}
    with pytest.raises(UnknownKeyError) as info:
        harness.frame(ApiKey.CREATE_TOPICS, 7, 1, body)
    text = str(info.value)
    assert "'ValidateOnly'" in text and "CreateTopicsRequest v7" in text, text
    # an ERROR (the suite broke), not a FAIL blamed on the target
    assert verdict_for("failed", "MUST", exc=info.value) is Verdict.ERROR
    # spelt as the spec spells it, the same body is encoded
    body["validateOnly"] = body.pop("ValidateOnly")
    assert harness.frame(ApiKey.CREATE_TOPICS, 7, 1, body)


def test_the_codec_stays_lenient_for_its_users(harness: Harness) -> None:
    lenient = Codec.from_specs()
    assert not lenient.strict_keys and harness.codec.strict_keys
    assert lenient.encode(ApiKey.METADATA, 1, "request", {"Topics": [], "Bogus": 1})
