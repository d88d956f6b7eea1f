"""KIP-848 consumer group members as a state machine
(``specs/models/consumer-groups-members.json``): hypothesis mixes members joining (dynamic and
static), heartbeating with the partitions they own, leaving, leaving for now as static members
and rejoining, and changing their subscriptions, on a fresh group over two topics; after every
answer and every step no partition is held by two members, no epoch goes back, the group epoch is
at least every member's and, once the members have reconciled, every subscribed partition is
owned once by a member subscribed to its topic. Bounded (a few short examples and a fixed tour,
with the run's seed): a round waits for the target's assignment (Kafka computes it at most every
second)."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.consumer_groups.binding import ConsumerGroupBinding
from conformance.suite.consumer_groups.shared import newest, served
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
from conformance.suite.log.binding import only_when_applicable

REQS = ("CONSUMER-GROUPS.R13", "CONSUMER-GROUPS.R14")
#: examples and steps: every example starts with one member; a round is a second or two
EXAMPLES, STEPS = 2, 5
PARTITIONS = 2

#: one fixed walk through every event (the random examples are few and short)
TOUR: tuple[Step, ...] = (
    ("join", 0, {"static": 0}),
    ("join", 0, {"static": 1}),
    ("subscribe", 0, {"topics": "both"}),
    ("heartbeat", 0, {}),
    ("static-leave", 0, {}),
    ("heartbeat", 0, {}),
    ("static-rejoin", 0, {}),
    ("join", 0, {"static": 0}),
    ("subscribe", 0, {"topics": "one"}),
    ("leave", 0, {}),
    ("leave", 0, {}),
    ("leave", 0, {}),
    ("join", 0, {"static": 0}),
)


@conformance(
    "consumer-groups/members/state-machine",
    *REQS,
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_members_state_machine(harness: Harness) -> None:
    newest(harness, ApiKey.CONSUMER_GROUP_DESCRIBE)
    served(harness)
    model = load_model("consumer-groups-members")
    with Topics(harness, "cg-model", 2, PARTITIONS, exact=True) as topics:
        counts = {t.name: t.partitions for t in topics.obtained}

        def runner() -> ModelRunner:
            return ModelRunner(model, ConsumerGroupBinding(harness, counts), allowed=REQS)

        machine = state_machine(model, runner, initialize=["join"])
        only_when_applicable(machine, model)
        run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
        tour(runner(), TOUR)
