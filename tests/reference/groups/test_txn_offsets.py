"""Transactional offset commits in the group coordinator (library, in-memory log): pending until
their transaction's marker, visible on COMMIT, dropped on ABORT, rebuilt by a replay that reads
the markers, and KIP-447's group metadata checks."""

from __future__ import annotations

from conformance.protocol import ErrorCode
from reference_impl.groups.coordinator import GroupConfig, GroupCoordinator
from reference_impl.groups.group import GroupState, Member
from reference_impl.groups.group_types import OffsetAndMetadata
from reference_impl.groups.offsets import TxnCommit
from reference_impl.groups.scheduler import ManualScheduler
from reference_impl.groups.store import MemoryOffsetsStore

TP, TP2 = ("t", 0), ("t", 1)


def coordinator(store: MemoryOffsetsStore | None = None) -> GroupCoordinator:
    clock = ManualScheduler()
    c = GroupCoordinator(
        clock, store or MemoryOffsetsStore(clock.wall_ms), GroupConfig(offsets_topic_partitions=1)
    )
    c.finish_loading(0, c.start_loading(0), c.store.read(0) if store else [])
    return c


def commit(
    c: GroupCoordinator,
    pid: int,
    offset: int,
    *,
    tp: tuple[str, int] = TP,
    member: str = "",
    instance: str | None = None,
    generation: int = -1,
) -> int:
    got: list[dict] = []
    req = TxnCommit("g", (pid, 0), member, instance, generation, {tp: OffsetAndMetadata(offset)})
    c.offsets.txn_commit_offsets(req, got.append)
    return got[0][tp]


def committed(c: GroupCoordinator, tp: tuple[str, int] = TP) -> int | None:
    error, found = c.offsets.fetch_offsets("g", [tp])
    assert error == 0
    om = found[tp]
    return None if om is None else om.offset


def test_offsets_wait_for_their_marker() -> None:
    c = coordinator()
    assert commit(c, 7, 5) == 0 and commit(c, 8, 9, tp=TP2) == 0
    assert committed(c) is None and c.offsets.has_pending_offset("g", TP)
    c.offsets.transaction_completed(7, [1], True)  # a marker on another partition: not this group's
    assert committed(c) is None
    c.offsets.transaction_completed(7, [0], True)
    assert committed(c) == 5 and not c.offsets.has_pending_offset("g", TP)
    c.offsets.transaction_completed(8, [0], False)
    assert committed(c, TP2) is None and not c.offsets.has_pending_offset("g", TP2)
    assert c.offsets.producer_groups == {}


def test_a_replay_applies_the_markers_in_the_log() -> None:
    clock = ManualScheduler()
    store = MemoryOffsetsStore(clock.wall_ms)
    first = coordinator(store)
    assert commit(first, 7, 5) == 0
    store.write_marker(0, (7, 0), commit=True)
    assert commit(first, 8, 6) == 0
    store.write_marker(0, (8, 0), commit=False)
    assert commit(first, 9, 7, tp=TP2) == 0  # still open when the coordinator moves
    loading = GroupCoordinator(ManualScheduler(), store, GroupConfig(offsets_topic_partitions=1))
    loading.start_loading(0)
    assert not loading.loaded(0)  # markers wait (NOT_LEADER_OR_FOLLOWER) until the replay ends
    again = coordinator(store)
    assert again.loaded(0)
    assert committed(again) == 5
    assert committed(again, TP2) is None and again.offsets.has_pending_offset("g", TP2)
    again.offsets.transaction_completed(9, [0], True)
    assert committed(again, TP2) == 7


def test_group_metadata_is_checked_as_kip_447_says() -> None:
    c = coordinator()
    group = c.classic.new_group("g")
    group.add(Member("m1", "i1", "client", "host", 1000, 1000, "consumer", [("range", b"")]))
    group.state, group.generation_id = GroupState.STABLE, 3
    assert commit(c, 7, 1, member="x", generation=3) == ErrorCode.UNKNOWN_MEMBER_ID
    assert commit(c, 7, 1, member="x", instance="i1", generation=3) == ErrorCode.FENCED_INSTANCE_ID
    assert commit(c, 7, 1, member="m1", generation=2) == ErrorCode.ILLEGAL_GENERATION
    assert commit(c, 7, 1, member="m1", instance="i1", generation=3) == 0
    # without group metadata (producers before KIP-447) a group with members still accepts it
    assert commit(c, 7, 2) == 0
    c.offsets.transaction_completed(7, [0], True)
    assert committed(c) == 2
