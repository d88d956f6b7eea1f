"""The API and version a result record names (``TestNotes.judged``): the request its
requirement judges, not whatever the test noted last. GROUPS.R1's test noted DescribeGroups
last (its set-up's wait for the coordinator) and CONSUMER-GROUPS.R16's FindCoordinator, so their
records named those (closing13 'Review items'). No network: the notes are filled by hand, as
``Harness.note`` fills them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import ApiKey
from conformance.suite.kit.harness import TestNotes

KEYS = st.sampled_from([0, 3, 8, 9, 10, 11, 15, 68])


def notes(*noted: tuple[int, int | None]) -> TestNotes:
    n = TestNotes()
    for key, version in noted:
        n.api_key, n.api_version = key, version
        n.exercised.append((key, version, "client"))
    return n


def test_a_set_up_api_noted_last_is_not_the_one_named() -> None:
    # groups/membership/rounds (api=JoinGroup): JoinGroup v9, then DescribeGroups v6 last
    n = notes((ApiKey.JOIN_GROUP, 9), (ApiKey.DESCRIBE_GROUPS, 6))
    r1 = {ApiKey.FIND_COORDINATOR, ApiKey.JOIN_GROUP}
    assert n.judged(ApiKey.JOIN_GROUP, r1) == (ApiKey.JOIN_GROUP, 9, "client")
    # consumer-groups/offsets/member-checks (api=OffsetFetch): OffsetFetch, OffsetCommit, then
    # the heartbeats and FindCoordinator; R16 judges OffsetFetch, OffsetCommit and heartbeats
    n = notes(
        (ApiKey.OFFSET_FETCH, 10),
        (ApiKey.OFFSET_COMMIT, 10),
        (ApiKey.CONSUMER_GROUP_HEARTBEAT, 1),
        (ApiKey.FIND_COORDINATOR, 6),
    )
    r16 = {ApiKey.OFFSET_FETCH, ApiKey.OFFSET_COMMIT, ApiKey.CONSUMER_GROUP_HEARTBEAT}
    assert n.judged(ApiKey.OFFSET_FETCH, r16) == (ApiKey.OFFSET_FETCH, 10, "client")


def test_without_the_declared_api_the_last_judged_one_then_the_declared_then_the_last() -> None:
    n = notes((ApiKey.PRODUCE, 12), (ApiKey.FETCH, 17), (ApiKey.METADATA, 13))
    assert n.judged(ApiKey.OFFSET_FETCH, {ApiKey.PRODUCE, ApiKey.FETCH}) == (
        ApiKey.FETCH,
        17,
        "client",
    )
    assert n.judged(ApiKey.OFFSET_FETCH, {ApiKey.OFFSET_FETCH}) == (
        ApiKey.OFFSET_FETCH,
        None,
        None,
    )
    assert n.judged(ApiKey.OFFSET_FETCH, {ApiKey.TXN_OFFSET_COMMIT}) == (
        ApiKey.METADATA,
        13,
        "client",
    )
    assert TestNotes().judged(ApiKey.JOIN_GROUP, ()) == (ApiKey.JOIN_GROUP, None, None)


@given(
    noted=st.lists(st.tuples(KEYS, st.integers(0, 17)), max_size=6),
    declared=st.none() | KEYS,
    judged=st.sets(KEYS, max_size=3),
)
def test_the_named_api_is_one_the_requirement_judges_whenever_one_was_at_hand(
    noted: list[tuple[int, int]], declared: int | None, judged: set[int]
) -> None:
    key, version, _ = notes(*noted).judged(declared, judged)
    if declared in judged or any(k in judged for k, _ in noted):
        assert key in judged
    if (key, version) != (declared, None):
        assert (key, version) in noted  # a noted version, never one made up


def test_each_noted_api_keeps_the_listener_it_was_noted_on() -> None:
    from types import SimpleNamespace

    from conformance.suite.kit.harness import Harness

    h = SimpleNamespace(notes=TestNotes())
    Harness.note(h, ApiKey.UNREGISTER_BROKER, 0, "controller")  # type: ignore[arg-type]
    Harness.note(h, ApiKey.DESCRIBE_CLUSTER, 1, "client")  # type: ignore[arg-type]
    Harness.note(h, ApiKey.METADATA, 12)  # type: ignore[arg-type]  # listener unchanged
    assert h.notes.exercised[-1] == (ApiKey.METADATA, 12, "client")
    only_unregister = {ApiKey.UNREGISTER_BROKER}
    assert h.notes.judged(ApiKey.UNREGISTER_BROKER, only_unregister) == (
        ApiKey.UNREGISTER_BROKER,
        0,
        "controller",
    )
