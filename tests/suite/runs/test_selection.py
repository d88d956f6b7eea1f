"""Selecting tests by test id, requirement id, KIP, API or level (``--select``, and pytest's -k
through the keywords the plugin adds); run with --collect-only, so no target is started."""

from __future__ import annotations

import pytest

from tests.support.runs import collect


def test_by_requirement_id() -> None:
    code, ids, _ = collect("--select", "KIP-78.R3")
    assert code == 0 and ids == ["conformance/suite/kip78/test_cluster_id.py::test_format"]


def test_by_feature_and_level() -> None:
    code, ids, _ = collect("--select", "KIP-78 and SHOULD")
    assert code == 0 and ids == ["conformance/suite/kip78/test_cluster_id.py::test_base64_uuid"]


def test_by_test_id_prefix_and_component() -> None:
    _, ids, _ = collect("--select", "kip-78/metadata/v2+/cluster-id")
    assert ids and all("kip78/test_cluster_id.py" in i for i in ids)
    _, ids, _ = collect("--select", "spec and describe-cluster")
    assert sorted(ids) == [
        "conformance/suite/protocol_basics/test_spec_derived.py::test_valid_requests_are_answered[describe-cluster/v0]",
        "conformance/suite/protocol_basics/test_spec_derived.py::test_valid_requests_are_answered[describe-cluster/v1]",
        "conformance/suite/protocol_basics/test_spec_derived.py::test_valid_requests_are_answered[describe-cluster/v2]",
    ]  # v2: Kafka 4.x


def test_by_api_name() -> None:
    _, ids, _ = collect("--select", "api:DescribeCluster and KIP-78 and not spec and not versions")
    assert sorted(ids) == [
        "conformance/suite/kip78/test_cluster_id.py::test_describe_cluster_agrees",
        "conformance/suite/kip78/test_cluster_id_model.py::test_cluster_id_state_machine",
    ]
    _, ids, _ = collect("--select", "api:DescribeCluster and KIP-536")
    assert ids == ["conformance/suite/kip536/test_start_time.py::test_describe_cluster_agrees"]


def test_negation_and_everything_else_is_deselected() -> None:
    _, everything, _ = collect()
    _, no_protocol, _ = collect("--select", "not PROTOCOL")
    assert no_protocol and len(no_protocol) < len(everything)
    assert not any("test_spec_derived" in i or "test_robustness" in i for i in no_protocol)


def test_pytest_k_matches_requirement_ids_too() -> None:
    _, ids, _ = collect("-k", "KIP-78.R3")
    assert ids == ["conformance/suite/kip78/test_cluster_id.py::test_format"]


def test_a_malformed_expression_is_a_usage_error() -> None:
    code, _, out = collect("--select", "KIP-78 and (")
    assert code == pytest.ExitCode.USAGE_ERROR and "--select" in out


def test_a_selection_matching_nothing_collects_nothing() -> None:
    code, ids, _ = collect("--select", "no-such-thing")
    assert ids == [] and code == pytest.ExitCode.NO_TESTS_COLLECTED
