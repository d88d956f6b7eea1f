"""``--jobs N``: the suite's tests run in N pytest-xdist workers against one target, the
disruptive ones after them in the controller, one at a time.

* The verdicts are those of a one-process run at the same seed: a subset holding independent
  tests, brokers registered into the cluster and malformed frames, run against one reference
  cluster with ``--jobs 1`` and ``--jobs 2``, gives the same verdict for every test and
  requirement, and in both the disruptive tests' records come last. (The whole suite, broker
  restarts included, is compared in benchmarks/README.md.)
* A target that goes down while the workers run (an external one behind a proxy that crashes at
  the Nth request) is one outage: the workers defer what they had left, nothing is sent after the
  crash but the probes, and the tests not run are NOT_EVALUATED; ``run`` exits 3.
"""

from __future__ import annotations

from conformance.results.summary import INCOMPLETE
from tests.support.faults_crash import CrashProxy, at_request
from tests.support.runs import verdicts

#: independent tests, and disruptive ones of each kind: a broker restart, a broker registered
#: into the cluster, malformed frames
SUBSET = (
    "kip-78 or kip-536 or offsets/commit-fetch or broker-registration/lifecycle/epochs or "
    "protocol/robustness/negative-size"
)
DISRUPTIVE = (
    "kip-536/restart/later",  # SKIP here: the suite cannot restart an external target's brokers
    "kip-78/metadata/v2+/cluster-id/survives-restart",
    "offsets/commit-fetch/survive-restart",
    "broker-registration/lifecycle/",
    "protocol/robustness/",
)


def disruptive(test_id: str) -> bool:
    return any(test_id == d or (d.endswith("/") and test_id.startswith(d)) for d in DISRUPTIVE)


def test_concurrent_and_one_process_runs_give_the_same_verdicts(cli, reference) -> None:
    where = (
        "--bootstrap-server", ",".join(map(str, reference.bootstrap)),
        "--controller-bootstrap", str(reference.controller),
    )  # fmt: skip
    runs = {}
    for jobs in ("1", "2"):
        proc, run = cli(*where, "--select", SUBSET, "--jobs", jobs)
        assert run is not None and proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        runs[jobs] = run
    one, two = verdicts(runs["1"]), verdicts(runs["2"])
    assert one == two, {k: (one.get(k), two.get(k)) for k in one.keys() | two.keys()
                        if one.get(k) != two.get(k)}  # fmt: skip
    assert len(one) > 20 and "PASS" in one.values()
    assert {t for t, _ in one if disruptive(t)}, one
    assert "2 processes" in proc.stdout, proc.stdout[-2000:]
    for run in runs.values():
        order = [r["test_id"] for r in run.records]
        first = next(i for i, t in enumerate(order) if disruptive(t))
        assert all(disruptive(t) for t in order[first:]), order[first:]
        assert run.manifest["hypothesis_seed"] == runs["1"].manifest["hypothesis_seed"]


def test_a_target_down_while_the_workers_run_is_one_outage(cli, reference) -> None:
    boot = reference.bootstrap[0]
    with CrashProxy((boot.host, boot.port), at_request(40)) as proxy:
        proc, run = cli("--bootstrap-server", proxy.address, "--select", SUBSET, "--jobs", "2")
    assert run is not None, proc.stderr[-2000:]
    assert proc.returncode == INCOMPLETE, (proc.returncode, proc.stdout[-3000:])
    [outage] = run.manifest["outages"]
    assert outage["restarted"] is False, outage
    found = verdicts(run)
    later = [k for k, v in found.items() if v == "NOT_EVALUATED"]
    assert later, found
    messages = {r["message"] for r in run.records if r["verdict"] == "NOT_EVALUATED"}
    assert messages == {f"not evaluated: target unreachable since {outage['test_id']}"}, messages
    for r in run.records:  # a test that failed failed because the target went down
        if r["verdict"] in ("FAIL", "ERROR"):
            assert "went down during this test" in r["message"] or "cannot connect" in str(
                r["message"]
            ), r
    # every disruptive test was left for after the workers: none ran against the dead target
    assert all(v == "NOT_EVALUATED" for (t, _), v in found.items() if disruptive(t)), found
