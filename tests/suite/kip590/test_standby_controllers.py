"""KIP-590.R5 against the reference with standby controllers, and against an injected fault.

One ``reference:zookeeper?controllers=3`` target (a ZooKeeper, three controllers, three brokers)
is started through ``make_target`` for the module; the suite then runs as an external target
naming its controllers (``--controller-bootstrap``):

* all three, as they are: KIP-590.R5 PASSes;
* one standby behind a proxy that rewrites NOT_CONTROLLER into NONE in Envelope responses: FAILs,
  naming the requirement, what was sent and what each controller answered;
* the active controller alone: SKIP, naming the missing standby.
"""

from __future__ import annotations

import pytest

from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.framing import decode_response, encode_response
from conformance.targets import TargetOptions, make_target
from conformance.targets.reference import ReferenceTarget
from tests.support.proxies import FaultyProxy, passthrough
from tests.support.runs import verdicts

TEST = "kip-590/envelope/standby/not-controller"
R5 = "KIP-590.R5"
CODEC = Codec.from_specs()


def not_controller_hidden(api: int, version: int, frame: bytes) -> bytes:
    """A standby that claims to have served the Envelope: NOT_CONTROLLER becomes NONE."""
    if api != ApiKey.ENVELOPE:
        return frame
    header, body = decode_response(CODEC, api, version, frame)
    if body["ErrorCode"] != ErrorCode.NOT_CONTROLLER:
        return frame
    body["ErrorCode"] = 0
    return encode_response(CODEC, api, version, header["CorrelationId"], body)


@pytest.fixture(scope="module")
def standbys():
    target = make_target(TargetOptions(target="reference:zookeeper?controllers=3"))
    assert isinstance(target, ReferenceTarget) and target.controller_count == 3
    target.start()
    try:
        yield target
    finally:
        target.stop()


def run_r5(cli, target, controllers: list[str]):
    proc, run = cli(
        "--bootstrap-server",
        str(target.bootstrap[0]),
        "--controller-bootstrap",
        ",".join(controllers),
        "--target-name",
        "standbys",
        "--select",
        TEST,
    )
    assert run is not None, proc.stderr[-2000:]
    records = [r for r in run.records if r["test_id"] == TEST]
    assert [r["requirement_id"] for r in records] == [R5], verdicts(run)
    return records[0]


def test_the_reference_names_its_active_controller_first(standbys) -> None:
    assert standbys.kind == "reference:zookeeper?controllers=3"
    assert len(set(standbys.controllers)) == 3
    assert standbys.controller == standbys.controllers[0]


def test_standby_controllers_answer_not_controller(cli, standbys) -> None:
    record = run_r5(cli, standbys, [str(ep) for ep in standbys.controllers])
    assert record["verdict"] == "PASS", record["message"]
    assert (record["api_key"], record["api_version"]) == (ApiKey.ENVELOPE, 0)


def test_a_standby_that_hides_not_controller_fails_r5(cli, standbys) -> None:
    active, standby, other = standbys.controllers
    with FaultyProxy((standby.host, standby.port), not_controller_hidden) as proxy:
        record = run_r5(cli, standbys, [str(active), proxy.address, str(other)])
    assert proxy.rewritten == 1
    assert record["verdict"] == "FAIL"
    message = record["message"]
    assert "Envelope v0 carrying CreateTopics" in message and "validate-only" in message
    assert f"{proxy.address}: NONE(0)" in message and f"{other}: NOT_CONTROLLER(41)" in message


def test_one_controller_is_a_skip_naming_the_missing_standby(cli, standbys) -> None:
    with FaultyProxy((standbys.controller.host, standbys.controller.port), passthrough) as proxy:
        record = run_r5(cli, standbys, [proxy.address])
    assert record["verdict"] == "SKIP"
    assert "no standby controller" in record["message"]
