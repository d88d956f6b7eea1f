"""KIP-932 share consumers as a state machine (``specs/models/share-groups-consumers.json``):
hypothesis mixes members joining, heartbeating, records produced, ShareFetch of a member,
ShareAcknowledge of everything it holds (accept, release or reject) and members leaving, on a
fresh share group over a fresh one-partition topic; after every answer no record is held by two
members, delivery counts rise, an accepted or rejected record is never handed out again and the
described members are the model's. Bounded (a few short examples and a fixed tour, with the
run's seed); it is also the share-group model ``diff --models`` compares step by step."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.models import ModelRunner, Step, load_model, run_machine, state_machine
from conformance.suite.kit.models import tour as walk
from conformance.suite.log.binding import only_when_applicable
from conformance.suite.share_groups.binding import ShareGroupBinding
from conformance.suite.share_groups.shared import served

REQS = (
    "SHARE-GROUPS.R2",
    "SHARE-GROUPS.R4",
    "SHARE-GROUPS.R7",
    "SHARE-GROUPS.R9",
    "SHARE-GROUPS.R11",
)
EXAMPLES, STEPS = 2, 6

#: one fixed walk through every event (the random examples are few and short)
TOUR: tuple[Step, ...] = (
    ("join", 0, {}),
    ("produce", 0, {"records": 3}),
    ("fetch", 0, {"member": 0, "max": 1}),
    ("join", 0, {}),
    ("fetch", 0, {"member": 1, "max": 4}),
    ("acknowledge", 0, {"member": 0, "type": "release"}),
    ("produce", 0, {"records": 1}),
    ("fetch", 0, {"member": 1, "max": 4}),
    ("acknowledge", 0, {"member": 1, "type": "reject"}),
    ("heartbeat", 0, {}),
    ("fetch", 0, {"member": 0, "max": 4}),
    ("leave", 0, {}),
    ("fetch", 0, {"member": 0, "max": 4}),
    ("acknowledge", 0, {"member": 0, "type": "accept"}),
    ("leave", 0, {}),
)


@conformance("share-groups/consumers/state-machine", *REQS, api=ApiKey.SHARE_FETCH)
def test_share_consumers_state_machine(harness: Harness) -> None:
    served(harness)
    model = load_model("share-groups-consumers")

    def runner() -> ModelRunner:
        return ModelRunner(model, ShareGroupBinding(harness), allowed=REQS)

    machine = state_machine(model, runner, initialize=["join"])
    only_when_applicable(machine, model)
    run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
    walk(runner(), TOUR)
