"""The truth-table page names the released Java clients KIP-42's client tests judged (issue 41):
their rows target ``java V`` patterns, so a client's verdict is explained or listed as
UNEXPLAINED like a broker's, whichever broker ran the tests."""

from __future__ import annotations

from conformance.matrix.explain_kafka import client_label


def test_a_java_client_test_is_labelled_with_its_release() -> None:
    assert client_label("kip-42/client/java:3.0.2/on-acknowledgement") == "java 3.0.2"
    assert client_label("kip-42/client/java:4.4.0/checksum-and-sizes") == "java 4.4.0"


def test_other_tests_and_the_bundled_client_are_not_subjects() -> None:
    assert client_label("kip-42/client/python/on-acknowledgement") is None
    assert client_label("kip-42/broker/produce") is None
    assert client_label("groups/join/inconsistent-protocol-type") is None
