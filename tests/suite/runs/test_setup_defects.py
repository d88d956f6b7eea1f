"""A malformed answer to a set-up request costs one finding, not every requirement's (issue 42).

A proxy in front of the reference appends one byte to every Metadata v12 answer. The LOG tests
look their partitions' leaders up with Metadata (set-up): they learn once that v12 does not
decode and use v11, so their requirements keep the verdicts they have without the proxy, while
PROTOCOL.R3 of Metadata v12 (the answer's schema) FAILs, and the manifest lists the set-up
defect once with the tests it touched.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from tests.support.proxies import FaultyProxy
from tests.support.runs import verdicts

SEED = "20261128"
#: a few LOG tests (each looks its topic's leaders up with Metadata) and Metadata v12's own
SELECT = (
    "log/produce-fetch/round-trip or log/produce/named-partition-only "
    "or protocol/spec/metadata/v12/"
)


def one_byte_more(api: int, version: int, frame: bytes) -> bytes:
    return frame + b"\0" if (api, version) == (ApiKey.METADATA, 12) else frame


def test_a_set_up_answer_that_does_not_decode_is_one_finding(cli, reference) -> None:
    ep = reference.bootstrap[0]
    args = ("--seed", SEED, "--select", SELECT, "--jobs", "1")
    proc, clean = cli("--bootstrap-server", f"{ep.host}:{ep.port}", *args)
    assert clean is not None, proc.stderr[-2000:]
    with FaultyProxy((ep.host, ep.port), one_byte_more) as proxy:
        proc, run = cli("--bootstrap-server", proxy.address, "--target-name", "trailing", *args)
    assert run is not None, proc.stderr[-2000:]
    assert proxy.rewritten > 0
    before, after = verdicts(clean), verdicts(run)
    assert before.keys() == after.keys()
    differ = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    # only Metadata v12's own PROTOCOL requirements (R3: its schema; R9: served; R4/R5 on
    # what decodes, so no longer judged)
    assert all(t.startswith("protocol/spec/metadata/v12/") for t, _ in differ), differ
    assert after[("protocol/spec/metadata/v12/well-formed", "PROTOCOL.R3")] == "FAIL", differ
    log = {k: v for k, v in after.items() if k[1].startswith("LOG.")}
    assert log and set(log.values()) == {"PASS"}, log
    defects = run.manifest.get("setup_defects", [])
    assert [(d["api"], d["version"]) for d in defects] == [("Metadata", 12)], defects
    assert defects[0]["requirement"] == "PROTOCOL.R3" and defects[0]["tests"] >= 2, defects
    assert "set-up defect: Metadata v12" in proc.stdout, proc.stdout[-3000:]
