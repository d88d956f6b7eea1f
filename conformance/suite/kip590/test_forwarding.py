"""KIP-590: admin mutations sent to any broker take effect cluster-wide (the controller applies
them) and the controller's answer, errors included, comes back through the broker.

Each focused test sends one mutation to every broker in turn and checks, through the
controller-routing model's invariant, that every broker shows it within the propagation bound
(the topic it needs is created first through the broker Metadata names as the controller, so
that each test judges its own mutation);
the state machine mixes them on two suite topics with the receiving broker drawn. KIP-590.R3
(the controller's error passed back) is judged only through brokers that forward: a single node
is its own controller, and there R3 is SKIP naming that. Only suite-owned topics are created,
changed and deleted.
"""

from __future__ import annotations

from hypothesis import strategies as st

from conformance.protocol import ApiKey
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kip590 import binding as rb
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import credit, verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.models import ModelRunner, run_machine, state_machine, tour

R1, R3 = "KIP-590.R1", "KIP-590.R3"
RETENTIONS = ["3600000", "7200000", "86400000", "604800000"]
STEPS = 8


def step(runner: ModelRunner, event: str, index: int, broker: int, **params: str) -> None:
    if runner.step(event, index, {"broker": broker, **params}) is None:
        raise RuntimeError(f"{event} does not apply to {runner.entities[index].state}")
    runner.check_invariants()


def prepare(harness: Harness, event: str, allowed: tuple[str, ...], count: int | None = None):
    rb.require_event(harness, event)
    brokers = listed_brokers(harness, allowed)
    return brokers, rb.new_runner(harness, brokers, allowed, count)


def listed_brokers(harness: Harness, req_ids: tuple[str, ...]) -> list[cluster.Broker]:
    """The brokers to send through; none listed fails (it credits nothing: no check ran)."""
    brokers = cluster.brokers(harness)
    if not brokers:
        raise verify.Failed("Metadata lists no broker", *req_ids)
    return brokers


@conformance("kip-590/create-topics/each-broker", R1, api=ApiKey.CREATE_TOPICS)
def test_create_topics_through_each_broker(harness: Harness) -> None:
    rb.require_event(harness, "create")
    brokers = cluster.brokers(harness)
    runner = rb.new_runner(harness, brokers, (R1,), count=len(brokers))
    try:
        for b in range(len(brokers)):
            step(runner, "create", b, b)
    finally:
        runner.cleanup()


@conformance(
    "kip-590/incremental-alter-configs/each-broker", R1, api=ApiKey.INCREMENTAL_ALTER_CONFIGS
)
def test_alter_configs_through_each_broker(harness: Harness) -> None:
    brokers, runner = prepare(harness, "alter-retention", (R1,), count=1)
    try:
        step(runner, "create", 0, rb.setup_broker(harness, brokers))
        for b in range(len(brokers)):
            step(runner, "alter-retention", 0, b, value=RETENTIONS[b % len(RETENTIONS)])
    finally:
        runner.cleanup()


@conformance("kip-590/create-partitions/each-broker", R1, api=ApiKey.CREATE_PARTITIONS)
def test_create_partitions_through_each_broker(harness: Harness) -> None:
    brokers, runner = prepare(harness, "add-partition", (R1,), count=1)
    try:
        step(runner, "create", 0, rb.setup_broker(harness, brokers))
        for b in range(len(brokers)):
            step(runner, "add-partition", 0, b)
    finally:
        runner.cleanup()


@conformance("kip-590/delete-topics/each-broker", R1, api=ApiKey.DELETE_TOPICS)
def test_delete_topics_through_each_broker(harness: Harness) -> None:
    rb.require_event(harness, "delete")
    brokers = cluster.brokers(harness)
    n = len(brokers)
    runner = rb.new_runner(harness, brokers, (R1,), count=n)
    creator = rb.setup_broker(harness, brokers)
    try:
        for b in range(n):
            step(runner, "create", b, creator)
            step(runner, "delete", b, b)
    finally:
        runner.cleanup()


@conformance("kip-590/create-topics/inner-error-passed-back", R3, api=ApiKey.CREATE_TOPICS)
def test_the_controllers_error_comes_back(harness: Harness) -> None:
    """Creating a topic that exists, through every broker that forwards: the controller's
    TOPIC_ALREADY_EXISTS comes back. A target that forwards nothing is SKIP, naming why."""
    rb.require_event(harness, "create")
    brokers = listed_brokers(harness, (R3,))
    forwarding = rb.forwarding_brokers(harness, brokers)
    if not forwarding:
        raise MissingPrecondition(rb.no_forwarding(brokers))
    runner = rb.new_runner(harness, forwarding, (R3,), count=1)
    try:
        step(runner, "create", 0, 0)
        for b in range(len(forwarding)):
            step(runner, "create", 0, b)  # TOPIC_ALREADY_EXISTS, from whichever broker
    finally:
        runner.cleanup()


@conformance("kip-590/routing/state-machine", R1, R3, api=ApiKey.CREATE_TOPICS)
def test_state_machine(harness: Harness) -> None:
    events = rb.available(harness)
    brokers = listed_brokers(harness, (R1, R3))
    judged: tuple[str, ...] = (R1, R3)
    if not rb.forwarding_brokers(harness, brokers):
        credit.cannot_check(MissingPrecondition(rb.no_forwarding(brokers)), R3)
        judged = (R1,)

    def strategy(name: str, spec: dict):
        if name == "broker":
            return st.sampled_from(range(len(brokers)))
        return st.sampled_from(spec["from"])

    machine = state_machine(
        rb.model(),
        lambda: rb.new_runner(harness, brokers, judged),
        events=events,
        initialize=["create"],
        param_strategies=strategy,
    )
    run_machine(harness, machine, steps=STEPS)
    # one fixed walk after the random examples: every rule judged whatever the seed drew (a
    # second create through another broker is the controller's error passed back, R3)
    last = len(brokers) - 1
    walk = [
        ("create", 0, {"broker": 0}),
        ("create", 0, {"broker": last}),
        ("add-partition", 0, {"broker": last}),
        ("alter-retention", 0, {"broker": 0, "value": RETENTIONS[0]}),
        ("delete", 0, {"broker": last}),
    ]
    tour(rb.new_runner(harness, brokers, judged), [s for s in walk if s[0] in events])
