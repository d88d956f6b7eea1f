"""PROTOCOL.R11, R12 and R17 reach what the target offers, whatever it advertises.

The reference runs behind a proxy whose ApiVersions answer offers little: Metadata v0-8 only (no
flexible version), no DescribeCluster, no CreateTopics, and no DescribeGroups, whose requests the
proxy also swallows (a broker that silently drops a real API it does not advertise, leaving the
connection open). Then:

* R11 probes every api key of the specs the target does not advertise, DescribeGroups included,
  and FAILs naming it (against the reference itself it PASSes: the whole-suite test); the APIs
  left out of ApiVersions but still served (DescribeCluster, CreateTopics: the proxy forwards
  them) are no failure, as Apache Kafka serves the telemetry APIs it does not advertise;
* R12 still runs, on the one flexible API left (ApiVersions v3+), and PASSes;
* R17 seeds its records by auto-creation (no CreateTopics) and PASSes.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from tests.support.faults_advertise import Advertise
from tests.support.faults_silence import Swallow
from tests.support.proxies import FaultyProxy
from tests.support.runs import verdicts

SELECT = (
    "protocol/robustness/unknown-api-key or protocol/headers/unknown-tagged-fields-ignored or "
    "protocol/robustness/acknowledged-before or protocol/robustness/acknowledged-kept"
)


def test_r11_r12_r17_reach_a_target_that_offers_little(cli, reference) -> None:
    boot = reference.bootstrap[0]
    small = Advertise(
        {
            ApiKey.METADATA: (0, 8),
            ApiKey.DESCRIBE_CLUSTER: None,
            ApiKey.CREATE_TOPICS: None,
            ApiKey.DESCRIBE_GROUPS: None,
        }
    )
    silence = Swallow({ApiKey.DESCRIBE_GROUPS: None})
    with FaultyProxy((boot.host, boot.port), small.response, silence.request) as proxy:
        proc, run = cli("--bootstrap-server", proxy.address, "--select", SELECT)
    assert run is not None, proc.stderr[-2000:]
    got = verdicts(run)
    records = {(r["test_id"], r["requirement_id"]): r for r in run.records}
    r11 = records[("protocol/robustness/unknown-api-key", "PROTOCOL.R11")]
    assert r11["verdict"] == "FAIL", r11
    assert "DescribeGroups v0: neither answered nor closed" in r11["message"], r11["message"]
    assert silence.swallowed[(ApiKey.DESCRIBE_GROUPS, 0)] == 1
    assert "DescribeCluster" not in r11["message"] and "CreateTopics" not in r11["message"]
    assert any("DescribeCluster v0: served, well-formed" in s for s in r11["observed"]["seen"]), r11
    r12 = records[("protocol/headers/unknown-tagged-fields-ignored", "PROTOCOL.R12")]
    assert r12["verdict"] == "PASS", r12
    assert r12["api_name"] == "ApiVersions" and r12["api_version"] >= 3, r12
    assert any(f"ApiVersions v{r12['api_version']}" in s for s in r12["observed"]["seen"]), r12
    assert got[("protocol/robustness/acknowledged-before", "PROTOCOL.R17")] == "PASS", run.records
    assert got[("protocol/robustness/acknowledged-kept", "PROTOCOL.R17")] == "PASS", run.records
