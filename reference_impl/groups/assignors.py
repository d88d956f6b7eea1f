"""Server-side assignors of KIP-848 consumer groups: ``uniform`` and ``range``.

An assignor gets the members' subscriptions (topic ids), the partition count of every subscribed
topic and the current target assignment, and returns the new target assignment (member id ->
topic id -> partitions). Kafka ships the same two (``group.consumer.assignors`` defaults to
``uniform,range``; the first is the default):

* ``uniform`` spreads the partitions of the topics each member subscribes to so that members'
  totals are as even as the subscriptions allow, then keeps a member's current partitions where
  that stays balanced (sticky): ``uniform.py``;
* ``range`` gives each member, per topic, a contiguous range of the partitions, the members
  subscribed to the topic in order (static members first, by instance id, then the others by
  member id), the first ones one partition more when the count does not divide.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Protocol

from reference_impl.groups.uniform import Assignment, uniform

__all__ = ["ASSIGNORS", "DEFAULT_ASSIGNOR", "Assignment", "Assignor"]


class Assignor(Protocol):
    name: str

    def assign(
        self,
        subscriptions: Mapping[str, set[uuid.UUID]],
        partitions: Mapping[uuid.UUID, int],
        current: Assignment,
        instances: Mapping[str, str] | None = None,
    ) -> Assignment: ...


def _empty(subscriptions: Mapping[str, set[uuid.UUID]]) -> Assignment:
    return {member: {} for member in subscriptions}


#: how uniform computes a target: (subscriptions, partition counts, current target) -> target
Compute = Callable[[Mapping[str, set[uuid.UUID]], Mapping[uuid.UUID, int], Assignment], Assignment]


class UniformAssignor:
    """Balance first, then stickiness: ``uniform.py`` (another ``compute`` for tests' faults)."""

    name = "uniform"

    def __init__(self, compute: Compute = uniform) -> None:
        self.compute = compute

    def assign(
        self,
        subscriptions: Mapping[str, set[uuid.UUID]],
        partitions: Mapping[uuid.UUID, int],
        current: Assignment,
        instances: Mapping[str, str] | None = None,
    ) -> Assignment:
        out = _empty(subscriptions)
        out.update(self.compute(subscriptions, partitions, current))
        return out


class RangeAssignor:
    name = "range"

    def assign(
        self,
        subscriptions: Mapping[str, set[uuid.UUID]],
        partitions: Mapping[uuid.UUID, int],
        current: Assignment,
        instances: Mapping[str, str] | None = None,
    ) -> Assignment:
        out = _empty(subscriptions)
        statics = instances or {}
        # static members first, by instance id, then the others by member id (Kafka's order)
        order = sorted(subscriptions, key=lambda m: (m not in statics, statics.get(m, m)))
        for topic, count in partitions.items():
            members = [m for m in order if topic in subscriptions[m]]
            if not members:
                continue
            per, extra = divmod(count, len(members))
            start = 0
            for i, m in enumerate(members):
                n = per + (1 if i < extra else 0)
                if n:
                    out[m][topic] = set(range(start, start + n))
                start += n
        return out


#: Kafka's group.consumer.assignors default, in order: the first is the default assignor
ASSIGNORS: dict[str, Assignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
DEFAULT_ASSIGNOR = "uniform"
