"""Consumer groups as a state machine (``specs/models/groups-membership.json``): hypothesis mixes
members joining and leaving, heartbeats (current, stale, unknown), member and simple commits,
fetches and deletions on two fresh groups, delete-then-use included; the model predicts every
answer and what DescribeGroups and ListGroups show; a failure lists the steps that led to it.
Where the target lacks DescribeGroups, ListGroups or DeleteGroups, the model runs without the
view or event that needs it, and only the requirements judging that API are UNSUPPORTED."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.results.verdicts import NotApplicable
from conformance.suite.groups.binding import GroupsBinding
from conformance.suite.kit import credit
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


#: the group administration APIs, each with what the model does with it and the requirements
#: that judge it (UNSUPPORTED where it is not advertised; the membership rules are judged all
#: the same, on a target that serves only the classic group APIs)
ADMIN: tuple[tuple[int, str, tuple[str, ...]], ...] = (
    (ApiKey.DESCRIBE_GROUPS, "invariant described", ("GROUPS.R13", "GROUPS.R14")),
    (ApiKey.LIST_GROUPS, "invariant listed", ("GROUPS.R15",)),
    (ApiKey.DELETE_GROUPS, "event delete", ("GROUPS.R17", "GROUPS.R18", "GROUPS.R19")),
)


@conformance("groups/membership/state-machine", *REQS, api=ApiKey.JOIN_GROUP)
def test_groups_state_machine(harness: Harness) -> None:
    harness.pick_version(ApiKey.OFFSET_COMMIT, "1+")
    harness.pick_version(ApiKey.OFFSET_FETCH, "1+")
    model = load_model("groups-membership")
    left_out: set[str] = set()
    for api, part, reqs in ADMIN:
        try:
            harness.require(api)
        except NotApplicable as e:
            credit.cannot_check(e, *reqs)
            left_out.add(part)
    events = [e for e in model.events if f"event {e}" not in left_out]
    invariants = [i["name"] for i in model.invariants if f"invariant {i['name']}" not in left_out]
    steps = [s for s in TOUR if s[0] in events]
    with Topics(harness, "groups-model") as topics:
        (topic,) = topics

        def runner() -> ModelRunner:
            binding = GroupsBinding(harness, topic, model.count)
            return ModelRunner(model, binding, allowed=REQS, invariants=invariants)

        machine = state_machine(model, runner, events=events, initialize=["join-member"])
        only_when_applicable(machine, model)
        run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
        tour(runner(), steps)
