"""The partition log as a state machine (``specs/models/log-partition.json``): hypothesis mixes
create, produce, fetch (at, past and before the log end), ListOffsets and delete on two fresh
topics, the model predicting every answer; a failure lists the steps that led to it. Each
example starts by creating both topics, appending to each, fetching each from offset 0 and
asking each for its latest offset and fetching each past its end, so that every example reads
back what it wrote and is refused beyond it (LOG.R1, R7, R10) whatever the seed draws next: those
steps need records before them, which the few steps a seed draws often do not give.

A target on which the suite may not create and delete topics (CreateTopics not advertised or
refused, no DeleteTopics) still has its log judged: the two topics are obtained once through
``provision`` (auto-creation, or topics the user gave), start Live, and every example goes on
from where the previous one left their logs, without the create and delete events; LOG.R17
(a deleted topic's log is gone) is then SKIP or UNSUPPORTED, saying which of the two it lacked.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.results.summary import SET_UP_NEEDS
from conformance.results.verdicts import MissingPrecondition, NotApplicable
from conformance.suite.kit import credit
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.models import ModelRunner, load_model, run_machine, state_machine
from conformance.suite.kit.partitions import PRODUCE_VERSIONS, SuiteTopic
from conformance.suite.kit.provision import create_topics_usable
from conformance.suite.log.binding import TopicsBinding, only_when_applicable

REQS = ("LOG.R1", "LOG.R2", "LOG.R6", "LOG.R7", "LOG.R10", "LOG.R17")
#: examples and steps: each step is a round trip, create and delete wait for every broker
EXAMPLES, STEPS = 4, 12
#: what each example starts with, and the events that create and delete topics
FIRST = ["append", "fetch-from-start", "list-latest", "fetch-past-end"]
LIFE = ("create", "delete")


@conformance("log/partition/state-machine", *REQS, api=ApiKey.PRODUCE)
def test_partition_log_state_machine(harness: Harness) -> None:
    harness.pick_version(ApiKey.FETCH, "4-12")
    harness.pick_version(ApiKey.LIST_OFFSETS, "1+")
    harness.pick_version(ApiKey.PRODUCE, PRODUCE_VERSIONS)
    model = load_model("log-partition")
    lacking = topic_life(harness)
    if lacking is None:
        machine = state_machine(
            model,
            lambda: ModelRunner(
                model, TopicsBinding(harness, "log-model", model.count), allowed=REQS
            ),
            initialize=["create", *FIRST],
        )
        only_when_applicable(machine, model)
        run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
        return
    credit.cannot_check(lacking, "LOG.R17")
    judged = [r for r in REQS if r != "LOG.R17"]
    topics: list[SuiteTopic] = []
    ends: dict[str, int] = {}
    try:
        for i in range(model.count):
            topics.append(SuiteTopic.create(harness, f"log-model-{i}"))

        def runner() -> ModelRunner:
            binding = TopicsBinding(harness, "log-model", model.count, topics, ends)
            return ModelRunner(model, binding, allowed=judged)

        events = [e for e in model.events if e not in LIFE]
        machine = state_machine(model, runner, events=events, initialize=FIRST)
        only_when_applicable(machine, model)
        run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
    finally:
        for t in topics:
            t.delete()


def topic_life(harness: Harness) -> NotApplicable | None:
    """None where the model may create and delete its own topics; else why LOG.R17 cannot be
    judged: DeleteTopics, which it judges, not advertised (UNSUPPORTED), or no way to create a
    topic again (SKIP, counted as a set-up the target did not offer)."""
    try:
        harness.pick_version(ApiKey.DELETE_TOPICS)
    except NotApplicable as e:
        return e
    blocked = create_topics_usable(harness)
    if blocked is None:
        harness.pick_version(ApiKey.CREATE_TOPICS)
        return None
    return MissingPrecondition(
        f"{SET_UP_NEEDS} what the target does not offer: {blocked} (the model creates the "
        "topics it deletes)"
    )
