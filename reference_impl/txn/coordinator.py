"""The transaction coordinator (Kafka's TransactionCoordinator and TransactionStateManager).

A library on asyncio, free of the broker: records go to a ``TxnStore`` (``__transaction_state``),
markers to a ``MarkerSink`` (WriteTxnMarkers to the partitions' leaders), producer ids come from
an allocator, time from ``now_ms`` (wall clock, the start times Describe/ListTransactions show).
``txn/service.py`` wires it to a broker; the project's tests drive it with in-memory ones.

The coordinator owns the ``__transaction_state`` partitions its broker leads: ``start_loading``
(COORDINATOR_LOAD_IN_PROGRESS meanwhile), ``finish_loading`` replays the partition's records and
resends the markers of every transaction found in PrepareCommit/PrepareAbort, ``unload`` drops
them (NOT_COORDINATOR). Answers follow Kafka's released coordinator (3.9, transaction version 1):

* InitProducerId: a new id at epoch 0, or the epoch bumped (KIP-360: a producer naming its id
  and epoch is bumped only if the epoch is current, given the same epoch back if it is the last
  one, PRODUCER_FENCED otherwise); a producer id rotated when the epoch is exhausted; an ongoing
  transaction fenced (epoch + 1) and aborted first, the caller told CONCURRENT_TRANSACTIONS.
* AddPartitionsToTxn / AddOffsetsToTxn: Empty/Complete* -> Ongoing (start time set), more
  partitions added while Ongoing; a partition set already in the transaction answers at once.
* EndTxn: Ongoing -> PrepareCommit/PrepareAbort, answered once that is durable; markers then go
  to every partition's leader and CompleteCommit/CompleteAbort is written when all answered.
  A retried EndTxn of a completed transaction with the same result is NONE.
* A transaction Ongoing past its timeout is fenced and aborted (checked every
  ``abort_interval_ms``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Protocol

from conformance.protocol import ErrorCode
from reference_impl.txn.records import TxnRecord, decode_key, decode_value, encode_key, encode_value
from reference_impl.txn.state import (
    FENCED,
    NO_EPOCH,
    NO_PRODUCER_ID,
    Transit,
    TxnMetadata,
    TxnState,
    epoch_exhausted,
)

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

#: Kafka's default transaction.state.log.num.partitions
DEFAULT_PARTITIONS = 50

E = ErrorCode
#: how a failed append to __transaction_state is answered (Kafka's appendTransactionToLog)
APPEND_ERRORS = {
    int(E.UNKNOWN_TOPIC_OR_PARTITION): int(E.COORDINATOR_NOT_AVAILABLE),
    int(E.NOT_ENOUGH_REPLICAS): int(E.COORDINATOR_NOT_AVAILABLE),
    int(E.NOT_ENOUGH_REPLICAS_AFTER_APPEND): int(E.COORDINATOR_NOT_AVAILABLE),
    int(E.REQUEST_TIMED_OUT): int(E.COORDINATOR_NOT_AVAILABLE),
    int(E.NOT_LEADER_OR_FOLLOWER): int(E.NOT_COORDINATOR),
    int(E.KAFKA_STORAGE_ERROR): int(E.NOT_COORDINATOR),
}
COMPLETE_STATES = (TxnState.CompleteCommit, TxnState.CompleteAbort)
#: marker answers after which the partition needs no marker (written, or never will be)
MARKER_DONE = {0, int(E.UNSUPPORTED_FOR_MESSAGE_FORMAT), int(E.UNSUPPORTED_VERSION)}
#: marker answers after which this coordinator stops sending for the transaction
MARKER_STOP = {int(E.INVALID_PRODUCER_EPOCH), int(E.TRANSACTION_COORDINATOR_FENCED)}
#: rounds of marker sending (backoff up to 1 s between them) before giving up until a reload
MARKER_ROUNDS = 3600
COMPLETION_ATTEMPTS = 50


@dataclass
class TxnConfig:
    """Kafka's transaction.state.log.* and transaction.* broker configs (field names)."""

    #: transaction.state.log.num.partitions
    state_partitions: int = DEFAULT_PARTITIONS
    #: transaction.state.log.replication.factor
    state_replication_factor: int = 3
    #: transaction.max.timeout.ms
    max_timeout_ms: int = 900_000
    #: transaction.abort.timed.out.transaction.cleanup.interval.ms (Kafka: 10000; the reference
    #: checks more often so a timed-out transaction is aborted close to its timeout)
    abort_interval_ms: int = 1000
    #: first retry delay of a marker round (doubles up to 1 s)
    marker_backoff_ms: int = 100


class TxnStore(Protocol):
    async def append(self, partition: int, key: bytes, value: bytes | None) -> int:
        """Append one record to ``__transaction_state`` partition ``partition`` (acks=all);
        Kafka's error code of the append (0 once durable)."""
        ...


@dataclass(frozen=True)
class Marker:
    producer_id: int
    producer_epoch: int
    commit: bool
    coordinator_epoch: int
    partitions: frozenset[TopicPartition]


class MarkerSink(Protocol):
    async def write(self, marker: Marker) -> dict[TopicPartition, int]:
        """Write the marker on the leader of each partition: each partition's error code (0 also
        for a partition whose topic no longer exists: it needs no marker)."""
        ...


@dataclass
class TxnPartition:
    """A ``__transaction_state`` partition this coordinator leads."""

    index: int
    epoch: int
    loading: bool = True
    txns: dict[str, TxnMetadata] = field(default_factory=dict)


def wall_ms() -> int:
    return int(time.time() * 1000)


class TxnCoordinator:
    def __init__(
        self,
        config: TxnConfig,
        store: TxnStore,
        markers: MarkerSink,
        allocate_producer_id: Callable[[], int],
        *,
        spawn: Callable[[Coroutine[Any, Any, Any], str], Any] | None = None,
        now_ms: Callable[[], int] = wall_ms,
        partition_for: Callable[[str], int] | None = None,
    ) -> None:
        self.config = config
        self.store = store
        self.markers = markers
        self.allocate = allocate_producer_id
        self.spawn = spawn or (lambda coro, name: asyncio.ensure_future(coro))
        self.now_ms = now_ms
        self._partition_for = partition_for or (lambda tid: 0)
        self.owned: dict[int, TxnPartition] = {}
        #: marker tasks in flight (tests wait for them)
        self.sending: set[asyncio.Future] = set()

    def partition_for(self, transactional_id: str) -> int:
        return self._partition_for(transactional_id)

    # -- ownership ----------------------------------------------------------------------------

    def start_loading(self, index: int, epoch: int) -> TxnPartition:
        part = TxnPartition(index, epoch)
        self.owned[index] = part
        return part

    def finish_loading(self, part: TxnPartition, records: list[tuple[bytes, bytes | None]]) -> bool:
        """Replay ``records`` (key, value) in log order; False if the partition moved meanwhile."""
        if self.owned.get(part.index) is not part:
            return False
        for key, value in records:
            try:
                tid = decode_key(key)
                if tid is None:
                    continue
                if value is None:
                    part.txns.pop(tid, None)
                    continue
                r = decode_value(value)
            except (ValueError, IndexError) as e:  # struct.error is a ValueError
                log.warning("skipping an unreadable transaction record: %r", e)
                continue
            part.txns[tid] = _metadata(tid, r)
        part.loading = False
        for md in part.txns.values():
            if md.state in (TxnState.PrepareCommit, TxnState.PrepareAbort):
                log.info("%s loaded in %s: sending its markers", md.transactional_id, md.state.name)
                self._start_markers(part, md)
        return True

    def unload(self, index: int) -> None:
        self.owned.pop(index, None)

    def _lookup(self, tid: str) -> tuple[int, TxnPartition | None, TxnMetadata | None]:
        part = self.owned.get(self.partition_for(tid))
        if part is None:
            return int(E.NOT_COORDINATOR), None, None
        if part.loading:
            return int(E.COORDINATOR_LOAD_IN_PROGRESS), None, None
        return 0, part, part.txns.get(tid)

    def _owns(self, part: TxnPartition) -> bool:
        return self.owned.get(part.index) is part

    # -- writing ------------------------------------------------------------------------------

    async def _write(self, part: TxnPartition, md: TxnMetadata, t: Transit) -> int:
        record = TxnRecord(
            t.producer_id,
            t.producer_epoch,
            t.timeout_ms,
            t.state,
            t.partitions,
            t.update_ms,
            t.start_ms,
            t.last_producer_id,
            t.next_producer_id,
            t.client_tv,
        )
        try:
            error = await self.store.append(
                part.index, encode_key(md.transactional_id), encode_value(record)
            )
        except Exception:
            log.exception("appending %s's state failed", md.transactional_id)
            error = int(E.UNKNOWN_SERVER_ERROR)
        if not self._owns(part):
            return int(E.NOT_COORDINATOR)
        if error:
            md.abort_pending()
            return APPEND_ERRORS.get(error, int(E.UNKNOWN_SERVER_ERROR))
        md.complete(t)
        return 0

    # -- InitProducerId -----------------------------------------------------------------------

    async def init_producer_id(
        self, tid: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> tuple[int, int, int]:
        """(error, producer id, epoch) for a transactional producer."""
        if tid == "":
            return int(E.INVALID_REQUEST), NO_PRODUCER_ID, NO_EPOCH
        if not 0 < timeout_ms <= self.config.max_timeout_ms:
            return int(E.INVALID_TRANSACTION_TIMEOUT), NO_PRODUCER_ID, NO_EPOCH
        error, part, md = self._lookup(tid)
        if error or part is None:
            return error, NO_PRODUCER_ID, NO_EPOCH
        if md is None:
            md = TxnMetadata(
                tid,
                self.allocate(),
                NO_PRODUCER_ID,
                NO_EPOCH,
                NO_EPOCH,
                timeout_ms,
                TxnState.Empty,
                update_ms=self.now_ms(),
            )
            part.txns[tid] = md
        if md.pending is not None:
            return int(E.CONCURRENT_TRANSACTIONS), NO_PRODUCER_ID, NO_EPOCH
        if expected is not None and not _valid_producer(md, *expected):
            return FENCED, NO_PRODUCER_ID, NO_EPOCH
        now = self.now_ms()
        if md.state in (TxnState.PrepareCommit, TxnState.PrepareAbort):
            return int(E.CONCURRENT_TRANSACTIONS), NO_PRODUCER_ID, NO_EPOCH
        if md.state is TxnState.Ongoing:
            # fence the current producer and abort its transaction; the caller retries
            fence = md.prepare_fence()
            error, _, _ = await self._end(
                part, md, fence.producer_id, fence.producer_epoch, False, from_client=False
            )
            return error or int(E.CONCURRENT_TRANSACTIONS), NO_PRODUCER_ID, NO_EPOCH
        if md.producer_epoch_exhausted and (expected is None or expected[1] == md.producer_epoch):
            t: Transit | int = md.prepare_rotate_producer_id(
                self.allocate(), timeout_ms, now, expected is not None
            )
        else:
            t = md.prepare_increment_epoch(
                timeout_ms, None if expected is None else expected[1], now
            )
        if isinstance(t, int):
            return t, NO_PRODUCER_ID, NO_EPOCH
        error = await self._write(part, md, t)
        if error:
            return error, NO_PRODUCER_ID, NO_EPOCH
        log.info("initialised %s: producer id %d epoch %d", tid, t.producer_id, t.producer_epoch)
        return 0, t.producer_id, t.producer_epoch

    # -- AddPartitionsToTxn / AddOffsetsToTxn ----------------------------------------------------

    async def add_partitions(
        self,
        tid: str,
        producer_id: int,
        epoch: int,
        partitions: set[TopicPartition],
        *,
        client_tv: int = 1,
    ) -> int:
        """AddPartitionsToTxn / AddOffsetsToTxn (``client_tv`` 1), or the partition a
        transaction-version-2 Produce or TxnOffsetCommit adds implicitly (2: the metadata then
        remembers the client's version, so its EndTxn bumps the epoch)."""
        if not tid:
            return int(E.INVALID_REQUEST)
        error, part, md = self._lookup(tid)
        if error or part is None:
            return error
        if md is None or md.producer_id != producer_id:
            return int(E.INVALID_PRODUCER_ID_MAPPING)
        if md.producer_epoch != epoch:
            return FENCED
        if md.pending is not None or md.state in (TxnState.PrepareCommit, TxnState.PrepareAbort):
            return int(E.CONCURRENT_TRANSACTIONS)
        if md.state is TxnState.Ongoing and partitions <= md.partitions:
            return 0
        transit = md.prepare_add_partitions(partitions, self.now_ms(), client_tv)
        return await self._write(part, md, transit)

    def verify_partitions(
        self, tid: str, producer_id: int, epoch: int, partitions: set[TopicPartition]
    ) -> dict[TopicPartition, int]:
        """AddPartitionsToTxn v4+'s VerifyOnly (KIP-890): is each partition in the transaction
        (TRANSACTION_ABORTABLE if not). A pending transition is not checked: the partitions are
        in the metadata once added durably and leave it once their marker is written."""
        error, _, md = self._lookup(tid) if tid else (int(E.INVALID_REQUEST), None, None)
        if not error:
            if md is None or md.producer_id != producer_id:
                error = int(E.INVALID_PRODUCER_ID_MAPPING)
            elif md.producer_epoch != epoch:
                error = FENCED
            elif md.state in (TxnState.PrepareCommit, TxnState.PrepareAbort):
                error = int(E.CONCURRENT_TRANSACTIONS)
        if error or md is None:
            return dict.fromkeys(partitions, error)
        return {tp: 0 if tp in md.partitions else int(E.TRANSACTION_ABORTABLE) for tp in partitions}

    # -- EndTxn -------------------------------------------------------------------------------

    async def end_txn(self, tid: str, producer_id: int, epoch: int, commit: bool) -> int:
        """EndTxn v0-v4 (transaction version 1): the error code."""
        return (await self.end_transaction(tid, producer_id, epoch, commit))[0]

    async def end_transaction(
        self, tid: str, producer_id: int, epoch: int, commit: bool, *, tv2: bool = False
    ) -> tuple[int, int, int]:
        """EndTxn: (error, producer id, epoch) (the ids EndTxn v5 answers: -1 with an error)."""
        if not tid:
            return int(E.INVALID_REQUEST), NO_PRODUCER_ID, NO_EPOCH
        error, part, md = self._lookup(tid)
        if error or part is None:
            return error, NO_PRODUCER_ID, NO_EPOCH
        if md is None:
            return int(E.INVALID_PRODUCER_ID_MAPPING), NO_PRODUCER_ID, NO_EPOCH
        return await self._end(part, md, producer_id, epoch, commit, from_client=True, tv2=tv2)

    async def _end(
        self,
        part: TxnPartition,
        md: TxnMetadata,
        producer_id: int,
        epoch: int,
        commit: bool,
        *,
        from_client: bool,
        tv2: bool = False,
    ) -> tuple[int, int, int]:
        """Kafka 4.x's endTransaction. Transaction version 2 (the metadata's client version,
        the request's ``tv2``): every end bumps the epoch; a retry is recognised by the epoch
        one below the current (or the exhausted epoch of the previous producer id); an abort
        from Empty/Complete* is an empty abort; a pending transition is answered
        CONCURRENT_TRANSACTIONS before the epoch is checked (KAFKA-18464)."""
        fencing = md.pending is TxnState.PrepareEpochFence
        state = md.state
        md_tv2 = not fencing and md.client_tv >= 2
        retry_overflow = (
            md_tv2
            and md.last_producer_id == producer_id
            and epoch_exhausted(epoch)
            and md.producer_epoch == 0
        )
        retry_bump = md_tv2 and md.producer_epoch == epoch + 1
        if md_tv2:
            if state in (TxnState.PrepareCommit, TxnState.PrepareAbort):
                valid_epoch = retry_bump
            elif state in (TxnState.CompleteCommit, TxnState.CompleteAbort):
                valid_epoch = retry_bump or retry_overflow or epoch == md.producer_epoch
            else:
                valid_epoch = epoch == md.producer_epoch
        else:
            valid_epoch = (not from_client or epoch == md.producer_epoch) and (
                epoch >= md.producer_epoch
            )
        busy = md.pending is not None and not fencing
        if md.producer_id != producer_id and not retry_overflow:
            return int(E.INVALID_PRODUCER_ID_MAPPING), NO_PRODUCER_ID, NO_EPOCH
        if tv2 and busy:
            return int(E.CONCURRENT_TRANSACTIONS), NO_PRODUCER_ID, NO_EPOCH
        if not valid_epoch:
            return FENCED, NO_PRODUCER_ID, NO_EPOCH
        if busy:
            return int(E.CONCURRENT_TRANSACTIONS), NO_PRODUCER_ID, NO_EPOCH
        current = (md.producer_id, md.producer_epoch)
        is_retry = retry_bump or retry_overflow if md_tv2 else True
        empty_abort = tv2 and not commit and (state is TxnState.Empty or not is_retry)
        if state is TxnState.Ongoing or (
            empty_abort and state in (TxnState.Empty, *COMPLETE_STATES)
        ):
            return await self._prepare_end(part, md, epoch, commit, fencing, tv2)
        if fencing:
            md.abort_pending()
        done = TxnState.CompleteCommit if commit else TxnState.CompleteAbort
        if state is done and is_retry:
            return 0, *current
        if state in (TxnState.PrepareCommit, TxnState.PrepareAbort) and (
            (state is TxnState.PrepareCommit) == commit
        ):
            return int(E.CONCURRENT_TRANSACTIONS), NO_PRODUCER_ID, NO_EPOCH
        return int(E.INVALID_TXN_STATE), NO_PRODUCER_ID, NO_EPOCH  # Empty: none to end

    async def _prepare_end(
        self,
        part: TxnPartition,
        md: TxnMetadata,
        epoch: int,
        commit: bool,
        fencing: bool,
        tv2: bool,
    ) -> tuple[int, int, int]:
        """Ongoing (or, TV2's empty abort, Empty/Complete*) -> PrepareCommit/PrepareAbort, then
        the markers; (0, the producer id and epoch the client goes on with)."""
        if fencing:
            # the fence's bumped epoch goes into the abort itself (never written alone, and
            # not bumped again for a TV2 transaction: KAFKA-19367)
            md.pending = None
            md.producer_epoch, md.last_producer_epoch = epoch, NO_EPOCH
        bump = tv2 and not fencing
        next_id = NO_PRODUCER_ID
        if bump and md.producer_epoch_exhausted:
            next_id = self.allocate()
        target = TxnState.PrepareCommit if commit else TxnState.PrepareAbort
        transit = md.prepare_end(
            target,
            self.now_ms(),
            bump=bump,
            next_producer_id=next_id,
            client_tv=2 if tv2 else None,
        )
        error = await self._write(part, md, transit)
        if error:
            md.failed_epoch_fence = fencing
            return error, NO_PRODUCER_ID, NO_EPOCH
        self._start_markers(part, md)
        if md.next_producer_id != NO_PRODUCER_ID:
            return 0, md.next_producer_id, 0
        return 0, md.producer_id, md.producer_epoch

    # -- markers ------------------------------------------------------------------------------

    def _start_markers(self, part: TxnPartition, md: TxnMetadata) -> None:
        commit = md.state is TxnState.PrepareCommit
        complete = md.prepare_complete(self.now_ms())
        marker = Marker(
            md.producer_id, md.producer_epoch, commit, part.epoch, frozenset(md.partitions)
        )
        task = self.spawn(
            self._complete(part, md, marker, complete), f"txn-markers-{md.producer_id}"
        )
        if isinstance(task, asyncio.Future):
            self.sending.add(task)
            task.add_done_callback(self.sending.discard)

    async def _complete(
        self, part: TxnPartition, md: TxnMetadata, marker: Marker, complete: Transit
    ) -> None:
        """Markers to every partition, then CompleteCommit/CompleteAbort."""
        remaining = set(marker.partitions)
        backoff = self.config.marker_backoff_ms / 1000
        tid = md.transactional_id
        for rounds in range(MARKER_ROUNDS):
            if not self._owns(part):
                return
            if not remaining:
                break
            try:
                results = await self.markers.write(
                    Marker(
                        marker.producer_id,
                        marker.producer_epoch,
                        marker.commit,
                        marker.coordinator_epoch,
                        frozenset(remaining),
                    )
                )
            except Exception:
                log.exception("sending %s's markers failed", tid)
                results = {}
            for tp in list(remaining):
                error = results.get(tp, int(E.REQUEST_TIMED_OUT))
                if error in MARKER_DONE:
                    remaining.discard(tp)
                    md.partitions.discard(tp)
                elif error in MARKER_STOP:
                    log.info("%s's marker on %s refused (%d): no more markers", tid, tp, error)
                    return
            if remaining:
                log.log(
                    logging.INFO if rounds == 0 else logging.DEBUG,
                    "%s: markers pending on %s, retrying",
                    tid,
                    sorted(remaining),
                )
                await asyncio.sleep(backoff)
                backoff = min(1.0, backoff * 2)
        else:
            log.error("%s: markers still pending after %d rounds", tid, MARKER_ROUNDS)
            return
        for _ in range(COMPLETION_ATTEMPTS):
            if not self._owns(part):
                return
            md.pending = complete.state
            error = await self._write(part, md, complete)
            if error == 0:
                log.info("%s: %s", tid, complete.state.name)
                return
            if error == int(E.NOT_COORDINATOR):
                return
            await asyncio.sleep(backoff)
        log.error("%s: %s could not be written", tid, complete.state.name)

    async def wait_markers(self, timeout: float = 10.0) -> None:
        """Until every marker task started so far has finished (tests)."""
        if self.sending:
            await asyncio.wait(set(self.sending), timeout=timeout)

    # -- timeouts -----------------------------------------------------------------------------

    async def abort_timed_out(self) -> int:
        """Fence and abort every transaction Ongoing past its timeout; how many were."""
        now = self.now_ms()
        expired = [
            (part, md)
            for part in list(self.owned.values())
            if not part.loading
            for md in list(part.txns.values())
            if md.state is TxnState.Ongoing
            and md.pending is None
            and md.start_ms + md.timeout_ms < now
        ]
        for part, md in expired:
            if not self._owns(part) or md.pending is not None or md.state is not TxnState.Ongoing:
                continue
            log.info("%s timed out after %d ms: aborting", md.transactional_id, md.timeout_ms)
            fence = md.prepare_fence()
            await self._end(
                part, md, fence.producer_id, fence.producer_epoch, False, from_client=False
            )
        return len(expired)

    # -- Describe/ListTransactions ------------------------------------------------------------

    def describe(self, tid: str) -> dict[str, Any]:
        out: dict[str, Any] = {
            "TransactionalId": tid,
            "ErrorCode": 0,
            "TransactionState": "",
            "TransactionTimeoutMs": 0,
            # an entry answered with an error keeps the spec's defaults (0), as Kafka's does
            "TransactionStartTimeMs": 0,
            "ProducerId": 0,
            "ProducerEpoch": 0,
            "Topics": [],
        }
        error, _, md = self._lookup(tid) if tid else (int(E.INVALID_REQUEST), None, None)
        if not error and (md is None or md.state is TxnState.Dead):
            error = int(E.TRANSACTIONAL_ID_NOT_FOUND)
        if error or md is None:
            out["ErrorCode"] = error
            return out
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(md.partitions):
            topics.setdefault(topic, []).append(partition)
        out.update(
            TransactionState=md.state.name,
            TransactionTimeoutMs=md.timeout_ms,
            TransactionStartTimeMs=md.start_ms,
            ProducerId=md.producer_id,
            ProducerEpoch=md.producer_epoch,
            Topics=[{"Topic": t, "Partitions": ps} for t, ps in topics.items()],
        )
        return out

    def list(
        self, states: list[str], producer_ids: list[int], duration_ms: int
    ) -> tuple[int, list[str], list[tuple[str, int, str]]]:
        """(error, unknown state filters, [(transactional id, producer id, state name)])."""
        if any(p.loading for p in self.owned.values()):
            return int(E.COORDINATOR_LOAD_IN_PROGRESS), [], []
        names = {s.name for s in TxnState}
        # each unknown name once, in the order asked (Kafka reads the filters as a set)
        unknown = list(dict.fromkeys(s for s in states if s not in names))
        wanted = {s for s in states if s in names}
        now = self.now_ms()
        out = []
        for part in self.owned.values():
            for md in part.txns.values():
                if md.state is TxnState.Dead:
                    continue
                if producer_ids and md.producer_id not in producer_ids:
                    continue
                if states and md.state.name not in wanted:
                    continue
                if duration_ms >= 0 and now - md.start_ms <= duration_ms:
                    continue
                out.append((md.transactional_id, md.producer_id, md.state.name))
        return 0, unknown, out


def _valid_producer(md: TxnMetadata, producer_id: int, epoch: int) -> bool:
    """KIP-360: may this producer (id, epoch named in InitProducerId) continue, or is it fenced."""
    return (
        md.producer_epoch == NO_EPOCH
        or producer_id == md.producer_id
        or (producer_id == md.last_producer_id and epoch_exhausted(epoch))
    )


def _metadata(tid: str, r: TxnRecord) -> TxnMetadata:
    return TxnMetadata(
        tid,
        r.producer_id,
        r.previous_producer_id,
        r.producer_epoch,
        NO_EPOCH,
        r.timeout_ms,
        r.state,
        set(r.partitions),
        r.start_ms,
        r.update_ms,
        client_tv=r.client_tv,
        next_producer_id=r.next_producer_id,
    )
