"""Advertised, not judged: an API version a target offers that the suite has no spec for (or
that no selected test judged) is listed by the run summary, the manifest and the report.

The fault: a proxy whose ApiVersions advertises one Metadata version beyond the suite's specs
(the broker behind it serves none of it). A narrow selection keeps the run cheap; the same
selection straight against the reference lists no version without a spec.
"""

from __future__ import annotations

from conformance.matrix.one_run import render_run_report
from conformance.protocol import ApiKey, Codec
from tests.support.faults_advertise import Advertise
from tests.support.proxies import FaultyProxy

SELECT = "protocol/spec/metadata/v12/well-formed"
TOP = max(Codec.from_specs().message(ApiKey.METADATA, "request").valid_versions)


def test_a_version_beyond_the_specs_is_listed(cli, reference, tmp_path) -> None:
    boot = reference.bootstrap[0]
    lie = Advertise({ApiKey.METADATA: (0, TOP + 1)})
    with FaultyProxy((boot.host, boot.port), lie.response) as proxy:
        proc, run = cli("--bootstrap-server", proxy.address, "--select", SELECT)
    assert run is not None, proc.stderr[-2000:]
    entries = run.manifest["not_judged"]
    beyond = {
        "listener": "client",
        "api_key": ApiKey.METADATA,
        "api_name": "Metadata",
        "versions": [TOP + 1],
        "reason": "no spec",
    }
    assert beyond in entries, entries
    line = f"Metadata (api key 3) v{TOP + 1} on the client listener: no spec"
    assert line in proc.stdout, proc.stdout[-3000:]
    # the selected test judged v12 only: the other versions with a spec are listed apart
    unjudged = [e for e in entries if e["api_key"] == ApiKey.METADATA and e["reason"] != "no spec"]
    assert unjudged and 12 not in unjudged[0]["versions"], entries
    assert set(unjudged[0]["versions"]) == set(range(TOP + 1)) - {12}, entries
    # the report lists it too, in both renderings
    html = render_run_report(run.dir, tmp_path / "report")
    assert line in html.read_text(encoding="utf-8")
    assert line in (html.parent / "report.md").read_text(encoding="utf-8")


def test_the_reference_advertises_nothing_beyond_the_specs(cli, reference) -> None:
    proc, run = cli("--bootstrap-server", str(reference.bootstrap[0]), "--select", SELECT)
    assert run is not None, proc.stderr[-2000:]
    entries = run.manifest["not_judged"]
    assert not [e for e in entries if e["reason"] == "no spec"], entries
    assert all(12 not in e["versions"] for e in entries if e["api_key"] == ApiKey.METADATA), entries
