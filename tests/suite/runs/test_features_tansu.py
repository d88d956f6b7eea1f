"""The broker-registration, KIP-536 and KIP-590 feature tests against tansu (one broker, no
controller listener, no ZooKeeper, no start time): nothing it does not offer is FAIL. KIP-536 is
PROPOSAL_ABSENT, the controller-listener and ZooKeeper tests SKIP naming what is missing, an API
it does not advertise is UNSUPPORTED, KIP-590.R3 is SKIP (one node forwards nothing); what it
does serve is checked, and passes. (Its IncrementalAlterConfigs of an unknown topic answering
NONE is a configuration failure, CONFIGS.R12: ``test_groups_tansu.py``.)"""

from __future__ import annotations

# "broker-registration" is also the BrokerRegistration API's name, which the PROTOCOL tests of that
# API carry: select the three features' own tests only (against the reference, the shared runs of
# early.SHARED give their verdicts: test_features_reference)
SELECT = "(BROKER-REGISTRATION or KIP-536 or KIP-590) and not PROTOCOL"


def test_tansu_features_report_what_it_lacks(cli) -> None:
    proc, run = cli("--target", "tansu", "--seed", "7", "--select", SELECT)
    assert run is not None, proc.stderr[-2000:]
    by = {(r["test_id"], r["requirement_id"]): r for r in run.records}
    assert not [k for k, r in by.items() if r["verdict"] == "ERROR"]
    assert not [k for k, r in by.items() if r["verdict"] == "FAIL"]
    # one node is its own controller: nothing is forwarded, so the forwarding broker's answer
    # (KIP-590.R3) cannot be judged
    for test in ("kip-590/create-topics/inner-error-passed-back", "kip-590/routing/state-machine"):
        skip = by[(test, "KIP-590.R3")]
        assert skip["verdict"] == "SKIP" and "nothing is forwarded" in skip["message"], skip
    for (test, req), r in by.items():
        if req.startswith("KIP-536."):
            assert r["verdict"] == "PROPOSAL_ABSENT" and "tag 536" in r["message"], r
        elif test.startswith("broker-registration/lifecycle/") or test.endswith("/served"):
            assert r["verdict"] == "SKIP" and "--controller-bootstrap" in r["message"], r
        elif "/zookeeper/" in test:
            assert r["verdict"] == "SKIP" and "--zookeeper" in r["message"], r
    assert by[("kip-590/create-partitions/each-broker", "KIP-590.R1")]["verdict"] == "UNSUPPORTED"
    skip = by[("kip-590/envelope/controller-listener/client-refused", "KIP-590.R2")]
    assert skip["verdict"] == "SKIP" and "client principal" in skip["message"]
    standby = by[("kip-590/envelope/standby/not-controller", "KIP-590.R5")]
    assert standby["verdict"] == "SKIP" and "no standby controller" in standby["message"]
    # what tansu serves is checked, not skipped
    for test in (
        "broker-registration/client-listener/not-served",
        "broker-registration/online-brokers-serve-clients",
        "kip-590/envelope/client-listener/refused",
        "kip-590/create-topics/each-broker",
    ):
        assert {r["verdict"] for (t, _), r in by.items() if t == test} == {"PASS"}, test
    assert proc.returncode == 0  # no MUST failed
