"""What several BROKER-REGISTRATION test modules use: walking a path of the lifecycle
model's events."""

from __future__ import annotations

from conformance.suite.kit import verify
from conformance.suite.kit.models import ModelRunner


def walk(runner: ModelRunner, index: int, path: list[tuple[str, set[str]]]) -> None:
    """Send each event; the model checks the answer, then the views must agree with it."""
    for event, states in path:
        new = runner.step(event, index)
        if new is None:
            raise RuntimeError(f"{event} does not apply to {runner.entities[index].state}")
        verify.check(
            new in states, f"{event} led to {new}, expected {states}", *runner.last_requirements
        )
        runner.check_invariants()
