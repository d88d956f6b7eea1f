"""A malformed answer to a set-up request costs one finding, not every requirement's (issue 42).

A proxy in front of the reference appends one byte to every Metadata v12 answer and cuts the
last byte (the top-level tagged fields) off every FindCoordinator v6 answer. The LOG tests look
their partitions' leaders up with Metadata, the GROUPS tests their coordinator with
FindCoordinator (set-up): they learn once per node that those versions do not decode and use
the next lower advertised one, so their requirements keep the verdicts they have without the
proxy (all PASS against the reference), while only the PROTOCOL requirements of Metadata v12
and FindCoordinator v6 (R3: the answer's schema, R9: served; R4/R5, judged on what decodes, are
then SKIP) differ. The manifest and ``run``'s summary list each set-up defect once.
One run, two workers (each remembers its own; the controller merges them).
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from tests.support.proxies import FaultyProxy
from tests.support.runs import verdicts

SEED = "20261128"
SELECT = (
    "log/produce-fetch/round-trip or log/produce/named-partition-only "
    "or groups/join/member-id-required or consumer-groups/heartbeat/join-reconcile-leave "
    "or protocol/spec/metadata/v12/ or protocol/spec/find-coordinator/v6/"
)
BROKEN = ("protocol/spec/metadata/v12/", "protocol/spec/find-coordinator/v6/")


def malformed(api: int, version: int, frame: bytes) -> bytes:
    if (api, version) == (ApiKey.METADATA, 12):
        return frame + b"\0"  # one byte more than the schema
    if (api, version) == (ApiKey.FIND_COORDINATOR, 6):
        return frame[:-1]  # the last field cut short
    return frame


def test_a_set_up_answer_that_does_not_decode_is_one_finding(cli, reference) -> None:
    ep = reference.bootstrap[0]
    with FaultyProxy((ep.host, ep.port), malformed) as proxy:
        proc, run = cli(
            "--bootstrap-server", proxy.address, "--target-name", "malformed", "--seed", SEED,
            "--select", SELECT, "--jobs", "2",
        )  # fmt: skip
    assert run is not None, proc.stderr[-2000:]
    assert proxy.rewritten > 0
    v = verdicts(run)
    for broken in BROKEN:
        assert v[(f"{broken}well-formed", "PROTOCOL.R3")] == "FAIL", v
    semantic = {k: s for k, s in v.items() if not k[0].startswith(BROKEN)}
    assert {r for _, r in semantic} >= {
        "LOG.R1", "LOG.R2", "LOG.R3", "GROUPS.R2", "CONSUMER-GROUPS.R1"
    }, semantic  # fmt: skip
    assert set(semantic.values()) == {"PASS"}, semantic  # as without the proxy
    defects = {(d["api"], d["version"]): d for d in run.manifest.get("setup_defects", [])}
    assert defects.keys() == {("Metadata", 12), ("FindCoordinator", 6)}, defects
    assert all(d["requirement"] == "PROTOCOL.R3" for d in defects.values()), defects
    assert defects[("Metadata", 12)]["tests"] >= 2, defects
    assert "set-up defect: Metadata v12" in proc.stdout, proc.stdout[-3000:]
    assert "set-up defect: FindCoordinator v6" in proc.stdout, proc.stdout[-3000:]
