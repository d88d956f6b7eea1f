"""The share-partition state machine (KIP-932, ``groups/share_partition.py``): acquisition by one
member at a time, acquisition locks, ACCEPT / RELEASE / REJECT, the delivery-count limit, the
share-partition start offset; a hypothesis state machine checks its invariants."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from conformance.protocol import ErrorCode as E
from reference_impl.groups.share_partition import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    REJECT,
    RELEASE,
    RENEW,
    SharePartition,
)

LOG = list(range(10))


def test_acquire_accept_release_reject_and_the_start_offset() -> None:
    sp = SharePartition(0, lock_duration_ms=1000, delivery_limit=2)
    assert sp.acquire("a", LOG, 4, now_ms=0) == [(0, 3, 1)]
    assert sp.acquire("b", LOG, 2, now_ms=0) == [(4, 5, 1)]  # never the same records
    assert sp.acknowledge("b", 0, 0, [ACCEPT], 0) == E.INVALID_RECORD_STATE  # a's record
    assert sp.acknowledge("a", 0, 3, [ACCEPT, RELEASE, REJECT, ACCEPT], 0) == E.NONE
    assert sp.start_offset == 1  # 0 accepted; 1 is available again
    assert sp.acquire("b", LOG, 1, now_ms=0) == [(1, 1, 2)]  # redelivered, count 2
    assert sp.acknowledge("b", 1, 1, [RELEASE], 0) == E.NONE
    assert sp.state_of(1, 0) == ARCHIVED  # the delivery limit: never again
    assert sp.start_offset == 4
    # below the SPSO: done already, passed over (Kafka 4.4.0 answers NONE)
    assert sp.acknowledge("a", 2, 2, [ACCEPT], 0) == E.NONE
    assert sp.acquire("a", LOG, 1, 0) == [(6, 6, 1)]
    assert sp.acknowledge("a", 6, 6, [ACCEPT], 0) == E.NONE
    assert sp.acknowledge("a", 6, 6, [ACCEPT], 0) == E.INVALID_RECORD_STATE  # past the SPSO


def test_archived_offsets_are_never_delivered_and_pass_the_start_offset() -> None:
    """A read_committed group's aborted records and the transaction markers (issue 39)."""
    sp = SharePartition(0)
    assert sp.acquire("a", [0], 1, now_ms=0) == [(0, 0, 1)]
    sp.archive([0, 1, 2])  # 0 is acquired: left as it is
    assert sp.state_of(0, 0) == ACQUIRED and sp.start_offset == 0
    assert sp.acknowledge("a", 0, 0, [ACCEPT], 0) == E.NONE
    assert sp.start_offset == 3
    assert sp.acquire("a", [1, 2, 3], 5, now_ms=0) == [(3, 3, 1)]


def test_acquisition_lock_ends() -> None:
    sp = SharePartition(0, lock_duration_ms=1000, delivery_limit=5)
    assert sp.acquire("a", LOG[:3], 10, now_ms=0) == [(0, 2, 1)]
    assert sp.acquire("b", LOG[:3], 10, now_ms=999) == []
    assert sp.acquire("b", LOG[:3], 10, now_ms=1000) == [(0, 2, 2)]
    assert sp.acknowledge("a", 0, 2, [ACCEPT], 1000) == E.INVALID_RECORD_STATE
    assert sp.acknowledge("b", 0, 2, [ACCEPT], 1000) == E.NONE and sp.start_offset == 3


def test_malformed_batches() -> None:
    sp = SharePartition(0)
    sp.acquire("a", LOG, 10, 0)
    assert sp.acknowledge("a", 3, 2, [ACCEPT], 0) == E.INVALID_REQUEST
    assert sp.acknowledge("a", 0, 2, [ACCEPT, ACCEPT], 0) == E.INVALID_REQUEST
    assert sp.acknowledge("a", 0, 0, [7], 0) == E.INVALID_REQUEST


def test_renew_restarts_the_lock_and_keeps_the_record() -> None:
    """KIP-1222: a RENEW keeps the record acquired by its member, count unchanged, with a new
    lock; another member's RENEW, or one where the group disables it, changes nothing."""
    sp = SharePartition(0, lock_duration_ms=1000)
    assert sp.acquire("a", LOG[:2], 10, now_ms=0) == [(0, 1, 1)]
    assert sp.acknowledge("b", 0, 0, [RENEW], 500) == E.INVALID_RECORD_STATE
    assert sp.acknowledge("a", 0, 0, [RENEW], 500, renew=False) == E.INVALID_RECORD_STATE
    assert sp.acknowledge("a", 0, 0, [RENEW], 500) == E.NONE
    assert sp.acquire("b", LOG[:2], 10, now_ms=1200) == [(1, 1, 2)]  # 1's lock ended, not 0's
    assert sp.state_of(0, 1499) == ACQUIRED and sp.state_of(0, 1500) == AVAILABLE


def test_batch_optimized_acquires_whole_batches() -> None:
    """KIP-1206: with the log's batches (batch-optimized) a batch begun is acquired whole, past
    MaxRecords; without them (record_limit) MaxRecords is exact."""
    sp = SharePartition(0)
    assert sp.acquire("a", LOG, 2, 0, batches=[(0, 4), (5, 9)]) == [(0, 4, 1)]
    assert sp.acquire("a", LOG, 2, 0) == [(5, 6, 1)]
    assert sp.acquire("a", LOG, 1, 0, batches=[(0, 4), (5, 9)]) == [(7, 9, 1)]


class Members(RuleBasedStateMachine):
    """Members acquire, acknowledge and let locks expire; a record is held by one member at a
    time, delivery counts never decrease nor pass the limit, the SPSO never goes back, and what
    was accepted or archived is never delivered again."""

    LIMIT = 3

    def __init__(self) -> None:
        super().__init__()
        self.sp = SharePartition(0, lock_duration_ms=100, delivery_limit=self.LIMIT)
        self.now = 0
        self.counts: dict[int, int] = {}
        self.done: set[int] = set()
        self.spso = 0

    @rule(member=st.sampled_from("abc"), n=st.integers(1, 5))
    def acquire(self, member: str, n: int) -> None:
        for first, last, count in self.sp.acquire(member, LOG, n, self.now):
            for o in range(first, last + 1):
                assert o not in self.done
                assert count == self.counts.get(o, 0) + 1 <= self.LIMIT
                self.counts[o] = count

    @rule(
        member=st.sampled_from("abc"),
        first=st.sampled_from(LOG),
        span=st.integers(0, 3),
        kind=st.sampled_from([ACCEPT, RELEASE, REJECT]),
    )
    def acknowledge(self, member: str, first: int, span: int, kind: int) -> None:
        last = min(first + span, LOG[-1])
        before = {o: self.sp.state_of(o, self.now) for o in range(first, last + 1)}
        holder = {o: self.sp.records[o].member for o in before if o in self.sp.records}
        error = self.sp.acknowledge(member, first, last, [kind], self.now)
        start = self.sp.start_offset
        mine = all(
            o < start or (s == ACQUIRED and holder.get(o) == member) for o, s in before.items()
        )
        assert (error == E.NONE) == mine
        if error == E.NONE:
            for o in before:
                if o < start:
                    continue
                if kind != RELEASE or self.counts[o] >= self.LIMIT:
                    self.done.add(o)

    @rule(ms=st.integers(1, 150))
    def tick(self, ms: int) -> None:
        self.now += ms

    @invariant()
    def holds(self) -> None:
        assert self.sp.start_offset >= self.spso
        self.spso = self.sp.start_offset
        for o in LOG:
            state = self.sp.state_of(o, self.now)
            if o in self.done:
                assert state in (ACKNOWLEDGED, ARCHIVED)
            if self.counts.get(o, 0) >= self.LIMIT and state == AVAILABLE:
                raise AssertionError(f"{o} available past the delivery limit")
        assert all(o >= self.sp.start_offset for o in self.sp.records)


TestMembers = Members.TestCase
TestMembers.settings = settings(max_examples=60, stateful_step_count=30, deadline=None)


def test_acknowledgement_batches_kafka_refuses() -> None:
    """Kafka 4.4.0's KafkaApis.validateAcknowledgementBatches: what is INVALID_REQUEST for the
    partition before the share partition is touched (RENEW only from v2, with IsRenewAck)."""
    from reference_impl.handlers.share_common import batches_invalid

    def b(first: int, last: int, *types: int) -> dict:
        return {"FirstOffset": first, "LastOffset": last, "AcknowledgeTypes": list(types)}

    assert not batches_invalid([b(0, 1, ACCEPT), b(1, 1, REJECT)], 1, False)
    assert batches_invalid([b(2, 1, ACCEPT)], 1, False)  # first past last
    assert batches_invalid([b(3, 4, ACCEPT), b(2, 2, ACCEPT)], 1, False)  # before the last one
    assert batches_invalid([b(0, 0)], 1, False)  # no types
    assert batches_invalid([b(0, 2, ACCEPT, ACCEPT)], 1, False)  # neither 1 nor one per offset
    assert batches_invalid([b(0, 0, RENEW)], 1, True)  # RENEW is v2's
    assert batches_invalid([b(0, 0, RENEW)], 2, False)  # without IsRenewAck
    assert not batches_invalid([b(0, 0, RENEW)], 2, True)
    assert batches_invalid([b(0, 0, 5)], 2, True)
