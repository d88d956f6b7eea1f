"""Topic configs as a state machine (``specs/models/configs-topic.json``): hypothesis mixes SET,
DELETE, validate-only and invalid SETs of three numeric configs of a fresh topic; every
broker's DescribeConfigs must agree with the model after each step. After the random examples,
one fixed TOUR takes each event once, so that every requirement the test names is judged
whatever the seed drew."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.configs.binding import TopicConfigsBinding
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
from conformance.suite.kit.provision import Topics

REQS = ("CONFIGS.R1", "CONFIGS.R2", "CONFIGS.R4", "CONFIGS.R7", "CONFIGS.R8", "CONFIGS.R9")
EXAMPLES, STEPS = 3, 10
#: config 0 set, set validate-only, set to a value it cannot take, and returned to its default
TOUR: tuple[Step, ...] = (
    ("set", 0, {"value": "3600000"}),
    ("validate-set", 0, {"value": "999"}),
    ("invalid-set", 0, {}),
    ("delete", 0, {}),
)


@conformance("configs/topic/state-machine", *REQS, api=ApiKey.INCREMENTAL_ALTER_CONFIGS)
def test_topic_configs_state_machine(harness: Harness) -> None:
    harness.pick_version(ApiKey.DESCRIBE_CONFIGS, "1+")
    harness.require(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    model = load_model("configs-topic")
    with Topics(harness, "configs-model", given=False) as topics:
        (topic,) = topics
        machine = state_machine(
            model,
            lambda: ModelRunner(model, TopicConfigsBinding(harness, topic), allowed=REQS),
        )
        run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
        tour(ModelRunner(model, TopicConfigsBinding(harness, topic), allowed=REQS), TOUR)
