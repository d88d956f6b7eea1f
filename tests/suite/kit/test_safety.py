"""The rules that keep generated requests harmless: every admin mutation the suite generates
only validates, whatever the spec calls the flag (CreateTopics spells it ``validateOnly``)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from conformance.protocol import Codec
from conformance.strategies.messages import message_values
from conformance.suite.kit.safety import (
    ACL_ENUMS,
    NO_PRODUCER,
    NO_TOPIC,
    PREFIX,
    inert_request,
    make_safe,
)

CODEC = Codec.from_specs()

#: (request spec, version, the flag's name) wherever a request has a validate-only flag
VALIDATING = [
    pytest.param(m, v, f.name, id=f"{m.name}-v{v}")
    for m in CODEC.specs
    if m.type == "request"
    for f in m.struct.fields
    if f.name.lower() == "validateonly"
    for v in m.valid_versions
    if v in f.versions
]


def test_every_admin_mutation_with_the_flag_is_covered() -> None:
    names = {p.values[0].name for p in VALIDATING}
    assert {"CreateTopicsRequest", "CreatePartitionsRequest", "AlterConfigsRequest"} <= names


@pytest.mark.parametrize(("spec", "version", "flag"), VALIDATING)
def test_generated_mutations_only_validate(spec, version, flag) -> None:
    @settings(max_examples=5)
    @given(message_values(spec, version))
    def check(value: dict) -> None:
        assert make_safe(spec, version, value)[flag] is True

    check()


ACL_REQUESTS = [
    pytest.param(CODEC.message(key, "request"), v, id=f"{name}-v{v}")
    for key, name in ((29, "DescribeAcls"), (30, "CreateAcls"), (31, "DeleteAcls"))
    for v in CODEC.message(key, "request").valid_versions
]


def _acl_items(key: int, body: dict) -> list[dict]:
    return {29: [body], 30: body.get("Creations") or [], 31: body.get("Filters") or []}[key]


@pytest.mark.parametrize(("spec", "version"), ACL_REQUESTS)
def test_acl_requests_never_name_unknown(spec, version) -> None:
    """Kafka refuses UNKNOWN (0) resource types, operations and permission types while parsing
    (it closes the connection), so a generated ACL request never carries one; other codes,
    undefined ones included, are left as drawn (their answers are error codes)."""

    @settings(max_examples=20)
    @given(message_values(spec, version))
    def check(value: dict) -> None:
        safe = make_safe(spec, version, value)
        drawn = _acl_items(spec.api_key, value)
        for i, item in enumerate(_acl_items(spec.api_key, safe)):
            for name in ACL_ENUMS:
                if name in item:
                    assert item[name] != 0, (name, item)
                    if drawn[i].get(name) != 0:
                        assert item[name] == drawn[i][name], (name, item)

    check()


def test_acl_request_with_every_enum_unknown_is_made_valid() -> None:
    spec = CODEC.message(30, "request")
    creation = {
        "ResourceType": 0,
        "ResourceName": "x",
        "ResourcePatternType": 0,
        "Principal": "User:x",
        "Host": "*",
        "Operation": 0,
        "PermissionType": 0,
    }
    safe = make_safe(spec, 3, {"Creations": [creation]})["Creations"][0]
    assert (safe["ResourceType"], safe["Operation"], safe["PermissionType"]) == (1, 1, 1)
    assert safe["ResourcePatternType"] == 3  # literal


def test_write_txn_markers_inert_request_names_only_a_missing_suite_topic() -> None:
    """One marker, so the answer carries an error code to judge (PROTOCOL.R4), for a producer
    id nobody has on a suite topic that no test creates."""
    for version in CODEC.message(27, "request").valid_versions:
        body = inert_request(CODEC, 27, version)
        (marker,) = body["Markers"]
        assert marker["ProducerId"] == NO_PRODUCER
        assert [t["Name"] for t in marker["Topics"]] == [NO_TOPIC]
        assert NO_TOPIC.startswith(PREFIX)
        CODEC.encode(27, version, "request", body)


def test_drawn_names_are_each_tests_own() -> None:
    """Hypothesis draws '' in every test: salted by the test's id, the group ids of two tests
    differ (on tansu one test's JoinGroup without protocols broke the other's group), while
    within one test a name is still one name (map keys stay unique, a group is rejoined)."""
    spec = CODEC.message(14, "request")  # SyncGroup
    body = {"GroupId": "", "GenerationId": 1, "MemberId": "m", "Assignments": []}
    a1, a2 = (make_safe(spec, 3, body, salt="sync-group/v3")["GroupId"] for _ in range(2))
    b = make_safe(spec, 3, body, salt="join-group/v3")["GroupId"]
    assert a1 == a2 and a1 != b and a1.startswith(PREFIX) and b.startswith(PREFIX)
    assert make_safe(spec, 3, body)["GroupId"] == PREFIX + "da39a3ee5e6b"  # unsalted: sha1('')
