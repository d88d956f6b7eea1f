"""KIP-78.R9: the suite's own client tells its ClusterResourceListeners the target's cluster id
after the first Metadata response (see ``cluster_resource``)."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.kip42.env import harness_env
from conformance.suite.kip78.cluster_resource import cluster_resource
from conformance.suite.kit import brokers, verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance


@conformance("kip-78/client/cluster-resource-listener", "KIP-78.R9", api=ApiKey.METADATA)
def test_cluster_resource_listener(harness: Harness) -> None:
    env = harness_env(harness)
    version = brokers.metadata_version(harness, "2+")  # a malformed v12: v11 (issue 42)
    body = {"Topics": [], "AllowAutoTopicCreation": False}
    resp = verify.expect_response(harness.connect(), ApiKey.METADATA, version, body)
    harness.call(cluster_resource(env, resp.body["ClusterId"]))
