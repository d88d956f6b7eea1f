"""Consumer groups as a state machine (``specs/models/groups-membership.json``): hypothesis mixes
members joining and leaving, heartbeats (current, stale, unknown), member and simple commits,
fetches and deletions on two fresh groups, delete-then-use included; the model predicts every
answer and what DescribeGroups and ListGroups show; a failure lists the steps that led to it."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.groups.binding import GroupsBinding
from conformance.suite.harness import Harness
from conformance.suite.log.binding import only_when_applicable
from conformance.suite.meta import conformance
from conformance.suite.models import ModelRunner, Step, load_model, run_machine, state_machine, tour
from conformance.suite.provision import delete_topics, obtain

REQS = tuple(f"GROUPS.R{n}" for n in (3, 4, 5, 6, 7, 8, 9, 13, 14, 15, 17, 18, 19, 20, 21))
#: examples and steps: a join or leave is a whole rebalance round; every example starts with
#: one member in each group (so that most steps meet a live group), deletion comes after leaves
EXAMPLES, STEPS = 5, 12


#: one fixed walk through every event and every state it is defined in (group 0 is taken
#: through its whole life, group 1 is never joined): the random examples are few and short, so
#: that a rule they did not draw (a deletion, an unknown member) is still judged in every run
TOUR: tuple[Step, ...] = (
    ("unknown-heartbeat", 1, {}),
    ("delete", 1, {}),
    ("join-member", 0, {}),
    ("heartbeat", 0, {}),
    ("unknown-heartbeat", 0, {}),
    ("stale-heartbeat", 0, {}),
    ("commit", 0, {"offset": 7}),
    ("stale-commit", 0, {"offset": 13}),
    ("fetch", 0, {}),
    ("delete", 0, {}),
    ("leave-member", 0, {}),
    ("simple-commit", 0, {"offset": 55}),
    ("fetch", 0, {}),
    ("delete", 0, {}),
    ("delete", 0, {}),
    ("fetch", 0, {}),
)


@conformance("groups/membership/state-machine", *REQS, api=ApiKey.JOIN_GROUP)
def test_groups_state_machine(harness: Harness) -> None:
    for api in (ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS):
        harness.require(api)
    harness.pick_version(ApiKey.OFFSET_COMMIT, "1+")
    harness.pick_version(ApiKey.OFFSET_FETCH, "1+")
    model = load_model("groups-membership")
    topic = obtain(harness, "groups-model").name
    try:
        machine = state_machine(
            model,
            lambda: ModelRunner(model, GroupsBinding(harness, topic, model.count), allowed=REQS),
            initialize=["join-member"],
        )
        only_when_applicable(machine, model)
        run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
        tour(ModelRunner(model, GroupsBinding(harness, topic, model.count), allowed=REQS), TOUR)
    finally:
        delete_topics(harness, [topic])
