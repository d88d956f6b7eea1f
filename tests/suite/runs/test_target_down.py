"""A target that goes down mid-run is one finding, not a thousand.

The reference runs behind a proxy that crashes (stops listening, drops every connection) at the
invalid-varint Metadata request of ``robustness/invalid-varint``:

* as an external target (``--bootstrap-server``): that test FAILs PROTOCOL.R14 saying the target
  went down; nothing is sent after it and every later test is NOT_EVALUATED ("target unreachable
  since ..."); the tests before it keep their verdicts; the terminal output, the manifest and the
  report say so first; ``run`` exits 3 (incomplete);
* as a target the suite manages (``tests.support.crash_target``: the proxy also kills the broker
  behind it, by pid): the reference target restarts the broker, the run goes on, and the later
  tests get real verdicts; the manifest records the restart.

Malformed-frame tests are ``disruptive`` and run after every other test, in their usual order.
"""

from __future__ import annotations

from pathlib import Path

from conformance.matrix.one_run import render_run_report
from conformance.results.summary import INCOMPLETE
from conformance.targets.reference import ReferenceTarget
from tests.support.faults_crash import CrashProxy, on_invalid_varint
from tests.support.runs import only_run, suite_pytest

CRASH = "protocol/robustness/invalid-varint"
#: a test of a module collected after the robustness module, one before it, and robustness tests
#: before and after the crashing one
SELECT = (
    "protocol/robustness/length-past-the-frame or protocol/robustness/invalid-varint or "
    "protocol/robustness/truncated-body or protocol/robustness/negative-size or "
    "protocol/headers/null-client-id or protocol/versions/metadata/outside-advertised-refused"
)
AFTER_CRASH = ("protocol/robustness/truncated-body", "protocol/robustness/negative-size")
BEFORE_CRASH = (
    "protocol/headers/null-client-id",
    "protocol/versions/metadata/outside-advertised-refused",
    "protocol/robustness/length-past-the-frame",
)


def _by_test(run) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in run.records:
        out.setdefault(r["test_id"], []).append(r)
    return out


def test_an_external_target_that_goes_down_leaves_the_rest_not_evaluated(
    cli, tmp_path: Path
) -> None:
    with ReferenceTarget() as reference:
        boot = reference.bootstrap[0]
        with CrashProxy((boot.host, boot.port), on_invalid_varint) as proxy:
            proc, run = cli("--bootstrap-server", proxy.address, "--select", SELECT)
    requests = proxy.requests
    assert [api for _, api, _ in proxy.crashes] == [3], proxy.crashes  # one Metadata
    assert run is not None, proc.stderr[-2000:]
    assert proc.returncode == INCOMPLETE, (proc.returncode, proc.stdout[-3000:])
    assert requests == proxy.crashes[0][0], "a request went to the proxy after it crashed"
    tests = _by_test(run)
    order = list(tests)
    # disruptive tests last: the versions test (collected after robustness) ran before them
    assert order.index("protocol/versions/metadata/outside-advertised-refused") < order.index(
        CRASH
    ), order
    [crashed] = tests[CRASH]
    assert crashed["verdict"] == "FAIL", crashed
    assert crashed["message"].startswith("the target went down during this test ("), crashed
    assert "refuses connections" in crashed["message"], crashed
    for test in BEFORE_CRASH:
        assert {r["verdict"] for r in tests[test]} == {"PASS"}, tests[test]
    later = [r for t in AFTER_CRASH for r in tests[t]]
    assert later and all(r["verdict"] == "NOT_EVALUATED" for r in later), later
    assert {r["message"] for r in later} == {f"not evaluated: target unreachable since {CRASH}"}
    assert [r for r in run.records if r["verdict"] == "FAIL"] == [crashed]
    [outage] = run.manifest["outages"]
    assert outage["test_id"] == CRASH and outage["restarted"] is False, outage
    headline = f"the target went down during {CRASH} ("
    lines = proc.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if headline in line)
    verdict_line = next(i for i, line in enumerate(lines) if line.startswith("verdicts (one per"))
    assert first < verdict_line and "NOT_EVALUATED" in lines[verdict_line], lines[first:]
    report = render_run_report(run.dir, tmp_path / "report")
    page = report.read_text()  # the headline first, before the run counts and the summary
    assert headline in page and page.index(headline) < page.index(" runs, "), page[:3000]
    markdown = (report.parent / "report.md").read_text().splitlines()
    assert headline in markdown[2], markdown[:4]


def test_a_managed_target_that_goes_down_is_restarted_and_the_run_goes_on(tmp_path: Path) -> None:
    results = tmp_path / "results"
    proc = suite_pytest(
        "-p", "tests.support.crash_target", f"--select={SELECT}", f"--results-dir={results}",
        timeout=300,
    )  # fmt: skip
    run = only_run(results)
    assert run.manifest["target_name"] == "crashing-reference", run.manifest
    [outage] = run.manifest["outages"]
    assert outage["test_id"] == CRASH and outage["restarted"] is True, outage
    tests = _by_test(run)
    [crashed] = tests[CRASH]
    assert crashed["verdict"] == "FAIL" and "went down during this test" in crashed["message"]
    for test in (*BEFORE_CRASH, *AFTER_CRASH):
        assert {r["verdict"] for r in tests[test]} == {"PASS"}, tests[test]
    assert f"the target went down during {CRASH}" in proc.stdout, proc.stdout[-3000:]
    assert "restarted" in proc.stdout, proc.stdout[-2000:]
