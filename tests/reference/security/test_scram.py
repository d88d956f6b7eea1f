"""SCRAM credentials as metadata (reference_impl/security/scram.py), in process: Kafka 4.4.0's
rules for an alteration (confirmations/kafka_scram_and_operations.out), the description, a
login with a credential only the metadata holds, the two test-only faults, and the ZooKeeper
store's form of a credential read back as the same record."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from conformance.client.sasl import SCRAM_SHA_256, SCRAM_SHA_512, salted_password
from conformance.protocol import ErrorCode
from reference_impl.controller import zookeeper_store
from reference_impl.metadata.image import MetadataImage
from reference_impl.security import scram
from reference_impl.security.sasl import Credentials, ScramServer

SHA256, SHA512 = 1, 2


def upsert(name: str, mechanism: int = SHA256, iterations: int = 4096, password: str = "pw"):
    salt = os.urandom(16)
    mech = {SHA256: SCRAM_SHA_256, SHA512: SCRAM_SHA_512}.get(mechanism, SCRAM_SHA_256)
    return {
        "Name": name,
        "Mechanism": mechanism,
        "Iterations": iterations,
        "Salt": salt,
        "SaltedPassword": salted_password(mech, password, salt, iterations),
    }


def image_with(*records: dict) -> MetadataImage:
    image = MetadataImage()
    for i, r in enumerate(records):
        image.apply(r, i)
    return image


def codes(results: list[dict]) -> dict[str, int]:
    return {r["User"]: r["ErrorCode"] for r in results}


def test_each_refusal_is_kafkas() -> None:
    held = image_with(*scram.alter({}, {"Deletions": [], "Upsertions": [upsert("u")]})[1]).scram
    cases = [
        ([upsert("a", 0)], [], ErrorCode.UNSUPPORTED_SASL_MECHANISM),
        ([upsert("a", 3)], [], ErrorCode.UNSUPPORTED_SASL_MECHANISM),
        ([upsert("a", SHA256, 4095)], [], ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ([upsert("a", SHA256, 16385)], [], ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ([upsert("a", SHA256, 16384)], [], 0),
        ([upsert("")], [], ErrorCode.UNACCEPTABLE_CREDENTIAL),
        ([upsert("a"), upsert("a", SHA512)], [], ErrorCode.DUPLICATE_RESOURCE),
        # a deletion refused first: the user's later entries are not looked at
        ([upsert("a")], [{"Name": "a", "Mechanism": SHA512}], ErrorCode.RESOURCE_NOT_FOUND),
        ([], [{"Name": "a", "Mechanism": SHA256}], ErrorCode.RESOURCE_NOT_FOUND),
    ]
    for ups, dels, want in cases:
        results, records = scram.alter(held, {"Deletions": dels, "Upsertions": ups})
        name = (dels or ups)[0]["Name"]
        assert codes(results) == {name: want}, (ups, dels, results)
        assert bool(records) == (want == 0)
    # a deletion accepted, then an upsertion of the same user: DUPLICATE_RESOURCE, nothing done
    body = {"Deletions": [{"Name": "u", "Mechanism": SHA256}], "Upsertions": [upsert("u", SHA512)]}
    results, records = scram.alter(held, body)
    assert codes(results) == {"u": ErrorCode.DUPLICATE_RESOURCE} and records == []


def test_the_faults_refuse_nothing_and_keep_deleted_credentials() -> None:
    body = {"Deletions": [], "Upsertions": [upsert("a", SHA256, 4095), upsert("a")]}
    assert codes(scram.alter({}, body, checked=False)[0]) == {"a": 0}
    held = image_with(*scram.alter({}, {"Deletions": [], "Upsertions": [upsert("u")]})[1]).scram
    gone = {"Deletions": [{"Name": "u", "Mechanism": SHA256}], "Upsertions": []}
    assert scram.alter(held, gone)[1] == [
        {"type": "remove_scram", "user": "u", "mechanism": SCRAM_SHA_256}
    ]
    results, records = scram.alter(held, gone, deletes=False)
    assert codes(results) == {"u": 0} and records == []


@given(st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=5))
def test_a_description_names_each_user_once(names: list[str]) -> None:
    held = image_with(*scram.alter({}, {"Deletions": [], "Upsertions": [upsert("a")]})[1]).scram
    results = scram.describe(held, {"admin": 4096}, {"Users": [{"Name": n} for n in names]})
    assert [r["User"] for r in results] == list(dict.fromkeys(names))
    for r in results:
        if names.count(r["User"]) > 1:
            assert r["ErrorCode"] == ErrorCode.DUPLICATE_RESOURCE
        elif r["User"] == "a":
            assert r["CredentialInfos"] == [{"Mechanism": SHA256, "Iterations": 4096}]
        else:
            assert r["ErrorCode"] == ErrorCode.RESOURCE_NOT_FOUND and not r["CredentialInfos"]
    everyone = scram.describe(held, {"admin": 4096}, {"Users": None})
    assert [r["User"] for r in everyone] == ["a", "admin"]
    assert len(everyone[1]["CredentialInfos"]) == 2


def test_a_credential_of_the_metadata_logs_in() -> None:
    """The SCRAM exchange against a credential only the metadata holds (no configured user),
    with scramp's client: the StoredKey and ServerKey derived from the salted password."""
    from scramp import ScramClient

    held = image_with(*scram.alter({}, {"Deletions": [], "Upsertions": [upsert("u")]})[1]).scram
    server = ScramServer(Credentials({}), SCRAM_SHA_256, held)
    client = ScramClient([SCRAM_SHA_256], "u", "pw")
    client.set_server_first(server.step(client.get_client_first().encode()).decode())
    client.set_server_final(server.step(client.get_client_final().encode()).decode())
    assert server.username == "u"


def test_the_zookeeper_form_reads_back_as_the_same_record() -> None:
    records = scram.alter({}, {"Deletions": [], "Upsertions": [upsert("u", SHA512, 8192)]})[1]
    image = image_with(*records)
    config = zookeeper_store._scram_config(image, "u")
    assert list(config) == [SCRAM_SHA_512] and config[SCRAM_SHA_512].endswith(",iterations=8192")
    assert zookeeper_store._scram_record("u", SCRAM_SHA_512, config[SCRAM_SHA_512]) == records[0]
