"""Server-side assignors of KIP-848 consumer groups: ``uniform`` and ``range``.

An assignor gets the members' subscriptions (topic ids), the partition count of every subscribed
topic and the current target assignment, and returns the new target assignment (member id ->
topic id -> partitions). Kafka ships the same two (``group.consumer.assignors`` defaults to
``uniform,range``; the first is the default):

* ``uniform`` spreads the partitions of the topics each member subscribes to as evenly as it
  can, keeping a member's current partitions where that stays balanced (sticky);
* ``range`` gives each member, per topic, a contiguous range of the partitions, the members
  subscribed to the topic sorted by member id, the first ones one partition more when the count
  does not divide.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from typing import Protocol

#: member id -> topic id -> partitions
Assignment = dict[str, dict[uuid.UUID, set[int]]]


class Assignor(Protocol):
    name: str

    def assign(
        self,
        subscriptions: Mapping[str, set[uuid.UUID]],
        partitions: Mapping[uuid.UUID, int],
        current: Assignment,
    ) -> Assignment: ...


def _empty(subscriptions: Mapping[str, set[uuid.UUID]]) -> Assignment:
    return {member: {} for member in subscriptions}


class UniformAssignor:
    name = "uniform"

    def assign(
        self,
        subscriptions: Mapping[str, set[uuid.UUID]],
        partitions: Mapping[uuid.UUID, int],
        current: Assignment,
    ) -> Assignment:
        out = _empty(subscriptions)
        members = sorted(subscriptions)
        if not members:
            return out
        every = sorted(
            (t, p)
            for t in set().union(*subscriptions.values())
            if t in partitions
            for p in range(partitions[t])
        )
        eligible = {tp: [m for m in members if tp[0] in subscriptions[m]] for tp in every}
        # a member's fair share among the members subscribed to what it subscribes to
        counts = dict.fromkeys(members, 0)
        quota = {m: _quota(m, subscriptions, eligible) for m in members}
        taken: set[tuple[uuid.UUID, int]] = set()
        for m in members:  # sticky: keep current partitions up to the quota
            kept = sorted(
                (t, p)
                for t, ps in current.get(m, {}).items()
                for p in ps
                if (t, p) in eligible and m in eligible[(t, p)]
            )
            for tp in kept[: quota[m]]:
                out[m].setdefault(tp[0], set()).add(tp[1])
                taken.add(tp)
                counts[m] += 1
        for tp in every:  # the rest to the least loaded eligible member
            if tp in taken or not eligible[tp]:
                continue
            m = min(eligible[tp], key=lambda x: (counts[x], x))
            out[m].setdefault(tp[0], set()).add(tp[1])
            counts[m] += 1
        return out


def _quota(
    member: str,
    subscriptions: Mapping[str, set[uuid.UUID]],
    eligible: Mapping[tuple[uuid.UUID, int], list[str]],
) -> int:
    """The ceiling of the member's share when every partition it may get is shared out."""
    mine = [tp for tp, ms in eligible.items() if member in ms]
    if not mine:
        return 0
    share = sum(1 / len(eligible[tp]) for tp in mine)
    return math.ceil(share - 1e-9)


class RangeAssignor:
    name = "range"

    def assign(
        self,
        subscriptions: Mapping[str, set[uuid.UUID]],
        partitions: Mapping[uuid.UUID, int],
        current: Assignment,
    ) -> Assignment:
        out = _empty(subscriptions)
        for topic, count in partitions.items():
            members = sorted(m for m, topics in subscriptions.items() if topic in topics)
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
