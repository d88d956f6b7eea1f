"""Consumer groups as a state machine (``specs/models/groups-membership.json``): hypothesis mixes
members joining and leaving, heartbeats (current, stale, unknown), member and simple commits,
fetches and deletions on two fresh groups, delete-then-use included; the model predicts every
answer and what DescribeGroups and ListGroups show; a failure lists the steps that led to it."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.groups.binding import GroupsBinding
from conformance.suite.groups.members import fresh_name
from conformance.suite.harness import Harness
from conformance.suite.log.binding import only_when_applicable
from conformance.suite.meta import conformance
from conformance.suite.models import ModelRunner, load_model, run_machine, state_machine
from conformance.suite.offsets.commits import delete_topics
from conformance.suite.records_io import create_topic

REQS = tuple(f"GROUPS.R{n}" for n in (3, 4, 5, 6, 7, 8, 9, 13, 14, 15, 17, 18, 19, 20, 21))
#: examples and steps: a join or leave is a whole rebalance round; every example starts with
#: one member in each group (so that most steps meet a live group), deletion comes after leaves
EXAMPLES, STEPS = 5, 12


@conformance("groups/membership/state-machine", *REQS, api=ApiKey.JOIN_GROUP)
def test_groups_state_machine(harness: Harness) -> None:
    for api in (ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS, ApiKey.DELETE_GROUPS):
        harness.require(api)
    harness.pick_version(ApiKey.OFFSET_COMMIT, "1+")
    harness.pick_version(ApiKey.OFFSET_FETCH, "1+")
    model = load_model("groups-membership")
    topic = fresh_name("topic")
    create_topic(harness, topic, 1)
    try:
        machine = state_machine(
            model,
            lambda: ModelRunner(model, GroupsBinding(harness, topic, model.count), allowed=REQS),
            initialize=["join-member"],
        )
        only_when_applicable(machine, model)
        run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
    finally:
        delete_topics(harness, [topic])
