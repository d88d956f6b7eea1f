"""Every TXN requirement FAILs against a broker with a transaction bug and PASSes against the
reference cluster.

The module's reference cluster (embedded store) runs behind one proxy per broker
(``faults_log.ProxiedCluster``); the suite's TXN test functions run against the proxies
in-process, as the plugin runs them: through transparent proxies none fails; with the
requirement's fault (``faults_txn.TXN_FAULTS``) the focused tests naming it fail with its id and
the fault rewrote at least one frame. The state machine runs against markers dropped from Fetch
(its PASS against the reference is the whole-suite run's, test_against_reference). One CLI run
through a faulty proxy checks the verdict the product records end to end.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.suite.kit import verify
from conformance.suite.txn import (
    test_coordinator,
    test_describe,
    test_fencing,
    test_markers,
    test_offsets,
    test_producers_model,
    test_stable_offset,
    test_timeout,
    test_tv2,
)
from conformance.targets.base import Target
from tests.support import in_process
from tests.support.faults_log import Fault, ProxiedCluster
from tests.support.faults_txn import (
    TXN_FAULTS,
    MarkersDropped,
    StableOffsetIsHighWatermark,
    UpdateBeyondMaxAccepted,
)
from tests.support.in_process import SEED, by_requirement, run
from tests.support.runs import failing, verdicts

MODULES = (
    test_coordinator,
    test_fencing,
    test_markers,
    test_stable_offset,
    test_offsets,
    test_timeout,
    test_describe,
    test_tv2,
)
MODEL = test_producers_model.test_transactional_producers_state_machine


def suite_tests() -> dict[str, list[Callable]]:
    """requirement id -> the focused suite tests that name it."""
    return by_requirement(MODULES)


#: hypothesis draws from SEED in every test of the module
fixed_seed = in_process.fixed_seed


def judged(target: Target, req: str, fault: Fault) -> list[verify.Failed | None]:
    """The focused tests of ``req`` through proxies carrying ``fault``."""
    with ProxiedCluster(target, fault) as cluster:
        return [run(cluster, fn) for fn in suite_tests()[req]]


def test_every_requirement_has_a_test_and_a_fault() -> None:
    from conformance.requirements import requirements

    ids = {r.id for r in requirements() if r.file == "txn"}
    assert set(suite_tests()) == ids
    assert set(TXN_FAULTS) == ids


def test_transparent_proxies_fail_nothing(reference) -> None:
    with ProxiedCluster(reference) as cluster:
        for fn in {f for fns in suite_tests().values() for f in fns}:
            assert run(cluster, fn) is None, fn.__name__


@pytest.mark.parametrize("req", list(TXN_FAULTS))
def test_the_fault_fails_the_requirement(reference, req: str) -> None:
    fault = TXN_FAULTS[req]()
    failures = judged(reference, req, fault)
    assert fault.changed > 0, f"{type(fault).__name__} rewrote nothing"
    named = [f for f in failures if f is not None and req in f.req_ids]
    assert named, f"{type(fault).__name__}: {[str(f) for f in failures]}"


def test_an_update_beyond_the_supported_level_accepted_fails_txn_r18(reference) -> None:
    """The reference serves UpdateFeatures (issue 37): R18's UpdateFeatures check runs there and
    fails, naming it, when an update above the supported range is answered NONE."""
    fault = UpdateBeyondMaxAccepted()
    failures = judged(reference, "TXN.R18", fault)
    assert fault.changed > 0, "the UpdateFeatures answer was not rewritten"
    named = [str(f) for f in failures if f is not None and "TXN.R18" in f.req_ids]
    assert any("UpdateFeatures" in f and "INVALID_UPDATE_VERSION" in f for f in named), named


def test_the_model_catches_dropped_markers_and_prints_the_steps(reference) -> None:
    fault = MarkersDropped()
    with ProxiedCluster(reference, fault) as cluster:
        failure = run(cluster, MODEL)
    assert failure is not None and "TXN.R4" in failure.req_ids, failure
    text = str(failure)
    assert "[model txn-producers; steps: " in text and "MarkerCount=" in text, text


def test_a_faulty_stable_offset_fails_txn_r6_in_a_run(cli, reference) -> None:
    fault = StableOffsetIsHighWatermark()
    tests = "txn/stable-offset/first-open-transaction or txn/coordinator/init-producer-id"
    with ProxiedCluster(reference, fault) as cluster:
        where = ("--bootstrap-server", cluster.bootstrap, "--target-name", "proxied")
        proc, run_ = cli(*where, "--seed", str(SEED), "--select", tests)
    assert run_ is not None, proc.stderr[-2000:]
    assert failing(run_) == {("txn/stable-offset/first-open-transaction", "TXN.R6")}, verdicts(run_)
    message = next(r["message"] for r in run_.records if r["verdict"] == "FAIL")
    assert "a transaction open from offset 2" in message and "LastStableOffset 4" in message
    assert {r["verdict"] for r in run_.records if r["requirement_id"] != "TXN.R6"} == {"PASS"}
