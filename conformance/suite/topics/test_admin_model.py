"""Topic administration as a state machine (``specs/models/topics-admin.json``): hypothesis
mixes create, validate-only create, grow, grow-to-the-same-count and delete on two fresh names,
the model predicting every answer and Metadata checked after each step. Where CreatePartitions
is not advertised the machine runs without the growing events (TOPICS.R8 is then UNSUPPORTED)."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.harness import Harness
from conformance.suite.log.binding import only_when_applicable
from conformance.suite.meta import conformance
from conformance.suite.models import ModelRunner, load_model, run_machine, state_machine
from conformance.suite.topics.binding import AdminBinding

REQS = ("TOPICS.R2", "TOPICS.R5", "TOPICS.R6", "TOPICS.R7", "TOPICS.R8")
EXAMPLES, STEPS = 3, 8


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
