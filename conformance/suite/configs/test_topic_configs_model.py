"""Topic configs as a state machine (``specs/models/configs-topic.json``): hypothesis mixes SET,
DELETE, validate-only and invalid SETs of three numeric configs of a fresh topic; every
broker's DescribeConfigs must agree with the model after each step."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.configs.binding import TopicConfigsBinding
from conformance.suite.harness import Harness
from conformance.suite.meta import conformance
from conformance.suite.models import ModelRunner, load_model, run_machine, state_machine
from conformance.suite.provision import delete_topics, obtain

REQS = ("CONFIGS.R1", "CONFIGS.R2", "CONFIGS.R4", "CONFIGS.R7", "CONFIGS.R8", "CONFIGS.R9")
EXAMPLES, STEPS = 3, 10


@conformance("configs/topic/state-machine", *REQS, api=ApiKey.INCREMENTAL_ALTER_CONFIGS)
def test_topic_configs_state_machine(harness: Harness) -> None:
    harness.pick_version(ApiKey.DESCRIBE_CONFIGS, "1+")
    harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    model = load_model("configs-topic")
    topic = obtain(harness, "configs-model", given=False).name
    try:
        machine = state_machine(
            model,
            lambda: ModelRunner(model, TopicConfigsBinding(harness, topic), allowed=REQS),
        )
        run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
    finally:
        delete_topics(harness, [topic])
