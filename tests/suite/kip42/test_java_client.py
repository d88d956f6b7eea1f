"""KIP-42.R1-R7 judged on a Java kafka-clients release (``run --client java:VERSION``) against
the reference cluster, and the harness's deliberately wrong chains (``KC_JAVA_HARNESS_FAULT``)
failing the requirements they break. One release (``RELEASE``, prefetched by ``./dev.sh
setup``); one reference cluster for the three runs. About 35 s.

Known verdicts of the real client: R7 is UNSUPPORTED (3.x and 4.x have no record checksum); the
others PASS (R2 under its reading: on a send refused before queuing, kafka-clients calls the
user's callback before onAcknowledgement, which the released Javadoc allows with "generally").
"""

from __future__ import annotations

from tests.support.runs import collect, verdicts

RELEASE = "3.9.1"
SELECT = "KIP-42 and not KIP-42.R8"
CLIENT_REQUIREMENTS = {f"KIP-42.R{i}" for i in range(1, 8)}


def judged(cli, reference, monkeypatch, fault: str = "") -> dict[str, dict]:
    """One run of the release's tests; its records by requirement id."""
    if fault:
        monkeypatch.setenv("KC_JAVA_HARNESS_FAULT", fault)
    boot = str(reference.bootstrap[0])
    proc, run = cli("--bootstrap-server", boot, "--client", f"java:{RELEASE}", "--select", SELECT)
    assert run is not None, proc.stderr[-2000:]
    by_req = {r["requirement_id"]: r for r in run.records}
    assert set(by_req) == CLIENT_REQUIREMENTS, verdicts(run)
    assert len(run.records) == len(CLIENT_REQUIREMENTS), "the python client's tests ran too"
    for r in run.records:
        assert r["subject"] == {"kind": "client", "implementation": "java", "version": RELEASE}
        assert r["test_id"].startswith(f"kip-42/client/java:{RELEASE}/")
    return by_req


def test_the_release_is_judged_on_r1_to_r7(cli, reference, monkeypatch) -> None:
    got = judged(cli, reference, monkeypatch)
    verdict = {rid: r["verdict"] for rid, r in got.items()}
    assert verdict == {
        "KIP-42.R1": "PASS",
        "KIP-42.R2": "PASS",
        "KIP-42.R3": "PASS",
        "KIP-42.R4": "PASS",
        "KIP-42.R5": "PASS",
        "KIP-42.R6": "PASS",
        "KIP-42.R7": "UNSUPPORTED",
    }, {rid: (r["verdict"], r["message"]) for rid, r in got.items()}
    assert "no checksum()" in got["KIP-42.R7"]["message"]


def test_a_chain_called_out_of_order_fails(cli, reference, monkeypatch) -> None:
    got = judged(cli, reference, monkeypatch, "reorder")
    for rid in ("KIP-42.R1", "KIP-42.R3"):
        assert got[rid]["verdict"] == "FAIL", (rid, got[rid]["message"])
    assert "in order [2, 1, 0]" in got["KIP-42.R1"]["message"]
    assert "in order [2, 1, 0]" in got["KIP-42.R3"]["message"]


def test_dropping_on_acknowledgement_on_failures_fails(cli, reference, monkeypatch) -> None:
    got = judged(cli, reference, monkeypatch, "drop-failed-acks")
    r2 = got["KIP-42.R2"]
    assert r2["verdict"] == "FAIL"
    # not the real client's known callback order: the missing calls themselves
    assert (
        "failed" in r2["message"] and "onAcknowledgement called by interceptors []" in r2["message"]
    ), r2["message"]
    assert got["KIP-42.R1"]["verdict"] == "PASS"


def test_the_clients_named_choose_the_client_tests() -> None:
    """``--client`` keeps the tests of the clients named; the default is the suite's own."""
    _, default, out = collect("-k", "KIP-42")
    assert default and not [i for i in default if "test_java_client" in i], out[-2000:]
    assert [i for i in default if "test_interceptors.py::test_producer_chain" in i]
    _, java, out = collect("--client", f"java:{RELEASE}", "-k", "KIP-42")
    assert len([i for i in java if f"[java:{RELEASE}]" in i]) == len(CLIENT_REQUIREMENTS), out
    # the suite's own client's tests are left out; the broker's R8 audit stays
    assert [i.split("::")[1] for i in java if "test_interceptors" in i] == [
        "test_audited_round_trip"
    ], java
