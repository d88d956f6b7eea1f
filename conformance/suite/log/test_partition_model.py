"""The partition log as a state machine (``specs/models/log-partition.json``): hypothesis mixes
create, produce, fetch (at, past and before the log end), ListOffsets and delete on two fresh
topics, the model predicting every answer; a failure lists the steps that led to it. Each
example starts by creating both topics, appending to each, fetching each from offset 0 and
asking each for its latest offset and fetching each past its end, so that every example reads
back what it wrote and is refused beyond it (LOG.R1, R7, R10) whatever the seed draws next: those
steps need records before them, which the few steps a seed draws often do not give."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.harness import Harness
from conformance.suite.log.binding import TopicsBinding, only_when_applicable
from conformance.suite.meta import conformance
from conformance.suite.models import ModelRunner, load_model, run_machine, state_machine
from conformance.suite.partitions import PRODUCE_VERSIONS

REQS = ("LOG.R1", "LOG.R2", "LOG.R6", "LOG.R7", "LOG.R10", "LOG.R17")
#: examples and steps: each step is a round trip, create and delete wait for every broker
EXAMPLES, STEPS = 4, 12


@conformance("log/partition/state-machine", *REQS, api=ApiKey.PRODUCE)
def test_partition_log_state_machine(harness: Harness) -> None:
    for api_key, within in (
        (ApiKey.FETCH, "4-12"),
        (ApiKey.LIST_OFFSETS, "1+"),
        (ApiKey.CREATE_TOPICS, None),
    ):
        harness.pick_version(api_key, within)
    harness.pick_version(ApiKey.DELETE_TOPICS)
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    model = load_model("log-partition")
    machine = state_machine(
        model,
        lambda: ModelRunner(model, TopicsBinding(harness, "log-model", model.count), allowed=REQS),
        initialize=["create", "append", "fetch-from-start", "list-latest", "fetch-past-end"],
    )
    only_when_applicable(machine, model)
    run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
