"""A target that leaves some requests unanswered costs bounded time: each unanswered request is
reported once, as the failure of the requirement it breaks, and never sent again in the test.

The reference runs behind a proxy that never forwards DescribeGroups v0 and CreateTopics v7 (so
the target never answers them, and the connection stays open). The generated requests of both
must FAIL naming the missing answer, and the proxy must have seen each once per test: hypothesis
replays a failing example to report it, and that replay must not send it again (a state
machine's replay is handled the same way, in ``models.run_machine``). A later test that needs
CreateTopics v7 still sends it, and FAILs after the shorter wait for an API and version the
target already left unanswered in the run. A node that has left an API unanswered twice and
answered none of it gets no more of it: later requests FAIL at once, citing where it was seen.
"""

from __future__ import annotations

import pytest

from conformance.protocol import ApiKey
from tests.support.faults_silence import Swallow
from tests.support.proxies import FaultyProxy, passthrough

#: in a concurrent run (``--jobs``) the workers share what they learn of unanswered requests as
#: they run (``Harness.share``), but which of them waits first varies: these tests count the
#: waits and the requests of one process
ONE_PROCESS = ("--jobs", "1")
SELECT = (
    "protocol/spec/describe-groups/v0 or protocol/spec/create-topics/v7"
    " or topics/create/existing-refused"
)


@pytest.fixture(autouse=True)
def short_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """A first wait of 4 s instead of 10 (the runs' harness reads it from the environment):
    still twice the 2 s a repeated silence is given, which these tests tell apart."""
    monkeypatch.setenv("KAFKA_CONFORMANCE_REQUEST_TIMEOUT", "4")


def test_an_unanswered_request_is_reported_once_and_not_sent_again(cli, reference) -> None:
    boot = reference.bootstrap[0]
    silence = Swallow({ApiKey.DESCRIBE_GROUPS: {0}, ApiKey.CREATE_TOPICS: {7}})
    with FaultyProxy((boot.host, boot.port), passthrough, silence.request) as proxy:
        proc, run = cli("--bootstrap-server", proxy.address, "--select", SELECT, *ONE_PROCESS)
    assert run is not None, proc.stderr[-2000:]
    # each test sent each request once: the replay of a failing example sent nothing
    assert dict(silence.swallowed) == {
        (ApiKey.DESCRIBE_GROUPS, 0): 1,
        (ApiKey.CREATE_TOPICS, 7): 2,
    }
    failed = {
        (r["test_id"], r["requirement_id"]): r["message"]
        for r in run.records
        if r["verdict"] == "FAIL"
    }
    for test in (
        "protocol/spec/describe-groups/v0/well-formed",
        "protocol/spec/create-topics/v7/well-formed",
    ):
        message = failed[(test, "PROTOCOL.R9")]
        assert "no answer within the timeout" in message, message
    # the later test sent CreateTopics v7 too, and waited the shorter bound for it
    message = failed[("topics/create/existing-refused", "TOPICS.R2")]
    assert "CreateTopics v7 unanswered earlier in this run too" in message, message
    assert not [r for r in run.records if r["verdict"] == "ERROR"], proc.stdout[-3000:]


def test_an_edge_left_unanswered_is_waited_for_briefly_at_the_next_version(cli, reference) -> None:
    """Apache Kafka 3.9 leaves OffsetFetch v8 and v9 unanswered when they name no group: the
    same edge at the API's next version is waited for only the shorter bound."""
    boot = reference.bootstrap[0]
    silence = Swallow({ApiKey.OFFSET_FETCH: {8, 9}})
    select = (
        "protocol/spec/offset-fetch/v8/well-formed or protocol/spec/offset-fetch/v9/well-formed"
    )
    with FaultyProxy((boot.host, boot.port), passthrough, silence.request) as proxy:
        proc, run = cli("--bootstrap-server", proxy.address, "--select", select, *ONE_PROCESS)
    assert run is not None, proc.stderr[-2000:]
    assert dict(silence.swallowed) == {(ApiKey.OFFSET_FETCH, 8): 1, (ApiKey.OFFSET_FETCH, 9): 1}
    failed = {r["test_id"]: r["message"] for r in run.records if r["verdict"] == "FAIL"}
    first = failed["protocol/spec/offset-fetch/v8/well-formed"]
    assert "no answer within the timeout" in first and "another version" not in first, first
    again = failed["protocol/spec/offset-fetch/v9/well-formed"]
    assert "this edge was left unanswered at another version" in again, again


def test_an_api_a_node_never_answers_is_not_sent_after_two_waits(cli, reference) -> None:
    """Every version of DescribeGroups is swallowed: v0 waits the full timeout, v1 the shorter
    one, and v2 onward are not sent; each of their FAILs cites the two tests that saw it."""
    boot = reference.bootstrap[0]
    silence = Swallow({ApiKey.DESCRIBE_GROUPS: None})
    with FaultyProxy((boot.host, boot.port), passthrough, silence.request) as proxy:
        proc, run = cli(
            "--bootstrap-server",
            proxy.address,
            "--select",
            "protocol/spec/describe-groups",
            *ONE_PROCESS,
        )
    assert run is not None, proc.stderr[-2000:]
    assert dict(silence.swallowed) == {
        (ApiKey.DESCRIBE_GROUPS, 0): 1,
        (ApiKey.DESCRIBE_GROUPS, 1): 1,
    }
    failed = {
        r["test_id"]: r
        for r in run.records
        if r["verdict"] == "FAIL" and r["requirement_id"] == "PROTOCOL.R9"
    }
    advertised = {int(t.split("/v")[1].split("/")[0]) for t in failed}
    assert advertised >= {0, 1, 2, 3, 4, 5}, sorted(failed)
    assert "none within 2 s" in failed["protocol/spec/describe-groups/v1/well-formed"]["message"]
    for version in sorted(advertised - {0, 1}):
        message = failed[f"protocol/spec/describe-groups/v{version}/well-formed"]["message"]
        assert f"DescribeGroups v{version} [edge: " in message, message
        assert "not sent: 127.0.0.1:" in message, message
        assert "v0 in protocol/spec/describe-groups/v0/well-formed" in message, message
        assert "v1 in protocol/spec/describe-groups/v1/well-formed" in message, message
    assert not [r for r in run.records if r["verdict"] == "ERROR"], proc.stdout[-3000:]


def test_the_controller_does_not_wait_again_for_what_the_workers_saw_unanswered(
    cli, reference
) -> None:
    """A concurrent run (two workers) against a node that never answers CreateTopics: the
    workers' spec-derived tests wait for it, sharing what they saw; the disruptive test the
    controller runs after them (``topics/create/illegal-name-refused``) learned that from them
    (``Harness.learn``), so its CreateTopics is not sent, and its FAIL cites where the workers
    saw the silence."""
    boot = reference.bootstrap[0]
    silence = Swallow({ApiKey.CREATE_TOPICS: None})
    select = "protocol/spec/create-topics or topics/create/illegal-name-refused"
    with FaultyProxy((boot.host, boot.port), passthrough, silence.request) as proxy:
        proc, run = cli("--bootstrap-server", proxy.address, "--select", select, "--jobs", "2")
    assert run is not None, proc.stderr[-2000:]
    failed = {
        r["test_id"]: r["message"]
        for r in run.records
        if r["verdict"] == "FAIL" and r["requirement_id"] == "TOPICS.R1"
    }
    message = failed["topics/create/illegal-name-refused"]
    assert "not sent: 127.0.0.1:" in message, message
    assert " in protocol/spec/create-topics/v" in message, message
    # the workers share what they saw as they run (``Harness.share``): a request is sent while
    # fewer than two of the run's are known unanswered, so three at most (two sent together,
    # and a second of the first to end while the other's wait goes on), not two per worker;
    # the controller sent none
    assert sum(silence.swallowed.values()) <= 3, dict(silence.swallowed)
    assert not [r for r in run.records if r["verdict"] == "ERROR"], proc.stdout[-3000:]
