"""``conformance.durations`` (issue 36): a concurrent run starts its long tests early.

* Every test named is a suite test, and the disruptive ones are claimed the longest first.
* The workers' order holds every test once; a long test is handed out while fewer than half of
  the workers run one, so the long ones start early and beside short ones, the longest first,
  and the order is the same for the same tests (every worker computes it).
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.durations import EXPECTED_S, LONG_S, dispatch_order, expected, longest_first


def test_every_test_named_is_a_suite_test() -> None:
    from conformance.suite.catalog import catalog

    ids = {t.test_id for t in catalog().tests}
    spec_derived = {t for t in EXPECTED_S if t.startswith("protocol/spec/")}  # parametrized
    assert set(EXPECTED_S) - spec_derived <= ids, set(EXPECTED_S) - spec_derived - ids


def test_the_longest_come_first_the_others_in_the_collected_order() -> None:
    pause, unclean = "durability/leader-pause/sigstop", "durability/unclean-election/off-by-default"
    ids = ["a", pause, "b", unclean]
    assert longest_first(ids, "reference") == [3, 1, 0, 2]
    assert longest_first(ids, "kafka:4.4.0?store=zookeeper") == [3, 1, 0, 2]


_WORKER_TESTS = [t for t in EXPECTED_S if not t.startswith(("durability/", "broker-reg"))]


@given(
    st.lists(st.sampled_from(_WORKER_TESTS), unique=True, max_size=12),
    st.integers(0, 60),
    st.sampled_from(["reference", "kafka:4.4.0"]),
    st.integers(1, 6),
)
def test_the_workers_order_starts_the_long_ones_early(
    long: list[str], short: int, kind: str, workers: int
) -> None:
    ids = [f"short/{n}" for n in range(short)] + long
    order = dispatch_order(ids, kind, workers)
    assert sorted(order) == list(range(len(ids)))
    assert order == dispatch_order(list(ids), kind, workers)
    placed = [ids[n] for n in order]
    longs = [t for t in placed if expected(t, kind) >= LONG_S]
    assert longs == sorted(longs, key=lambda t: -expected(t, kind))
    assert [t for t in placed if t.startswith("short/")] == [f"short/{n}" for n in range(short)]
    if longs:  # the longest starts at once
        assert placed[0] == longs[0]
