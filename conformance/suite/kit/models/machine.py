"""The hypothesis adapter: a model as a ``RuleBasedStateMachine``, run with the run's seed."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any

from conformance.suite.kit.models.runner import ModelRunner
from conformance.suite.kit.models.spec import Event, Model


def state_machine(
    model: Model,
    make_runner: Callable[[], ModelRunner],
    *,
    events: Iterable[str] | None = None,
    initialize: Iterable[str] = (),
    param_strategies: Callable[[str, dict], Any] | None = None,
) -> type:
    """A ``RuleBasedStateMachine`` with one rule per event (``events``: a subset, e.g. without
    the slow ones) and the model's invariants; each example gets a fresh runner and starts by
    sending the ``initialize`` events to every entity (so that examples begin somewhere)."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
    from hypothesis.stateful import initialize as init_rule

    chosen = [model.events[n] for n in (events or model.events)]
    namespace: dict[str, Any] = {}

    def __init__(self) -> None:
        RuleBasedStateMachine.__init__(self)
        self.runner = make_runner()

    def teardown(self) -> None:
        self.runner.cleanup()

    namespace["__init__"] = __init__
    namespace["teardown"] = teardown

    def params_of(ev: Event) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for pname, spec in ev.params.items():
            if param_strategies is not None:
                out[pname] = param_strategies(pname, spec)
            elif isinstance(spec["from"], list):
                out[pname] = st.sampled_from(spec["from"])
            else:
                raise ValueError(f"{model.name}: no strategy for parameter {pname}")
        return out

    first = [model.events[n] for n in initialize]
    if first:
        drawn = {f"{ev.method}__{p}": s for ev in first for p, s in params_of(ev).items()}

        @init_rule(**drawn)
        def start(self, **values: Any) -> None:
            for ev in first:
                prefix = f"{ev.method}__"
                params = {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)}
                for index in range(self.runner.count):
                    self.runner.step(ev.name, index, params)

        namespace["start"] = start
    for ev in chosen:
        strategies: dict[str, Any] = params_of(ev)
        if ev.wait is None:
            strategies["entity"] = st.integers(0, model.count - 1)
        namespace[ev.method] = rule(**strategies)(_rule(ev.name))

    @invariant()
    def invariants(self) -> None:
        self.runner.check_invariants()

    namespace["invariants"] = invariants
    name = "".join(p.capitalize() for p in model.name.split("-")) + "Machine"
    return type(name, (RuleBasedStateMachine,), namespace)


def _rule(event: str) -> Callable[..., None]:
    def run(self: Any, entity: int | None = None, **params: Any) -> None:
        if entity is not None and entity >= self.runner.count:
            entity %= self.runner.count
        self.runner.step(event, entity, params)

    run.__name__ = event.replace("-", "_")
    return run


#: one step of a fixed walk: (event, entity index, parameters)
Step = tuple[str, int, dict[str, Any]]


def tour(runner: ModelRunner, steps: Sequence[Step]) -> None:
    """Walk ``steps`` in order, each predicted and judged by the model, the invariants after
    each, then clean up. Run after the random examples so that every rule a test names is
    judged in every run whatever the seed drew (a run's examples are few and short). A step the
    model says does not apply from where the walk is is the walk's mistake, not the target's."""
    try:
        for event, index, params in steps:
            if runner.step(event, index, params) is None:
                raise RuntimeError(
                    f"{runner.model.name}: the tour's {event} does not apply to entity "
                    f"{index} in state {runner.entities[index].state}"
                )
            runner.check_invariants()
    finally:
        runner.cleanup()


def run_machine(
    harness: Any, machine: type, *, examples: int | None = None, steps: int = 12
) -> int:
    """Run ``machine`` with the run's seed (no shrinking: each step is a round trip); returns
    how many examples ran. The first failure is raised as the model raised it: hypothesis's
    replay of the failing example raises it again at once (the target need not fail twice, and
    a slow failure, such as a view that never settles, is waited out once)."""
    from hypothesis.errors import Flaky
    from hypothesis.stateful import run_state_machine_as_test

    from conformance.suite.kit.profile import seeded, suite_settings

    harness.notes.seeded = True
    failures: list[BaseException] = []
    count = 0

    class Counted(machine):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            nonlocal count
            if failures:  # hypothesis replays the failing example: report it, do not redo it
                raise failures[0]
            count += 1
            super().__init__()
            self.runner.on_failure = failures.append

    Counted.__name__ = machine.__name__
    try:
        run_state_machine_as_test(
            seeded(Counted, getattr(harness, "seed", None)),
            settings=suite_settings(examples or harness.examples, stateful_step_count=steps),
        )
    except Flaky:
        if failures:
            raise failures[0] from None
        raise
    if count == 0:
        raise RuntimeError("the state machine ran no example")
    return count
