"""The reference's KIP-848 server-side assignors against what Kafka 4.x computes (facts read
from its group coordinator), with hypothesis over subscriptions, partition counts and current
target assignments: every subscribed partition goes to exactly one of its subscribers; uniform
balances members' *totals* (no partition of a topic could move from one subscriber to another
with two or more fewer in total), keeps what it can when subscriptions are the same, and range
orders static members first. The faulty assignor that balanced per topic (3 and 1, or 4 and 0,
where Kafka gives 2 and 2) fails the balance check."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.groups.assignors import ASSIGNORS, Assignment, Assignor
from reference_impl.groups.uniform import member_order
from tests.support.faults_assignors import EXTRA_TO_THE_FIRST, PER_TOPIC_SHARE

T1, T2, T3 = (uuid.UUID(int=i) for i in (1, 2, 3))
UNIFORM = ASSIGNORS["uniform"]


def owners(out: Assignment) -> dict[tuple[uuid.UUID, int], list[str]]:
    got: dict[tuple[uuid.UUID, int], list[str]] = {}
    for m, tps in out.items():
        for t, ps in tps.items():
            for p in ps:
                got.setdefault((t, p), []).append(m)
    return got


def unbalanced(subs: dict[str, set[uuid.UUID]], out: Assignment) -> str | None:
    """A move that would even the totals: a partition of a topic held by a subscriber with at
    least two more partitions in total than another subscriber of that topic."""
    load = {m: sum(len(ps) for ps in out.get(m, {}).values()) for m in subs}
    for m, tps in out.items():
        for t, ps in tps.items():
            for other in subs:
                if ps and t in subs[other] and load[m] - load[other] >= 2:
                    return f"{m} holds {load[m]} (of them {t}), {other} holds {load[other]}"
    return None


def shape(assignor: Assignor) -> Assignment:
    """Member a subscribes to two topics of two partitions and owns them; b joins on the first."""
    subs = {"a": {T1, T2}, "b": {T1}}
    return assignor.assign(subs, {T1: 2, T2: 2}, {"a": {T1: {0, 1}, T2: {0, 1}}})


def test_members_are_taken_in_the_order_of_kafkas_hash_map() -> None:
    """Kafka's group spec lists members as a java.util.HashMap of their ids does (checked
    against a JVM's HashMap for random ids, 2 to 30 of them): by bucket of String.hashCode
    (folded, 16 buckets until 12 keys), then by insertion; "q" hashes to bucket 1 as "a" does."""
    assert member_order(["a", "b", "c", "q"]) == ["a", "q", "b", "c"]
    assert member_order(["q", "a"]) == ["q", "a"]
    many = [f"m{i}" for i in range(13)]  # 32 buckets past 12 keys: a JVM's order
    assert member_order(many) == [
        "m0",
        "m1",
        "m2",
        "m3",
        "m4",
        "m5",
        "m6",
        "m7",
        "m8",
        "m9",
        "m11",
        "m10",
        "m12",
    ]


def test_a_member_short_of_its_extra_partition_leaves_it_to_a_later_one() -> None:
    """Kafka 4.4.0, seen in diff --models: 2 partitions, 3 members with the same subscription,
    the first and the last (in Kafka's order) owning one each: the middle one, owning none,
    leaves the second extra partition to the last, which keeps its own; nothing moves."""
    first, middle, last = member_order(["a", "b", "c"])
    subs = {m: {T1} for m in (first, middle, last)}
    current: Assignment = {first: {T1: {1}}, last: {T1: {0}}}
    assert UNIFORM.assign(subs, {T1: 2}, current) == current | {middle: {}}
    moved = EXTRA_TO_THE_FIRST.assign(subs, {T1: 2}, current)  # the fault moves partition 0
    assert moved == {first: {T1: {1}}, middle: {T1: {0}}, last: {}}


def test_a_newcomer_on_one_topic_gets_it_whole() -> None:
    assert shape(UNIFORM) == {"a": {T2: {0, 1}}, "b": {T1: {0, 1}}}


def test_balancing_per_topic_fails_the_balance_check() -> None:
    subs = {"a": {T1, T2}, "b": {T1}}
    assert unbalanced(subs, shape(UNIFORM)) is None
    assert unbalanced(subs, shape(PER_TOPIC_SHARE)) == (f"a holds 4 (of them {T1}), b holds 0")


TOPICS = (T1, T2, T3)


@st.composite
def groups(draw: st.DrawFn) -> tuple[dict, dict, Assignment]:
    partitions = {t: draw(st.integers(1, 6)) for t in TOPICS}
    members = [f"m{i}" for i in range(draw(st.integers(1, 5)))]
    subs = {m: set(draw(st.sets(st.sampled_from(TOPICS), min_size=1))) for m in members}
    current: Assignment = {}
    for t, n in partitions.items():  # a valid earlier target: each partition once at most
        for p in range(n):
            m = draw(st.sampled_from([None, *members, "gone"]))
            if m is not None:
                current.setdefault(m, {}).setdefault(t, set()).add(p)
    return subs, partitions, current


@settings(max_examples=60, deadline=None)
@given(groups())
def test_uniform_gives_every_partition_once_and_balances_totals(group) -> None:
    subs, partitions, current = group
    out = UNIFORM.assign(subs, partitions, current)
    want = {(t, p) for ts in subs.values() for t in ts for p in range(partitions[t])}
    got = owners(out)
    assert set(got) == want
    for (t, _), ms in got.items():
        assert len(ms) == 1 and t in subs[ms[0]]
    assert unbalanced(subs, out) is None
    assert UNIFORM.assign(subs, partitions, current) == out  # deterministic


@settings(max_examples=40, deadline=None)
@given(groups())
def test_uniform_keeps_the_quota_with_the_same_subscriptions(group) -> None:
    _, partitions, current = group
    subs = {m: {T1, T2} for m in ("m0", "m1", "m2", "member-a")}
    out = UNIFORM.assign(subs, partitions, current)
    total = partitions[T1] + partitions[T2]
    floor, extra = divmod(total, 4)
    counts = [sum(len(ps) for ps in out[m].values()) for m in member_order(list(subs))]
    # Kafka's quotas: the floor, and the remainder's extra ones to as many members
    assert sorted(counts) == [floor] * (4 - extra) + [floor + 1] * extra
    for m in subs:  # a member keeps its partitions of subscribed topics up to its quota
        mine = {(t, p) for t, ps in current.get(m, {}).items() if t in (T1, T2) for p in ps}
        now = {(t, p) for t, ps in out[m].items() for p in ps}
        assert len(mine & now) == min(len(mine), len(now))


@pytest.mark.parametrize(
    ("statics", "first"),
    [({}, "a"), ({"b": "x"}, "b"), ({"a": "z", "b": "y"}, "b")],
)
def test_range_orders_static_members_first(statics: dict[str, str], first: str) -> None:
    out = ASSIGNORS["range"].assign({"a": {T1}, "b": {T1}}, {T1: 3}, {}, statics)
    assert out[first] == {T1: {0, 1}}
