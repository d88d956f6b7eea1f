"""Every LOG, IDEMPOTENCE and TOPICS requirement FAILs against a broker with a real
implementer's bug and PASSes against the reference cluster.

A 3-broker reference cluster (embedded store) runs behind one proxy per broker
(``faults_log.ProxiedCluster``). The suite's own test functions that name a requirement run against
the proxies in-process, as the plugin runs them (``tests.support.in_process``): through transparent
proxies none fails; with the requirement's fault (``faults_log.LOG_FAULTS``) they fail with that
requirement's id and the fault rewrote at least one frame. The verdicts the product records for
these failures are checked end to end by one CLI run through a faulty proxy.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.suite.idempotence import test_idempotent_produce
from conformance.suite.log import (
    test_compression,
    test_delete_records,
    test_delete_then_use,
    test_many_partitions,
    test_offsets,
    test_partition_model,
    test_produce_fetch,
    test_topic_ids,
)
from conformance.suite.topics import (
    test_admin_model,
    test_create_topics,
    test_metadata_names,
    test_topic_lifecycle,
)
from tests.support import in_process
from tests.support.faults_log import (
    IDEMPOTENCE_FAULTS,
    LOG_FAULTS,
    TOPICS_FAULTS,
    HighWatermarkOffByOne,
    LeaderNotListed,
    ListOffsetsOffByOne,
    ProxiedCluster,
)
from tests.support.in_process import SEED, by_requirement, run
from tests.support.runs import failing, verdicts

FAULTS = {**LOG_FAULTS, **IDEMPOTENCE_FAULTS, **TOPICS_FAULTS}
FILES = ("log", "idempotence", "topics")
MODULES = (
    test_produce_fetch,
    test_topic_ids,
    test_offsets,
    test_compression,
    test_delete_records,
    test_delete_then_use,
    test_many_partitions,
    test_partition_model,
    test_idempotent_produce,
    test_create_topics,
    test_topic_lifecycle,
    test_metadata_names,
    test_admin_model,
)
MODEL = test_partition_model.test_partition_log_state_machine
ADMIN_MODEL = test_admin_model.test_topic_admin_state_machine


def suite_tests(modules=MODULES) -> dict[str, list[Callable]]:
    """requirement id -> the suite test functions that name it (the models only where no
    focused test does)."""
    return by_requirement(modules, (MODEL, ADMIN_MODEL))


#: hypothesis draws from SEED in every test of the module
fixed_seed = in_process.fixed_seed


def test_every_requirement_has_a_test_and_a_fault() -> None:
    from conformance.requirements import requirements

    ids = {r.id for r in requirements() if r.file in FILES}
    assert set(suite_tests()) >= ids
    assert set(FAULTS) == ids


def test_transparent_proxies_fail_nothing(reference) -> None:
    with ProxiedCluster(reference) as cluster:
        for fns in suite_tests().values():
            for fn in fns:
                assert run(cluster, fn) is None, fn.__name__


@pytest.mark.parametrize("req", list(FAULTS))
def test_the_fault_fails_the_requirement(reference, req: str) -> None:
    fault = FAULTS[req]()
    with ProxiedCluster(reference, fault) as cluster:
        failures = [run(cluster, fn) for fn in suite_tests()[req]]
    assert fault.changed > 0, f"{type(fault).__name__} rewrote nothing"
    named = [f for f in failures if f is not None and req in f.req_ids]
    assert named, f"{type(fault).__name__}: {[str(f) for f in failures]}"
    assert all(str(f) for f in named)


def test_the_model_catches_an_off_by_one_list_offsets_and_prints_the_steps(reference) -> None:
    fault = ListOffsetsOffByOne()
    with ProxiedCluster(reference, fault) as cluster:
        failure = run(cluster, MODEL)
    assert failure is not None and failure.req_ids == ("LOG.R10",), failure
    text = str(failure)
    assert "[model log-partition; steps: " in text and "create(#0" in text, text
    assert "list-" in text and "Offset=" in text, text


def test_the_admin_model_checks_metadata_after_each_step(reference) -> None:
    fault = LeaderNotListed()
    with ProxiedCluster(reference, fault) as cluster:
        failure = run(cluster, ADMIN_MODEL)
    assert failure is not None, "the admin model passed a Metadata naming unlisted leaders"
    assert set(failure.req_ids) <= set(test_admin_model.REQS), failure
    text = str(failure)
    assert "metadata-lists-live-topics" in text and "sound is False" in text, text
    assert "[model topics-admin; steps: " in text, text


def test_a_faulty_high_watermark_fails_exactly_that_requirement_in_a_run(cli, reference) -> None:
    fault = HighWatermarkOffByOne()
    with ProxiedCluster(reference, fault) as cluster:
        proc, run_ = cli(
            "--bootstrap-server",
            cluster.bootstrap,
            "--target-name",
            "proxied",
            "--seed",
            str(SEED),
            "--select",
            "log/fetch/high-watermark-after-acks-all or log/fetch/at-and-past-the-end or "
            "log/list-offsets/earliest-latest",
        )
    assert run_ is not None, proc.stderr[-2000:]
    assert failing(run_) == {("log/fetch/high-watermark-after-acks-all", "LOG.R6")}, verdicts(run_)
    message = next(r["message"] for r in run_.records if r["verdict"] == "FAIL")
    assert "HighWatermark 5" in message and "expected 0 and 6" in message, message
    assert {r["verdict"] for r in run_.records if r["requirement_id"] != "LOG.R6"} == {"PASS"}
