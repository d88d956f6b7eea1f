"""A transactional id's state and the transitions Kafka's coordinator allows (TransactionMetadata).

Every change is prepared first (``prepare_*`` returns the next ``Transit`` and marks the
metadata pending, so a concurrent request is answered CONCURRENT_TRANSACTIONS), written to
``__transaction_state``, and only applied (``complete``) once the write is durable; a failed write
``abort_pending``s it. PrepareEpochFence is never written: it only marks the epoch bump that
fences the previous producer before its ongoing transaction is aborted.

Transaction version 2 (KIP-890 part 2, Kafka 4.x): the metadata remembers the client's version
(``client_tv``); ``prepare_end`` with ``bump`` gives the transaction's end the next epoch (the
markers carry it, so a late write at the old epoch is refused), and a producer id whose epoch is
exhausted gets its successor then (``next_producer_id``, which ``prepare_complete`` makes the id
at epoch 0); an abort may start from Empty/Complete* (an "empty abort": the client aborts a
transaction whose partitions the coordinator never saw).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, replace

from conformance.protocol import ErrorCode

NO_PRODUCER_ID = -1
NO_EPOCH = -1
#: Kafka rotates to a new producer id once the epoch reaches Short.MAX_VALUE - 1
EPOCH_EXHAUSTED = 2**15 - 2


#: returned by prepare_increment_epoch when the expected epoch is stale
FENCED = int(ErrorCode.PRODUCER_FENCED)


class TxnState(enum.IntEnum):
    """Kafka's state ids (the record's TransactionStatus) and names (Describe/ListTransactions)."""

    Empty = 0
    Ongoing = 1
    PrepareCommit = 2
    PrepareAbort = 3
    CompleteCommit = 4
    CompleteAbort = 5
    Dead = 6
    PrepareEpochFence = 7


#: the states a transition may start from (Kafka's validPreviousStates)
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    TxnState.Empty: frozenset({TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort}),
    TxnState.Ongoing: frozenset(
        {TxnState.Ongoing, TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort}
    ),
    TxnState.PrepareCommit: frozenset({TxnState.Ongoing}),
    # TV2's empty abort starts from Empty/Complete* (Kafka 4.x)
    TxnState.PrepareAbort: frozenset(
        {
            TxnState.Ongoing,
            TxnState.PrepareEpochFence,
            TxnState.Empty,
            TxnState.CompleteCommit,
            TxnState.CompleteAbort,
        }
    ),
    TxnState.CompleteCommit: frozenset({TxnState.PrepareCommit}),
    TxnState.CompleteAbort: frozenset({TxnState.PrepareAbort}),
    TxnState.Dead: frozenset({TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort}),
    TxnState.PrepareEpochFence: frozenset({TxnState.Ongoing}),
}

COMPLETE_OF = {
    TxnState.PrepareCommit: TxnState.CompleteCommit,
    TxnState.PrepareAbort: TxnState.CompleteAbort,
}


def epoch_exhausted(epoch: int) -> bool:
    return epoch >= EPOCH_EXHAUSTED


@dataclass(frozen=True)
class Transit:
    """The metadata a prepared transition will leave once written."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]]
    start_ms: int
    update_ms: int
    #: the client's transaction version (TransactionLogValue v1's ClientTransactionVersion)
    client_tv: int = 0
    #: TV2: the producer id the client was given because the epoch was exhausted (NextProducerId)
    next_producer_id: int = NO_PRODUCER_ID


@dataclass
class TxnMetadata:
    transactional_id: str
    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: set[tuple[str, int]] = field(default_factory=set)
    start_ms: int = -1
    update_ms: int = -1
    #: the transition being written, if any (Kafka's pendingState)
    pending: TxnState | None = None
    #: an epoch fence whose write failed: the next fence does not bump the epoch again
    failed_epoch_fence: bool = False
    client_tv: int = 0
    next_producer_id: int = NO_PRODUCER_ID

    @property
    def producer_epoch_exhausted(self) -> bool:
        return epoch_exhausted(self.producer_epoch)

    def snapshot(self) -> Transit:
        return Transit(
            self.producer_id,
            self.last_producer_id,
            self.producer_epoch,
            self.last_producer_epoch,
            self.timeout_ms,
            self.state,
            frozenset(self.partitions),
            self.start_ms,
            self.update_ms,
            self.client_tv,
            self.next_producer_id,
        )

    def _prepare(self, t: Transit) -> Transit:
        if self.pending is not None:
            raise IllegalTransition(f"{self.transactional_id}: {self.pending.name} is pending")
        if self.state not in VALID_PREVIOUS[t.state]:
            raise IllegalTransition(
                f"{self.transactional_id}: {self.state.name} -> {t.state.name} is not allowed"
            )
        self.pending = t.state
        return t

    # -- the transitions (Kafka's prepare* methods) ---------------------------------------------

    def prepare_increment_epoch(
        self, timeout_ms: int, expected_epoch: int | None, now_ms: int
    ) -> Transit | int:
        """InitProducerId on Empty/Complete*: a bumped epoch, or the retried one (KIP-360), or
        PRODUCER_FENCED (the caller's error code) when the expected epoch is stale."""
        bumped = self.producer_epoch + 1
        if expected_epoch is None:
            epoch, last = bumped, NO_EPOCH
        elif self.producer_epoch == NO_EPOCH or expected_epoch == self.producer_epoch:
            epoch, last = bumped, self.producer_epoch
        elif expected_epoch == self.last_producer_epoch:
            epoch, last = self.producer_epoch, self.last_producer_epoch  # a retry: no new bump
        else:
            return FENCED
        return self._prepare(
            replace(
                self.snapshot(),
                producer_epoch=epoch,
                last_producer_epoch=last,
                timeout_ms=timeout_ms,
                state=TxnState.Empty,
                partitions=frozenset(),
                start_ms=-1,
                update_ms=now_ms,
            )
        )

    def prepare_rotate_producer_id(
        self, new_id: int, timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> Transit:
        """The epoch is exhausted: a new producer id, epoch 0."""
        return self._prepare(
            replace(
                self.snapshot(),
                producer_id=new_id,
                last_producer_id=self.producer_id,
                producer_epoch=0,
                last_producer_epoch=self.producer_epoch if record_last_epoch else NO_EPOCH,
                timeout_ms=timeout_ms,
                state=TxnState.Empty,
                partitions=frozenset(),
                start_ms=-1,
                update_ms=now_ms,
            )
        )

    def prepare_fence(self) -> Transit:
        """Bump the epoch of an ongoing transaction before aborting it (InitProducerId of a new
        producer, or the transaction's timeout): the old producer's epoch is fenced."""
        epoch = self.producer_epoch if self.failed_epoch_fence else self.producer_epoch + 1
        return self._prepare(
            replace(
                self.snapshot(),
                producer_epoch=epoch,
                last_producer_epoch=NO_EPOCH,
                state=TxnState.PrepareEpochFence,
            )
        )

    def prepare_add_partitions(
        self, added: set[tuple[str, int]], now_ms: int, client_tv: int | None = None
    ) -> Transit:
        start = (
            now_ms
            if self.state in (TxnState.Empty, TxnState.CompleteCommit, TxnState.CompleteAbort)
            else self.start_ms
        )
        return self._prepare(
            replace(
                self.snapshot(),
                state=TxnState.Ongoing,
                partitions=frozenset(self.partitions | added),
                start_ms=start,
                update_ms=now_ms,
                client_tv=self.client_tv if client_tv is None else client_tv,
            )
        )

    def prepare_end(
        self,
        state: TxnState,
        now_ms: int,
        *,
        bump: bool = False,
        next_producer_id: int = NO_PRODUCER_ID,
        client_tv: int | None = None,
    ) -> Transit:
        """Ongoing -> PrepareCommit / PrepareAbort (the partitions stay: they get the markers);
        with ``bump`` (TV2) the epoch goes up by one (``next_producer_id``: the id that follows an
        exhausted one). An empty abort (TV2, from Empty/Complete*) has no partitions."""
        t = replace(self.snapshot(), state=state, update_ms=now_ms)
        if client_tv is not None:
            t = replace(t, client_tv=client_tv)
        if bump:
            t = replace(
                t,
                producer_epoch=self.producer_epoch + 1,
                last_producer_epoch=self.producer_epoch,
                next_producer_id=next_producer_id,
            )
        if self.state is not TxnState.Ongoing:
            t = replace(t, partitions=frozenset())
        return self._prepare(t)

    def prepare_complete(self, now_ms: int) -> Transit:
        """PrepareX -> CompleteX once every marker is written (no partitions left); a successor
        producer id (TV2, epoch exhausted) becomes the id, at epoch 0."""
        t = replace(
            self.snapshot(),
            state=COMPLETE_OF[self.state],
            partitions=frozenset(),
            update_ms=now_ms,
        )
        if self.next_producer_id != NO_PRODUCER_ID:
            t = replace(
                t,
                producer_id=self.next_producer_id,
                last_producer_id=self.producer_id,
                producer_epoch=0,
                last_producer_epoch=NO_EPOCH,
                next_producer_id=NO_PRODUCER_ID,
            )
        return self._prepare(t)

    # -- applying ---------------------------------------------------------------------------------

    def complete(self, t: Transit) -> None:
        """The transit is durable: it becomes the metadata."""
        self.producer_id, self.last_producer_id = t.producer_id, t.last_producer_id
        self.producer_epoch, self.last_producer_epoch = t.producer_epoch, t.last_producer_epoch
        self.timeout_ms, self.state = t.timeout_ms, t.state
        self.partitions = set(t.partitions)
        self.start_ms, self.update_ms = t.start_ms, t.update_ms
        self.client_tv, self.next_producer_id = t.client_tv, t.next_producer_id
        self.pending = None
        self.failed_epoch_fence = False

    def abort_pending(self) -> None:
        """The write failed: nothing changes (a failed fence is remembered)."""
        if self.pending is TxnState.PrepareEpochFence:
            self.failed_epoch_fence = True
        self.pending = None


class IllegalTransition(Exception):
    """A transition Kafka's coordinator would never make (a bug, not a client error)."""
