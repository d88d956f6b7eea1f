"""Transactions v2 (KIP-890 part 2) in the reference's coordinator: an epoch bump on every EndTxn
(v5), partitions added by the partition leader for the client, retries recognised by the epoch
below the current one, empty aborts, the producer id rotated at an exhausted epoch, and the v1
record that keeps it all across a reload. Kafka 4.x's TransactionCoordinator is the model."""

from __future__ import annotations

import asyncio

from conformance.protocol import ErrorCode as E
from reference_impl.txn.coordinator import Marker
from reference_impl.txn.records import TxnRecord, decode_value, encode_value
from reference_impl.txn.state import EPOCH_EXHAUSTED, TxnState
from tests.reference.txn.test_coordinator import Leaders, Store, make


def run(coro):
    return asyncio.run(coro)


async def tv2_begun(c, tid: str = "t") -> tuple[int, int]:
    """A producer with a-0 added implicitly (a TV2 Produce's add): (id, epoch)."""
    _, pid, epoch = await c.init_producer_id(tid, 10_000, None)
    assert await c.add_partitions(tid, pid, epoch, {("a", 0)}, client_tv=2) == 0
    return pid, epoch


def test_every_end_bumps_the_epoch_and_the_markers_carry_it() -> None:
    async def go():
        store, leaders = Store(), Leaders()
        c = make(store, leaders)
        pid, epoch = await tv2_begun(c)
        assert await c.end_transaction("t", pid, epoch, True, tv2=True) == (0, pid, epoch + 1)
        await c.wait_markers()
        assert leaders.written == [Marker(pid, epoch + 1, True, 7, frozenset({("a", 0)}))]
        d = c.describe("t")
        assert (d["TransactionState"], d["ProducerEpoch"]) == ("CompleteCommit", epoch + 1)
        # a retry (the old epoch) is NONE with the current ids; the other result is refused
        assert await c.end_transaction("t", pid, epoch, True, tv2=True) == (0, pid, epoch + 1)
        assert (await c.end_transaction("t", pid, epoch, False, tv2=True))[0] == (
            E.INVALID_TXN_STATE
        )
        # the next transaction at the new epoch; the old epoch is fenced
        assert await c.add_partitions("t", pid, epoch, {("a", 0)}, client_tv=2) == (
            E.PRODUCER_FENCED
        )
        assert await c.add_partitions("t", pid, epoch + 1, {("a", 0)}, client_tv=2) == 0
        assert await c.end_transaction("t", pid, epoch + 1, False, tv2=True) == (
            0,
            pid,
            epoch + 2,
        )
        await c.wait_markers()
        assert leaders.written[-1] == Marker(pid, epoch + 2, False, 7, frozenset({("a", 0)}))
        # two epochs below is no retry
        assert (await c.end_transaction("t", pid, epoch, False, tv2=True))[0] == E.PRODUCER_FENCED

    run(go())


def test_retry_while_markers_pending_and_pending_before_epoch() -> None:
    async def go():
        leaders = Leaders()
        c = make(leaders=leaders)
        pid, epoch = await tv2_begun(c)
        leaders.open.clear()
        assert (await c.end_transaction("t", pid, epoch, False, tv2=True))[0] == 0
        # pending CompleteAbort: CONCURRENT_TRANSACTIONS whatever the epoch (KAFKA-18464)
        for e in (epoch, epoch + 1, epoch + 5):
            assert (await c.end_transaction("t", pid, e, False, tv2=True))[0] == (
                E.CONCURRENT_TRANSACTIONS
            )
        # the next transaction's implicit add waits too (Produce: NOT_ENOUGH_REPLICAS, retried)
        assert await c.add_partitions("t", pid, epoch + 1, {("a", 0)}, client_tv=2) == (
            E.CONCURRENT_TRANSACTIONS
        )
        leaders.open.set()
        await c.wait_markers()
        assert c.describe("t")["TransactionState"] == "CompleteAbort"

    run(go())


def test_empty_abort_bumps_the_epoch_without_markers() -> None:
    async def go():
        store, leaders = Store(), Leaders()
        c = make(store, leaders)
        _, pid, epoch = await c.init_producer_id("t", 10_000, None)
        # TV1: nothing to abort
        assert (await c.end_transaction("t", pid, epoch, False))[0] == E.INVALID_TXN_STATE
        # TV2: the client aborts a transaction the coordinator never saw
        assert await c.end_transaction("t", pid, epoch, False, tv2=True) == (0, pid, epoch + 1)
        await c.wait_markers()
        assert leaders.written == []
        assert store.states("t")[-2:] == ["PrepareAbort", "CompleteAbort"]
        # a commit of nothing stays refused
        assert (await c.end_transaction("t", pid, epoch + 1, True, tv2=True))[0] == (
            E.INVALID_TXN_STATE
        )
        # after a commit, an abort at the new epoch is another empty abort
        assert await c.add_partitions("t", pid, epoch + 1, {("a", 0)}, client_tv=2) == 0
        assert (await c.end_transaction("t", pid, epoch + 1, True, tv2=True))[0] == 0
        await c.wait_markers()
        assert await c.end_transaction("t", pid, epoch + 2, False, tv2=True) == (
            0,
            pid,
            epoch + 3,
        )

    run(go())


def test_init_fences_an_ongoing_tv2_transaction_with_one_bump() -> None:
    """KAFKA-19367: the fence's bump is the abort's; the old producer's late end is refused."""

    async def go():
        leaders = Leaders()
        c = make(leaders=leaders)
        pid, epoch = await tv2_begun(c)
        assert (await c.init_producer_id("t", 10_000, None))[0] == E.CONCURRENT_TRANSACTIONS
        await c.wait_markers()
        assert leaders.written == [Marker(pid, epoch + 1, False, 7, frozenset({("a", 0)}))]
        err, pid2, epoch2 = await c.init_producer_id("t", 10_000, None)
        assert (err, pid2, epoch2) == (0, pid, epoch + 2)
        assert (await c.end_transaction("t", pid, epoch, True, tv2=True))[0] == E.PRODUCER_FENCED

    run(go())


def test_exhausted_epoch_rotates_the_producer_id_at_the_end() -> None:
    async def go():
        store, leaders = Store(), Leaders()
        c = make(store, leaders)
        pid, _ = await tv2_begun(c)
        md = c.owned[0].txns["t"]
        md.producer_epoch = EPOCH_EXHAUSTED
        err, new_pid, new_epoch = await c.end_transaction("t", pid, EPOCH_EXHAUSTED, True, tv2=True)
        assert (err, new_epoch) == (0, 0) and new_pid != pid
        await c.wait_markers()
        # the markers are the old id's, at the bumped epoch
        assert leaders.written == [Marker(pid, EPOCH_EXHAUSTED + 1, True, 7, frozenset({("a", 0)}))]
        d = c.describe("t")
        assert (d["ProducerId"], d["ProducerEpoch"]) == (new_pid, 0)
        # a retry of the old id's end is NONE with the new ids
        assert await c.end_transaction("t", pid, EPOCH_EXHAUSTED, True, tv2=True) == (
            0,
            new_pid,
            0,
        )
        # the records say so: v1 with the client's version and the ids, replayed as they were
        c2 = make(store)
        c2.finish_loading(c2.start_loading(0, 8), [(k, v) for _, k, v in store.records])
        md2 = c2.owned[0].txns["t"]
        assert (md2.producer_id, md2.last_producer_id, md2.client_tv) == (new_pid, pid, 2)

    run(go())


def test_value_v1_layout_round_trip() -> None:
    r = TxnRecord(
        5, 3, 60000, TxnState.PrepareAbort, frozenset({("a", 1), ("b", 0)}), 10, 9, 4, 6, 2
    )
    data = encode_value(r)
    assert data[:2] == b"\x00\x01"
    assert decode_value(data) == r
    # without TV2 the record stays v0
    v0 = TxnRecord(5, 3, 60000, TxnState.Ongoing, frozenset({("a", 1)}), 10, 9)
    assert encode_value(v0)[:2] == b"\x00\x00"
    assert decode_value(encode_value(v0)) == v0
