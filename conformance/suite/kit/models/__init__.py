"""State-machine models (``specs/models/*.json``) driven against the target over the wire.

A model names states, per-entity variables, request templates, events (a request plus the
transitions it may cause, with guards, expected answers, effects and checks), timeouts the target
applies on its own, invariants observed over the wire and liveness promises. Everything the
model says is tied to requirement ids, so a violation fails exactly those requirements.

:class:`ModelRunner` interprets a model for one set of entities: ``step`` sends an event's real
request, matches the answer against the transitions the model allows from the entity's state and
applies the one that matched; ``check_invariants`` polls the binding's observers until they agree
with the model (within the invariant's settle bound). Timing is honest: an entity whose session
has been silent for part of its timeout may or may not have been timed out by the target, and
both readings are accepted until its next answer decides.

:func:`state_machine` turns a model into a hypothesis ``RuleBasedStateMachine`` with one rule per
event (``register(entity=1)`` …) and the invariants as one ``@invariant``; :func:`run_machine`
runs it with the run's seed, and :func:`tour` walks a fixed path after it (every rule a test
names is then judged whatever the seed drew). A failure's message lists the steps that led to
it, in order, so it can be replayed by hand or with ``--seed`` and the test's id.

What the model cannot know (how to send a request, what a view looks like, how long a session
is) a :class:`Binding` supplies; each feature package has one.

The package follows those seams: :mod:`.spec` reads and validates a model, :mod:`.binding` is
what a target supplies, :mod:`.runner` interprets a model against it, :mod:`.machine` is the
hypothesis adapter. Import the public names from here.
"""

from conformance.suite.kit.models.binding import Binding
from conformance.suite.kit.models.machine import Step, run_machine, state_machine, tour
from conformance.suite.kit.models.runner import (
    ALIVE_SHARE,
    EXPIRED_SHARE,
    EXPIRY_MARGIN,
    POLL_INTERVAL,
    Entity,
    ModelRunner,
    lookup,
)
from conformance.suite.kit.models.spec import (
    MODEL_SCHEMA,
    MODELS_DIR,
    Event,
    Model,
    Outcome,
    Transition,
    load_model,
)

__all__ = [
    "ALIVE_SHARE",
    "EXPIRED_SHARE",
    "EXPIRY_MARGIN",
    "MODELS_DIR",
    "MODEL_SCHEMA",
    "POLL_INTERVAL",
    "Binding",
    "Entity",
    "Event",
    "Model",
    "ModelRunner",
    "Outcome",
    "Step",
    "Transition",
    "load_model",
    "lookup",
    "run_machine",
    "state_machine",
    "tour",
]
