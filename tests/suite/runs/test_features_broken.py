"""Deliberately broken targets make exactly the expected lifecycle requirements fail.

A reference cluster (embedded store) runs behind small faulty proxies, addressed as an external
target (``--bootstrap-server`` / ``--controller-bootstrap``):

* through transparent proxies on both listeners, the lifecycle tests fail nothing;
* a controller-listener proxy that reuses a broker's first epoch for every later registration
  (and maps heartbeats back to the real epoch, so the target keeps working) fails
  BROKER-REGISTRATION.R7, in the tests that name it, and nothing else;
* a client-listener proxy that keeps listing every broker it ever listed (so a fenced or
  unregistered broker stays visible) fails BROKER-REGISTRATION.R4 in the state machine, and
  nothing else;
* brokers that answer a forwarded CreateTopics NONE where the controller refused it
  (TOPIC_ALREADY_EXISTS) fail KIP-590.R3, and nothing else.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.framing import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from tests.support.faults_groups import Faults, replace_code
from tests.support.faults_groups import run_through as run_proxied
from tests.support.proxies import FaultyProxy, passthrough
from tests.support.runs import failing, unreached, verdicts

SEED = "20261123"
CODEC = Codec.from_specs()
LIFECYCLE = (
    "broker-registration/lifecycle/state-machine or broker-registration/lifecycle/epochs or "
    "broker-registration/lifecycle/register-to-shutdown or "
    "broker-registration/lifecycle/fenced-absent-from-client-metadata or "
    "broker-registration/lifecycle/unregister or broker-registration/register"
)
MACHINE = "broker-registration/lifecycle/state-machine"


class EpochReuse:
    """Answers every registration of a broker id with the epoch of its first one."""

    def __init__(self) -> None:
        self.asked: dict[int, int] = {}  # correlation id -> broker id
        self.shown: dict[int, int] = {}  # broker id -> the epoch it is always told
        self.real: dict[int, int] = {}  # broker id -> its latest real epoch

    def request(self, api: int, version: int, frame: bytes) -> bytes:
        if api not in (ApiKey.BROKER_REGISTRATION, ApiKey.BROKER_HEARTBEAT):
            return frame
        header, body = decode_request(CODEC, frame)
        broker = body["BrokerId"]
        if api == ApiKey.BROKER_REGISTRATION:
            self.asked[header["CorrelationId"]] = broker
            return frame
        if broker in self.shown and body["BrokerEpoch"] == self.shown[broker]:
            body["BrokerEpoch"] = self.real[broker]
            return encode_request(
                CODEC, api, version, header["CorrelationId"], header["ClientId"], body
            )
        return frame

    def response(self, api: int, version: int, frame: bytes) -> bytes:
        if api != ApiKey.BROKER_REGISTRATION:
            return frame
        header, body = decode_response(CODEC, api, version, frame)
        broker = self.asked.pop(header["CorrelationId"], None)
        if broker is None or body["ErrorCode"] != 0:
            return frame
        self.real[broker] = body["BrokerEpoch"]
        body["BrokerEpoch"] = self.shown.setdefault(broker, body["BrokerEpoch"])
        return encode_response(CODEC, api, version, header["CorrelationId"], body)


class StickyBrokers:
    """Metadata and DescribeCluster keep listing every broker they ever listed."""

    def __init__(self) -> None:
        self.seen: dict[tuple[int, int], dict[int, dict]] = {}

    def response(self, api: int, version: int, frame: bytes) -> bytes:
        if api not in (ApiKey.METADATA, ApiKey.DESCRIBE_CLUSTER):
            return frame
        key = "NodeId" if api == ApiKey.METADATA else "BrokerId"
        header, body = decode_response(CODEC, api, version, frame)
        seen = self.seen.setdefault((api, version), {})
        listed = {b[key] for b in body["Brokers"]}
        for b in body["Brokers"]:
            seen[b[key]] = b
        gone = [b for k, b in sorted(seen.items()) if k not in listed]
        if not gone:
            return frame
        body["Brokers"] = [*body["Brokers"], *gone]
        return encode_response(CODEC, api, version, header["CorrelationId"], body)


class Transparent:
    """A transparent controller proxy."""

    def request(self, api: int, version: int, frame: bytes) -> bytes:
        return frame

    def response(self, api: int, version: int, frame: bytes) -> bytes:
        return frame


def run_through(cli, target, select: str, *, client=passthrough, controller=None):
    """The selection against ``target`` with proxies on its client and controller listeners."""
    boot, ctrl = target.bootstrap[0], target.controller
    controller = controller or Transparent()
    with (
        FaultyProxy((boot.host, boot.port), client) as client_proxy,
        FaultyProxy(
            (ctrl.host, ctrl.port), controller.response, controller.request
        ) as controller_proxy,
    ):
        proc, run = cli(
            "--bootstrap-server",
            client_proxy.address,
            "--controller-bootstrap",
            controller_proxy.address,
            "--target-name",
            "proxied",
            "--seed",
            SEED,
            "--select",
            select,
        )
    assert run is not None, proc.stderr[-2000:]
    assert not [r for r in run.records if r["verdict"] == "ERROR"], proc.stdout[-3000:]
    return run, client_proxy.rewritten + controller_proxy.rewritten


def test_transparent_proxies_fail_nothing(cli, reference) -> None:
    run, rewritten = run_through(cli, reference, LIFECYCLE)
    assert rewritten == 0
    assert failing(run) == set()
    assert {r["verdict"] for r in run.records if not unreached(r)} == {"PASS"}, verdicts(run)
    assert {r["requirement_id"] for r in run.records} == {
        r["requirement_id"] for r in run.records if r["verdict"] == "PASS"
    }


def test_a_reused_epoch_fails_exactly_the_epoch_requirement(cli, reference) -> None:
    run, rewritten = run_through(cli, reference, LIFECYCLE, controller=EpochReuse())
    assert rewritten > 0
    assert failing(run) == {
        (MACHINE, "BROKER-REGISTRATION.R7"),
        ("broker-registration/lifecycle/epochs", "BROKER-REGISTRATION.R7"),
    }, verdicts(run)
    v = verdicts(run)
    # the machine's other requirements are judged on the steps before the failure (they held
    # there); the focused tests that never register a broker twice pass
    assert v[(MACHINE, "BROKER-REGISTRATION.R4")] == "PASS"
    r4 = next(
        r
        for r in run.records
        if (r["test_id"], r["requirement_id"]) == (MACHINE, "BROKER-REGISTRATION.R4")
    )
    assert r4["observed"]["checks"] > 0 and r4["observed"]["failed"] == 0, r4
    assert (
        v[("broker-registration/lifecycle/register-to-shutdown", "BROKER-REGISTRATION.R6")]
        == "PASS"
    )
    message = next(
        r["message"] for r in run.records if r["test_id"] == MACHINE and r["verdict"] == "FAIL"
    )
    assert "steps:" in message and "register(" in message


def test_a_fenced_broker_kept_visible_fails_exactly_the_visibility_requirement(
    cli, reference
) -> None:
    run, rewritten = run_through(cli, reference, MACHINE, client=StickyBrokers().response)
    assert rewritten > 0
    assert failing(run) == {(MACHINE, "BROKER-REGISTRATION.R4")}, verdicts(run)
    message = next(r["message"] for r in run.records if r["verdict"] == "FAIL")
    assert "lists #" in message, message


FORWARDING = "kip-590/create-topics/inner-error-passed-back or kip-590/routing/state-machine"


def test_a_broker_that_drops_the_controllers_error_fails_kip_590_r3(cli, reference) -> None:
    faults = Faults(
        (replace_code({ApiKey.CREATE_TOPICS}, ErrorCode.TOPIC_ALREADY_EXISTS, ErrorCode.NONE),)
    )
    run = run_proxied(cli, reference, FORWARDING, faults, SEED)
    assert faults.hits, "no CreateTopics answer was rewritten"
    assert ("kip-590/create-topics/inner-error-passed-back", "KIP-590.R3") in failing(run)
    assert {k[1] for k in failing(run)} == {"KIP-590.R3"}, verdicts(run)
    message = next(r["message"] for r in run.records if r["verdict"] == "FAIL")
    assert "TOPIC_ALREADY_EXISTS" in message, message
