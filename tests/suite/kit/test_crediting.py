"""A requirement is credited only by a check that ran against the target.

A target that offers too little (the reference behind a proxy whose ApiVersions answer
advertises Metadata v8 only and no DescribeCluster, as a small Kafka-compatible broker may) must
get no PASS for what it gave the suite no way to check: KIP-78.R2 (Metadata v0/v1) and KIP-78.R7
(DescribeCluster), in the dedicated tests and in the cluster-id state machine alike, which then
say why. What it does offer is still checked and PASS, each PASS with the checks that credit it.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from tests.support.faults_advertise import Advertise
from tests.support.proxies import FaultyProxy
from tests.support.runs import verdicts

MACHINE = "kip-78/metadata/cluster-id/state-machine"


def test_a_target_offering_too_little_gets_no_pass_for_what_it_cannot_show(cli, reference) -> None:
    boot = reference.bootstrap[0]
    small = Advertise({ApiKey.METADATA: (8, 8), ApiKey.DESCRIBE_CLUSTER: None})
    with FaultyProxy((boot.host, boot.port), small.response) as proxy:
        proc, run = cli(
            "--bootstrap-server",
            proxy.address,
            "--target-name",
            "small",
            "--seed",
            "7",
            "--select",
            "KIP-78 and not KIP-78.R9",
        )
    assert run is not None, proc.stderr[-2000:]
    got = verdicts(run)
    passed = {rid for (_, rid), v in got.items() if v == "PASS"}
    assert not passed & {"KIP-78.R2", "KIP-78.R7"}, got
    # the state machine could not send DescribeCluster or Metadata v0/v1: it says so
    by_req = {r["requirement_id"]: r for r in run.records if r["test_id"] == MACHINE}
    assert by_req["KIP-78.R7"]["verdict"] == "UNSUPPORTED", by_req["KIP-78.R7"]
    assert "DescribeCluster" in by_req["KIP-78.R7"]["message"]
    assert by_req["KIP-78.R2"]["verdict"] == "UNSUPPORTED", by_req["KIP-78.R2"]
    assert "Metadata" in by_req["KIP-78.R2"]["message"]
    # what it offers is checked, and every PASS names the checks that credit it
    assert by_req["KIP-78.R1"]["verdict"] == "PASS" and by_req["KIP-78.R5"]["verdict"] == "PASS"
    assert got[("kip-78/metadata/v8/cluster-id/present", "KIP-78.R1")] == "PASS"
    for r in run.records:
        if r["verdict"] == "PASS":
            assert r["observed"]["checks"] > 0 and r["observed"]["seen"], r
        else:
            assert r["message"], r
    # the machine's PASS was credited by Metadata v8 answers only
    assert all("version=8" in s for s in by_req["KIP-78.R5"]["observed"]["seen"])
