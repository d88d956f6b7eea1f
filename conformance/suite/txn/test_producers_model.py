"""Transactional producers and their consumers as a state machine (``specs/models/
txn-producers.json``): hypothesis mixes InitProducerId, AddPartitionsToTxn, transactional
Produce, commit, abort, and read_committed / read_uncommitted reads over two producers, each
writing to a topic of its own, the model predicting every offset, marker, last stable offset
and what each consumer gets. A fixed tour then takes every rule once whatever the seed drew:
a write and an EndTxn outside any transaction, an empty transaction, commits and aborts, a new
InitProducerId while a transaction is open (fenced and aborted), reads at each stage."""

from __future__ import annotations

from conformance.protocol import ApiKey
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.models import ModelRunner, load_model, run_machine, state_machine, tour
from conformance.suite.log.binding import only_when_applicable
from conformance.suite.txn import txns
from conformance.suite.txn.binding import ProducersBinding

REQS = (
    "TXN.R1",
    "TXN.R2",
    "TXN.R3",
    "TXN.R4",
    "TXN.R5",
    "TXN.R6",
    "TXN.R7",
    "TXN.R11",
    "TXN.R12",
)
EXAMPLES, STEPS = 2, 10
ONE = {"count": 1}
#: every rule of the model, in an order the model allows, on entity 0
TOUR = [
    ("init", 0, {}),
    ("produce", 0, ONE),
    ("commit", 0, {}),
    ("add-partition", 0, {}),
    ("read-committed", 0, {}),
    ("commit", 0, {}),
    ("add-partition", 0, {}),
    ("produce", 0, {"count": 2}),
    ("read-committed", 0, {}),
    ("list-committed", 0, {}),
    ("read-uncommitted", 0, {}),
    ("produce", 0, ONE),
    ("abort", 0, {}),
    ("read-committed", 0, {}),
    ("add-partition", 0, {}),
    ("produce", 0, ONE),
    ("commit", 0, {}),
    ("read-committed", 0, {}),
    ("read-uncommitted", 0, {}),
    ("list-committed", 0, {}),
    ("init", 0, {}),
    ("add-partition", 0, {}),
    ("produce", 0, ONE),
    ("init", 0, {}),
    ("read-committed", 0, {}),
    ("read-uncommitted", 0, {}),
    ("add-partition", 0, {}),
    ("init", 0, {}),
    ("add-partition", 0, {}),
    ("abort", 0, {}),
    ("read-committed", 0, {}),
]


@conformance("txn/producers/state-machine", *REQS, api=ApiKey.END_TXN)
def test_transactional_producers_state_machine(harness: Harness) -> None:
    harness.pick_version(ApiKey.FIND_COORDINATOR, "1+")
    harness.pick_version(ApiKey.INIT_PRODUCER_ID)
    harness.pick_version(ApiKey.ADD_PARTITIONS_TO_TXN, txns.ADD_PARTITIONS_VERSIONS)
    harness.pick_version(ApiKey.FETCH, "4-12")
    harness.pick_version(ApiKey.LIST_OFFSETS, "2+")
    harness.pick_version(ApiKey.PRODUCE, txns.CLASSIC_PRODUCE)
    harness.pick_version(ApiKey.END_TXN, txns.CLASSIC_END)
    model = load_model("txn-producers")

    def runner(count: int) -> ModelRunner:
        return ModelRunner(model, ProducersBinding(harness, count, REQS), allowed=REQS)

    machine = state_machine(model, lambda: runner(model.count), initialize=["init"])
    only_when_applicable(machine, model)
    run_machine(harness, machine, examples=EXAMPLES, steps=STEPS)
    tour(runner(1), TOUR)
