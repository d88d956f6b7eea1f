"""ReadShareGroupStateSummary as the reference's partition leader answers it
(``handlers/read_share_group_state_summary.py``): the share partition's current start offset
where this broker leads the partition, -1 where the group has no state, and the errors of a
partition led elsewhere or not known. A broker view of plain data around a real ShareSessions."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from conformance.protocol import ErrorCode
from reference_impl.groups.share_sessions import ShareSessions
from reference_impl.handlers.read_share_group_state_summary import start_offsets

TOPIC = uuid.UUID(int=9)
ACCEPT = 1


def broker(node_id: int, leaders: dict[int, int], shared: ShareSessions) -> SimpleNamespace:
    """Broker ``node_id`` of topic "t" (partition -> leader) with ``shared`` share state."""
    parts = {p: SimpleNamespace(leader=leader) for p, leader in leaders.items()}
    cache = SimpleNamespace(
        topic_ids={TOPIC: "t"},
        partition=lambda name, p: parts.get(p) if name == "t" else None,
    )
    return SimpleNamespace(node_id=node_id, metadata_cache=cache, share_sessions=shared)


def test_the_leader_answers_its_share_partitions_start_offset() -> None:
    shared = ShareSessions(lambda: 0)
    sp = shared.partition("g", (TOPIC, 0), lambda: 0, 30000, 5)
    assert sp.acquire("m", list(range(6)), 10, 0) == [(0, 5, 1)]
    assert sp.acknowledge("m", 0, 2, [ACCEPT], 0) == 0
    leader = broker(1, {0: 1, 1: 1, 2: 2}, shared)
    assert start_offsets(leader, "g", TOPIC, [0, 1, 2, 3]) == {
        0: (0, 3),  # 0-2 accepted
        1: (0, -1),  # no state for the group there
        2: (int(ErrorCode.NOT_LEADER_OR_FOLLOWER), -1),
        3: (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), -1),
    }
    assert start_offsets(leader, "other", TOPIC, [0]) == {0: (0, -1)}
    unknown = start_offsets(leader, "g", uuid.UUID(int=1), [0])
    assert unknown == {0: (int(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION), -1)}


def test_the_leader_counts_the_records_done_past_the_start_offset() -> None:
    """KIP-1226's DeliveryCompleteCount, from which the coordinator answers the Lag: records
    0-5, 0-1 accepted (the start offset moves to 2), 3 rejected, 4 released: 1 done past 2."""
    from reference_impl.handlers.describe_share_group_offsets import lag
    from reference_impl.handlers.read_share_group_state_summary import delivery_state

    shared = ShareSessions(lambda: 0)
    sp = shared.partition("g", (TOPIC, 0), lambda: 0, 30000, 5)
    sp.acquire("m", list(range(6)), 10, 0)
    for first, last, kind in ((0, 1, ACCEPT), (3, 3, 3), (4, 4, 2)):
        assert sp.acknowledge("m", first, last, [kind], 0) == 0
    assert (sp.start_offset, sp.delivery_complete()) == (2, 1)
    leader = broker(1, {0: 1, 1: 1}, shared)
    leader.replica_manager = SimpleNamespace(
        partition_or_error=lambda name, p: SimpleNamespace(high_watermark=6)
    )
    assert delivery_state(leader, "g", TOPIC, [0, 1]) == {0: (1, 6)}  # 1: no state there
    assert lag(2, 1, 6) == 3  # 2, 4 and 5 not done
    assert lag(-1, 0, 6) == -1 and lag(2, -1, 6) == -1
