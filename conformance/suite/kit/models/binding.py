"""What a model cannot know about a target, supplied per feature: entity ids, context values,
how to send a request, what a view looks like, how long a session is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from conformance.suite.kit.models.spec import Model


class RunView(Protocol):
    """What a binding's clean-up reads of the run (``runner.ModelRunner``): its model and its
    entities (``runner.Entity``: index, id, state, vars)."""

    model: Model
    entities: Sequence[Any]


class Binding:
    """How a model meets a target: entity ids, context values, requests, views, durations."""

    #: entities of this run (the model's count unless a binding says otherwise)
    count: int | None = None

    def entity_id(self, index: int) -> Any:
        raise NotImplementedError

    def context(self, name: str) -> Any:
        raise NotImplementedError(f"no context value {name!r}")

    def start(self, index: int) -> tuple[str, dict[str, Any]] | None:
        """Where entity ``index`` starts when it exists on the target before the run (a topic
        the suite obtained rather than created, say): its state and the variables that differ
        from the model's initial values. None: the model's initial state."""
        return None

    def duration(self, name: str) -> float:
        raise NotImplementedError(f"no duration {name!r}")

    def holds(self, precondition: str) -> bool:
        """Whether an invariant's ``when`` precondition holds for this target."""
        return False

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        """Send the request template ``name`` (its model definition, with ``version`` and
        ``fresh`` evaluated where given, and the evaluated body) to node ``to`` of its listener
        (None: the bootstrap); the decoded response body."""
        raise NotImplementedError

    def observe(self, name: str) -> dict[str, Any]:
        """Views of the entities: view name -> set of entity indexes (``visible_set``) or
        entity index -> record or None (``per_entity``)."""
        raise NotImplementedError(f"no observer {name!r}")

    def cleanup(self, runner: RunView) -> None:
        """Undo what the run left behind on the target (best effort)."""
