"""KIP-78 as a state machine (``specs/models/kip-78-cluster-id.json``): hypothesis mixes Metadata of
every advertised version and DescribeCluster, to every broker, on kept and new connections; the
first id learned must be the one every later answer repeats."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from conformance.client.wire import ConnectionClosed
from conformance.protocol import ApiKey
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.models import (
    Binding,
    ModelRunner,
    load_model,
    run_machine,
    state_machine,
    tour,
)
from conformance.targets.base import Endpoint

REQS = ("KIP-78.R1", "KIP-78.R2", "KIP-78.R5", "KIP-78.R7")
STEPS = 15


class ClusterIdBinding(Binding):
    def __init__(self, harness: Harness, brokers: list[cluster.Broker]) -> None:
        self.harness, self.brokers = harness, brokers
        lo, hi = harness.advertised[ApiKey.METADATA]
        ours = harness.codec.message(ApiKey.METADATA, "request").valid_versions
        versions = [v for v in range(max(lo, ours.lo), min(hi, ours.hi) + 1)]
        self.versions = {
            "versions_with_id": [v for v in versions if v >= 2],
            "versions_without_id": [v for v in versions if v in (0, 1)],
        }
        self._conns: dict[Endpoint, SyncConnection] = {}

    def entity_id(self, index: int) -> str:
        return "cluster"

    def context(self, name: str) -> Any:
        if name == "brokers":
            return list(range(len(self.brokers)))
        return self.versions[name]

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        api_key = request["api_key"]
        version = request.get("version")
        if version is None:
            version = self.harness.pick_version(api_key)
        ep = self.brokers[to].endpoint
        conn = self._conns.get(ep)
        if request.get("fresh") or conn is None or conn.closed:
            conn = self._conns[ep] = self.harness.connect(ep)
        try:
            return conn.request(api_key, version, body).body
        except ConnectionClosed:
            self._conns.pop(ep, None)
            raise


@conformance("kip-78/metadata/cluster-id/state-machine", *REQS, api=ApiKey.METADATA)
def test_cluster_id_state_machine(harness: Harness) -> None:
    harness.require(ApiKey.METADATA)
    model = load_model("kip-78-cluster-id")
    brokers = cluster.brokers(harness)
    if not brokers:
        raise verify.Failed("Metadata lists no broker", *REQS)
    probe = ClusterIdBinding(harness, brokers)
    # an event the target gives no way to send is left out; its requirements then say why
    # (UNSUPPORTED), unless another event's rule checked them
    harness.pick_version(ApiKey.METADATA, "2+")
    events = ["metadata"]
    if harness.can_check(ApiKey.METADATA, "KIP-78.R2", within="0-1"):
        events.append("metadata-before-v2")
    if harness.can_check(ApiKey.DESCRIBE_CLUSTER, "KIP-78.R7"):
        events.append("describe-cluster")

    def strategy(name: str, spec: dict):
        source = spec["from"]
        return st.sampled_from(
            probe.context(source[len("$context.") :]) if isinstance(source, str) else source
        )

    machine = state_machine(
        model,
        lambda: ModelRunner(model, ClusterIdBinding(harness, brokers), allowed=REQS),
        events=events,
        param_strategies=strategy,
    )
    run_machine(harness, machine, steps=STEPS)
    # one fixed walk after the random examples: every rule judged whatever the seed drew (the
    # first Metadata learns the id, R1; later answers must keep it, R5)
    newest = probe.context("versions_with_id")[-1]
    oldest = (probe.context("versions_without_id") or [0])[0]
    walk = [
        ("metadata", 0, {"broker": 0, "version": newest, "fresh": True}),
        ("metadata-before-v2", 0, {"broker": 0, "version": oldest, "fresh": False}),
        ("describe-cluster", 0, {"broker": len(brokers) - 1, "fresh": True}),
        ("metadata", 0, {"broker": len(brokers) - 1, "version": newest, "fresh": False}),
    ]
    runner = ModelRunner(model, ClusterIdBinding(harness, brokers), allowed=REQS)
    tour(runner, [s for s in walk if s[0] in events])
