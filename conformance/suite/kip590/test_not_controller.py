"""KIP-590.R5: an Envelope sent to a controller that is not the active one is answered
NOT_CONTROLLER.

Where the target names several controller listeners (``Target.controllers``: the reference's
``reference:zookeeper?controllers=3``, or ``--controller-bootstrap H:P,H:P,...``), the same
Envelope goes to each of them, as a broker would forward it: a validate-only CreateTopics of a
fresh suite topic, so the active controller, which serves it, changes nothing. At most one
controller is active, so every answer but at most one must be NOT_CONTROLLER (with two or more
controllers asked, at least one standby answered). SKIP where the target names fewer than two
controllers: there is no standby to ask.
"""

from __future__ import annotations

import uuid

from conformance.client.wire import ConnectionClosed
from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.kafka_errors import error_name
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kip590.shared import create_envelope
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.targets.base import Endpoint

R5 = "KIP-590.R5"


def validate_only_envelope(harness: Harness, topic: str) -> tuple[dict, str]:
    """The Envelope body, and what it carries in words (for failure messages)."""
    body, version = create_envelope(harness, topic, validate_only=True)
    return body, f"Envelope v0 carrying CreateTopics v{version} (validate-only, topic {topic})"


def ask(harness: Harness, ep: Endpoint, body: dict) -> int:
    """The Envelope's top-level ErrorCode from the controller at ``ep``."""
    try:
        conn = harness.connect(ep)
    except ConnectionClosed as e:
        raise verify.Failed(
            f"the controller at {ep}, named by the target, refused a connection: {e}", R5
        ) from None
    answer = verify.expect_response(conn, ApiKey.ENVELOPE, 0, body, served=R5)
    return answer.body["ErrorCode"]


@conformance("kip-590/envelope/standby/not-controller", R5, api=ApiKey.ENVELOPE)
def test_standby_controllers_answer_not_controller(harness: Harness) -> None:
    controllers = harness.target.controllers
    if len(controllers) < 2:
        raise MissingPrecondition(
            f"no standby controller: the target names {len(controllers) or 'no'} controller "
            "listener(s) (run --target reference:zookeeper?controllers=3, or give every "
            "controller with --controller-bootstrap H:P,H:P,...)"
        )
    harness.require(ApiKey.ENVELOPE, 0, "controller")
    topic = f"kc-suite-standby-{uuid.uuid4().hex[:10]}"
    body, sent = validate_only_envelope(harness, topic)
    harness.note(ApiKey.ENVELOPE, 0, "controller")
    codes = {ep: ask(harness, ep, body) for ep in controllers}
    refused = [
        str(ep) for ep, code in codes.items() if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    ]
    if refused:
        raise MissingPrecondition(
            f"the suite is not a broker principal on the controller listener(s) {refused} "
            "(CLUSTER_AUTHORIZATION_FAILED): no Envelope of its gets as far as the active check"
        )
    answers = ", ".join(f"{ep}: {error_name(c)}({c})" for ep, c in codes.items())
    others = [ep for ep, code in codes.items() if code != ErrorCode.NOT_CONTROLLER]
    verify.check(
        len(others) <= 1,
        f"{sent} to each of {len(codes)} controllers: at most one is active, so every other "
        f"must answer NOT_CONTROLLER({ErrorCode.NOT_CONTROLLER}); {len(others)} did not "
        f"({answers})",
        R5,
        saw=f"{sent}: {answers}",
    )
