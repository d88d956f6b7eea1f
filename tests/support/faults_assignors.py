"""Faulty ``uniform`` assignors for ``tests/reference/groups/test_assignors.py``. The first
balances per topic instead of by members' totals (the reference's before session 13): a member
keeps its current partitions up to its fair share of the topics it subscribes to, the rest goes
to the least loaded subscriber, so a member owning two topics of two partitions keeps one or
both partitions of the topic a newcomer subscribes to (3 and 1, or 4 and 0, by topic order),
where Kafka 4.x gives the newcomer that whole topic (2 and 2)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from functools import partial

from reference_impl.groups.assignors import Assignment, UniformAssignor
from reference_impl.groups.uniform import uniform

TopicPartition = tuple[uuid.UUID, int]


def per_topic_share(
    subscriptions: Mapping[str, set[uuid.UUID]],
    partitions: Mapping[uuid.UUID, int],
    current: Assignment,
) -> Assignment:
    members = sorted(subscriptions)
    out: Assignment = {m: {} for m in members}
    every = sorted(
        (t, p)
        for ts in subscriptions.values()
        for t in ts
        if t in partitions
        for p in range(partitions[t])
    )
    eligible = {tp: [m for m in members if tp[0] in subscriptions[m]] for tp in set(every)}
    counts = dict.fromkeys(members, 0)
    taken: set[TopicPartition] = set()
    for m in members:
        share = sum(1 / len(ms) for ms in eligible.values() if m in ms)
        kept = sorted(
            (t, p)
            for t, ps in current.get(m, {}).items()
            for p in ps
            if (t, p) in eligible and m in eligible[(t, p)]
        )
        for t, p in kept[: math.ceil(share - 1e-9)]:
            out[m].setdefault(t, set()).add(p)
            taken.add((t, p))
            counts[m] += 1
    for t, p in sorted(set(every) - taken):
        m = min(eligible[(t, p)], key=lambda x: (counts[x], x))
        out[m].setdefault(t, set()).add(p)
        counts[m] += 1
    return out


#: the faulty assignor
PER_TOPIC_SHARE = UniformAssignor(per_topic_share)

#: the faulty homogeneous quotas: every extra partition to the first members in order, even one
#: owning none while a later member owns one it must then give up (a needless move)
EXTRA_TO_THE_FIRST = UniformAssignor(partial(uniform, leave_extra=False))
