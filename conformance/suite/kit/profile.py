"""The suite's one hypothesis profile, used by every property test and state machine.

Each example is a round trip to the target, so: no shrinking (a failing example is reported as
drawn; the run's seed reproduces it), no example database (nothing is kept between runs), no
deadline (the target's latency is not the property), no health checks (generation is cheap, the
target is not), one failure reported rather than a group. The number of examples (``--examples``)
and, for state machines, the steps per example are the only things a test chooses. The run's
seed is applied with hypothesis's public ``seed`` decorator.
"""

from __future__ import annotations

from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, seed, settings

PROFILE = "kafka-conformance-suite"

settings.register_profile(
    PROFILE,
    derandomize=False,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=list(HealthCheck),
    phases=(Phase.explicit, Phase.reuse, Phase.generate),
    report_multiple_bugs=False,
)

T = TypeVar("T")


def suite_settings(examples: int, **extra: Any) -> settings:
    """The suite profile with ``examples`` examples (and ``extra``, e.g. stateful_step_count)."""
    return settings(settings.get_profile(PROFILE), max_examples=examples, **extra)


def seeded(test: T, run_seed: int | None) -> T:
    """``test`` (a @given function or a state machine class) drawing from the run's seed."""
    return test if run_seed is None else seed(run_seed)(test)
