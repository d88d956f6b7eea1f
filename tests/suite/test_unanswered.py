"""A target that leaves some requests unanswered costs bounded time: each unanswered request is
reported once, as the failure of the requirement it breaks, and never sent again in the test.

The reference runs behind a proxy that never forwards DescribeGroups v0 and CreateTopics v3 (so
the target never answers them, and the connection stays open). The generated requests of both
must FAIL naming the missing answer, and the proxy must have seen each exactly once: hypothesis
replays a failing example to report it, and that replay must not send it again (a state
machine's replay is handled the same way, in ``models.run_machine``).
"""

from __future__ import annotations

import pytest

from conformance.protocol import ApiKey
from conformance.targets.reference import ReferenceTarget
from tests.suite.faults_silence import Swallow
from tests.suite.proxies import FaultyProxy, passthrough

SELECT = "spec/describe-groups/v0 or spec/create-topics/v3"


@pytest.fixture(scope="module")
def reference():
    target = ReferenceTarget()
    target.start()
    yield target
    target.stop()


def test_an_unanswered_request_is_reported_once_and_not_sent_again(cli, reference) -> None:
    boot = reference.bootstrap[0]
    silence = Swallow(
        {ApiKey.DESCRIBE_GROUPS: {0}, ApiKey.CREATE_TOPICS: {3}, ApiKey.METADATA: {7}}
    )
    with FaultyProxy((boot.host, boot.port), passthrough, silence.request) as proxy:
        proc, run = cli("--bootstrap-server", proxy.address, "--select", SELECT)
    assert run is not None, proc.stderr[-2000:]
    assert dict(silence.swallowed) == {
        (ApiKey.DESCRIBE_GROUPS, 0): 1,
        (ApiKey.CREATE_TOPICS, 3): 1,
    }
    failed = {
        (r["test_id"], r["requirement_id"]): r["message"]
        for r in run.records
        if r["verdict"] == "FAIL"
    }
    for test in ("spec/describe-groups/v0/well-formed", "spec/create-topics/v3/well-formed"):
        message = failed[(test, "PROTOCOL.R9")]
        assert "no answer within the timeout" in message, message
    assert not [r for r in run.records if r["verdict"] == "ERROR"], proc.stdout[-3000:]
