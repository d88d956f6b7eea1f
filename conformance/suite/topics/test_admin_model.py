"""Topic administration as a state machine (``specs/models/topics-admin.json``): hypothesis
mixes create, validate-only create, grow, grow-to-the-same-count and delete on two fresh names,
the model predicting every answer and Metadata checked after each step. Where CreatePartitions
is not advertised the machine runs without the growing events (TOPICS.R8 is then UNSUPPORTED).
After the random examples, one fixed TOUR takes each event once, so that every requirement the
test names is judged whatever the seed drew."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.models import (
    ModelRunner,
    Step,
    load_model,
    run_machine,
    state_machine,
    tour,
)
from conformance.suite.log.binding import only_when_applicable
from conformance.suite.topics.binding import AdminBinding

REQS = ("TOPICS.R2", "TOPICS.R5", "TOPICS.R6", "TOPICS.R7", "TOPICS.R8")
EXAMPLES, STEPS = 3, 8
#: topic 0 created, created again, grown, kept at its count and deleted; topic 1 only validated
TOUR: tuple[Step, ...] = (
    ("create", 0, {"partitions": 1}),
    ("create", 0, {"partitions": 2}),
    ("validate", 1, {"partitions": 2}),
    ("validate", 0, {"partitions": 1}),
    ("grow", 0, {}),
    ("keep-count", 0, {}),
    ("delete", 0, {}),
    ("delete", 0, {}),
)


@conformance("topics/admin/state-machine", *REQS, api=ApiKey.CREATE_TOPICS)
def test_topic_admin_state_machine(harness: Harness) -> None:
    harness.pick_version(ApiKey.METADATA, "1+")
    harness.pick_version(ApiKey.DELETE_TOPICS)
    events = ["create", "validate", "delete"]
    if harness.can_check(ApiKey.CREATE_PARTITIONS, "TOPICS.R8"):
        events += ["grow", "keep-count"]
    harness.pick_version(ApiKey.CREATE_TOPICS, "1+")
    model = load_model("topics-admin")

    def runner() -> ModelRunner:
        return ModelRunner(model, AdminBinding(harness, "topics-model", model.count), allowed=REQS)

    machine = state_machine(model, runner, events=events)
    only_when_applicable(machine, model)
    run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
    tour(runner(), [s for s in TOUR if s[0] in events])
