"""KIP-848's ``uniform`` server-side assignor, as Kafka 4.x computes it (facts read from its
group coordinator: balance first, stickiness second).

Two cases, as Kafka has:

* every member subscribes to the same topics (*homogeneous*): each member gets the floor of
  partitions / members, members (in order) one more until the remainder is used, except that a
  member owning too few to fill that extra one leaves it to a later member while enough are
  still to come; a member keeps its current partitions up to its quota and gives back the rest;
  what is free then fills the members below their quota, in member order;
* the subscriptions differ (*heterogeneous*): a member keeps every current partition of a topic
  it still subscribes to; the free partitions go, topic by topic (most partitions per subscriber
  first), to the subscribers with the fewest partitions *in total*; then each topic with two
  subscribers or more is levelled, moving the highest partitions of its most loaded subscribers
  to its least loaded ones until their totals differ by one at most, the topics walked again
  (16 rounds at most) until a whole round moves nothing. So a member owning two topics gives a
  second member subscribed to one of them that whole topic when that evens their totals.

The members are taken in Kafka's order, where ties between members of equal load fall: that of
the ``java.util.HashMap`` of member ids its group spec is (``member_order``: by bucket of the id's
``String.hashCode``, then in the order the group lists them, its members by join).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping

#: member id -> topic id -> partitions
Assignment = dict[str, dict[uuid.UUID, set[int]]]

#: Kafka stops levelling after this many rounds over the topics
ROUNDS = 16


def _java_order(topic: uuid.UUID) -> tuple[int, int]:
    """Kafka's Uuid order: its two halves compared as signed 64-bit numbers."""
    high, low = topic.int >> 64, topic.int & ((1 << 64) - 1)
    return (
        high - (1 << 64) if high >= 1 << 63 else high,
        low - (1 << 64) if low >= 1 << 63 else low,
    )


def member_order(members: list[str]) -> list[str]:
    """The order a ``java.util.HashMap`` (16 buckets, doubled past three quarters full) iterates
    these string keys put in this order: by bucket (``String.hashCode``, its high half folded
    into the low one, masked), then by insertion."""
    buckets = 16
    while len(members) > buckets * 3 // 4:
        buckets *= 2

    def bucket(key: str) -> int:
        h = 0
        for unit in key.encode("utf-16-be").hex(" ", 2).split():
            h = (31 * h + int(unit, 16)) & 0xFFFFFFFF
        return (h ^ (h >> 16)) & (buckets - 1)

    place = {m: i for i, m in enumerate(members)}
    return sorted(members, key=lambda m: (bucket(m), place[m]))


def uniform(
    subscriptions: Mapping[str, set[uuid.UUID]],
    partitions: Mapping[uuid.UUID, int],
    current: Assignment,
    *,
    leave_extra: bool = True,
) -> Assignment:
    """The target; ``subscriptions`` in the order the group lists its members (``leave_extra``
    False: the rule of Kafka before 4.x's, every extra to the first members, a tests' fault)."""
    members = member_order(list(subscriptions))
    if not members:
        return {}
    topics = [set(t for t in subscriptions[m] if t in partitions) for m in members]
    if all(t == topics[0] for t in topics):
        return _homogeneous(members, topics[0], partitions, current, leave_extra)
    return _Heterogeneous(members, dict(zip(members, topics, strict=True)), partitions).build(
        current
    )


def _homogeneous(
    members: list[str],
    topics: set[uuid.UUID],
    partitions: Mapping[uuid.UUID, int],
    current: Assignment,
    leave_extra: bool,
) -> Assignment:
    held = {(t, p) for m in members for t, ps in current.get(m, {}).items() for p in ps}
    free = [
        (t, p)
        for t in sorted(topics, key=_java_order)
        for p in range(partitions[t])
        if (t, p) not in held
    ]
    total = sum(partitions[t] for t in topics)
    floor, extra = divmod(total, len(members))
    out: Assignment = {}
    room: list[tuple[str, int]] = []
    for i, m in enumerate(members):
        bonus = extra > 0  # one of the remainder's partitions, tentatively
        quota = floor + bonus
        mine: dict[uuid.UUID, set[int]] = {}
        for t, ps in sorted(current.get(m, {}).items(), key=lambda x: _java_order(x[0])):
            if t not in topics:
                continue
            for p in sorted(ps):
                if p >= partitions[t]:
                    continue
                if quota > 0:
                    mine.setdefault(t, set()).add(p)
                    quota -= 1
                else:
                    free.append((t, p))
        out[m] = mine
        # a member that did not fill its extra one gives it up while enough members are still
        # to come to take every remaining extra (Kafka 4.4.0, from its bytecode)
        if leave_extra and quota > 0 and bonus and len(members) - i > extra:
            quota, bonus = quota - 1, False
        if quota > 0:
            room.append((m, quota))
        extra -= bonus
    for m, quota in room:
        for t, p in free[:quota]:
            out[m].setdefault(t, set()).add(p)
        free = free[quota:]
    return out


class _Levels:
    """The members of one topic by load, read from both ends: ``lightest`` hands out members to
    give a partition to, a level at a time (every member at the lowest count once, then the
    level rises and takes in the members now at it); ``heaviest`` does the same downwards for
    members to take one from, and ``skip`` drops the member it last named (it has nothing of
    the topic left to give). ``even`` is when the two levels are within one of each other."""

    def __init__(self, load: dict[str, int], index: dict[str, int], members: list[str]) -> None:
        self.load = load
        self.row = sorted(members, key=lambda m: (load[m], index[m]))
        n = len(self.row)
        self.low_end, self.low_at, self.low_level = 0, 0, load[self.row[0]] - 1
        self.high_start, self.high_end, self.high_at = n, n, n - 1
        self.high_level = load[self.row[-1]] + 1

    def spread(self) -> int:
        return self.load[self.row[-1]] - self.load[self.row[0]]

    def lightest(self) -> str:
        if self.low_at >= self.low_end:
            self.low_level += 1
            while (
                self.low_end < len(self.row) and self.load[self.row[self.low_end]] == self.low_level
            ):
                self.low_end += 1
            self.low_at = 0
        self.low_at += 1
        return self.row[self.low_at - 1]

    def heaviest(self) -> str | None:
        if self.high_at < self.high_start:
            if self.high_end <= self.high_start and self.high_start > 0:
                self.high_level = self.load[self.row[self.high_start - 1]]
            else:
                self.high_level -= 1
            while (
                self.high_start > 0 and self.load[self.row[self.high_start - 1]] == self.high_level
            ):
                self.high_start -= 1
            self.high_at = self.high_end - 1
        if self.high_at < 0:
            return None
        self.high_at -= 1
        return self.row[self.high_at + 1]

    def skip(self) -> None:
        i, last = self.high_at + 1, self.high_end - 1
        self.row[i], self.row[last] = self.row[last], self.row[i]
        self.high_end -= 1

    def even(self) -> bool:
        return self.high_level - self.low_level <= 1


class _Heterogeneous:
    def __init__(
        self,
        members: list[str],
        topics: dict[str, set[uuid.UUID]],
        partitions: Mapping[uuid.UUID, int],
    ) -> None:
        self.index = {m: i for i, m in enumerate(members)}
        self.topics = topics
        self.partitions = partitions
        self.subscribers: dict[uuid.UUID, list[str]] = {}
        for m in members:
            for t in topics[m]:
                self.subscribers.setdefault(t, []).append(m)
        self.load = dict.fromkeys(members, 0)
        self.owner: dict[tuple[uuid.UUID, int], str] = {}
        self.out: Assignment = {m: {} for m in members}

    def by_share(self, topics: set[uuid.UUID]) -> list[uuid.UUID]:
        """Most partitions per subscriber first, then fewer subscribers, then Kafka's id order."""
        subs = self.subscribers
        return sorted(
            topics,
            key=lambda t: (-self.partitions[t] / len(subs[t]), len(subs[t]), _java_order(t)),
        )

    def give(self, t: uuid.UUID, p: int, m: str) -> None:
        old = self.owner.get((t, p))
        if old is not None:
            self.out[old][t].discard(p)
            if not self.out[old][t]:
                del self.out[old][t]
            self.load[old] -= 1
        self.owner[(t, p)] = m
        self.out[m].setdefault(t, set()).add(p)
        self.load[m] += 1

    def build(self, current: Assignment) -> Assignment:
        for m, owned in current.items():
            for t, ps in owned.items():
                if m in self.load and t in self.topics[m]:
                    for p in ps:
                        if p < self.partitions[t]:
                            self.give(t, p, m)
        for t in self.by_share(set(self.subscribers)):
            free = [p for p in range(self.partitions[t]) if (t, p) not in self.owner]
            if not free:
                continue
            levels = _Levels(self.load, self.index, self.subscribers[t])
            for p in free:
                self.give(t, p, levels.lightest())
        shared = self.by_share({t for t, ms in self.subscribers.items() if len(ms) > 1})
        last = None
        for _ in range(ROUNDS):
            for i, t in enumerate(shared):
                if i == last:
                    return self.out
                if self.level(t) or last is None:
                    last = i
        return self.out

    def level(self, t: uuid.UUID) -> int:
        """Move partitions of ``t`` from its most to its least loaded subscribers (by their
        totals) until those are within one; how many moved."""
        levels = _Levels(self.load, self.index, self.subscribers[t])
        if levels.spread() <= 1:
            return 0
        # each holder's partitions of the topic, highest last: the next one it gives away
        held: dict[str, list[int]] = {}
        for p in range(self.partitions[t]):
            held.setdefault(self.owner[(t, p)], []).append(p)
        moved = 0
        while not levels.even():
            source = levels.heaviest()
            while source is not None and not held.get(source):
                levels.skip()
                source = levels.heaviest()
            if source is None:
                break
            p = held[source].pop()
            target = levels.lightest()
            if levels.even():
                break
            self.give(t, p, target)
            moved += 1
        return moved
