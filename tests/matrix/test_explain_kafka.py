"""The truth-table page names the released Java clients KIP-42's client tests judged (issue 41):
their rows target ``java V`` patterns, so a client's verdict is explained or listed as
UNEXPLAINED like a broker's, whichever broker ran the tests."""

from __future__ import annotations

from conformance.matrix.explain_kafka import client_label, regression_lines
from conformance.results.truth_table import Row


def test_a_java_client_test_is_labelled_with_its_release() -> None:
    assert client_label("kip-42/client/java:3.0.2/on-acknowledgement") == "java 3.0.2"
    assert client_label("kip-42/client/java:4.4.0/checksum-and-sizes") == "java 4.4.0"


def test_other_tests_and_the_bundled_client_are_not_subjects() -> None:
    assert client_label("kip-42/client/python/on-acknowledgement") is None
    assert client_label("kip-42/broker/produce") is None
    assert client_label("groups/join/inconsistent-protocol-type") is None


def _row(targets: tuple[str, ...]) -> Row:
    return Row(
        "groups", "GROUPS.R13", "groups/membership/*", "FAIL", targets, "kafka-differs", "", ""
    )


def _regression(before: str, after: str) -> dict:
    return {
        "implementation": "apache-kafka-zookeeper",
        "requirement_id": "GROUPS.R13",
        "from_version": before,
        "from_verdict": "PASS",
        "to_version": after,
        "to_verdict": "FAIL",
    }


FAILED = {"requirement_id": "GROUPS.R13", "verdict": "FAIL", "test_id": "groups/membership/x"}
SEEN = [("apache-kafka-zookeeper", "3.0.2", [FAILED]), ("apache-kafka-zookeeper", "2.8.2", [])]


def test_a_regression_explained_for_both_releases_is_a_known_behaviour() -> None:
    """Session 16's publication: 8 of its 10 regressions were the classic coordinator's
    (a row naming every ZooKeeper-mode release) met in one release's run only."""
    lines = regression_lines(
        [_regression("2.8.2", "3.0.2")], SEEN, [_row(("apache-kafka-zookeeper *",))]
    )
    assert lines[-1].endswith(
        "| the same known behaviour: the rows explaining it name apache-kafka-zookeeper 2.8.2 too |"
    ), lines


def test_a_regression_explained_for_the_failing_release_only_is_a_change() -> None:
    lines = regression_lines(
        [_regression("2.8.2", "3.0.2")], SEEN, [_row(("apache-kafka-zookeeper 3.*",))]
    )
    assert "changed between the releases" in lines[-1], lines


def test_a_regression_no_row_explains_is_unexplained() -> None:
    lines = regression_lines([_regression("2.8.2", "3.0.2")], SEEN, [_row(("apache-kafka 3.*",))])
    assert "UNEXPLAINED" in lines[-1], lines
    lines = regression_lines(
        [_regression("2.8.2", "3.1.2")], SEEN, [_row(("apache-kafka-zookeeper *",))]
    )
    assert "UNEXPLAINED" in lines[-1], lines  # no failing record of that release read
