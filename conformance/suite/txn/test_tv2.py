"""Transactions v2 (KIP-890 part 2, TXN.R15-R18): every EndTxn v5 bumps the producer epoch and
says so, a transactional Produce v12 adds its partition itself, a late write at an aborted
transaction's epoch is refused, and ApiVersions reports the transaction.version feature.

Kafka 4.x reads the transaction version off each request (EndTxn v5, Produce v12), so these
versions are named here rather than negotiated; the classic TXN tests stay below them."""

from __future__ import annotations

import time
from typing import Any

from hypothesis import strategies as st

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, run_property
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import SuiteTopic
from conformance.suite.txn import txns
from conformance.suite.txn.txns import FENCED, TxnProducer, name

FEATURE = "transaction.version"
#: the first level of transactions v2
V2_LEVEL = 2


def versions(harness: Harness, noted: int = ApiKey.END_TXN) -> tuple[int, int]:
    """(EndTxn, Produce) versions of transactions v2, ``noted``'s the API the results name;
    Unsupported without."""
    end = txns.newest(harness, ApiKey.END_TXN, txns.V2_END, note=noted == ApiKey.END_TXN)
    produce = txns.newest(harness, ApiKey.PRODUCE, txns.V2_PRODUCE, note=noted == ApiKey.PRODUCE)
    return end, produce


def marker_epochs(topic: SuiteTopic, pid: int, *reqs: str) -> list[tuple[int, int]]:
    """(control type, producer epoch) of each marker of producer ``pid``, in offset order."""
    reads = txns.read_all(topic, 0, txns.READ_UNCOMMITTED, *reqs)
    seen: dict[int, tuple[int, int]] = {}
    for read in reads:
        for b in read.batches:
            if b.is_control and b.producer_id == pid:
                seen[b.base_offset] = (b.control_types()[0], b.producer_epoch)
    return [seen[k] for k in sorted(seen)]


def bumped(before: tuple[int, int], answer: dict[str, Any]) -> bool:
    """The answer's (id, epoch) follow ``before``: the epoch + 1, or a new id at epoch 0."""
    pid, epoch = before
    got = (answer["ProducerId"], answer["ProducerEpoch"])
    return got == (pid, epoch + 1) or (got[0] not in (pid, -1) and got[1] == 0)


def wait_for_state(producer: TxnProducer, state: str, topic: SuiteTopic, *reqs: str) -> None:
    """Until DescribeTransactions gives ``state`` (the markers written), or, where it is not
    advertised, until the partition is stable; at most SETTLE seconds."""
    if ApiKey.DESCRIBE_TRANSACTIONS not in producer.harness.advertised:
        txns.settled(topic, 0, *reqs)
        return
    deadline = time.monotonic() + txns.SETTLE
    while describe(producer, *reqs)["TransactionState"] != state and time.monotonic() < deadline:
        time.sleep(0.1)


def describe(producer: TxnProducer, *reqs: str) -> dict[str, Any]:
    version = txns.newest(producer.harness, ApiKey.DESCRIBE_TRANSACTIONS, "0+", note=False)
    answer = verify.expect_response(
        producer.conn(),
        ApiKey.DESCRIBE_TRANSACTIONS,
        version,
        {"TransactionalIds": [producer.tid]},
        served=reqs[0],
    ).body
    return answer["TransactionStates"][0]


@conformance("txn/v2/end-txn/epoch-bump", "TXN.R15", api=ApiKey.END_TXN)
def test_every_end_bumps_the_epoch(harness: Harness) -> None:
    req = "TXN.R15"
    end_v, produce_v = versions(harness)
    with SuiteTopic.create(harness, "txn-v2-bump", 1) as topic:

        def transactions(outcomes: list[bool]) -> None:
            producer = TxnProducer.start(harness, "v2-bump", req)
            ends: list[tuple[int, int, int]] = []
            for i, commit in enumerate(outcomes):
                before = (producer.pid, producer.epoch)
                producer.produce_ok(topic, 0, [f"v2-{i}".encode()], req, version=produce_v)
                answer = producer.end_v2(commit, end_v)
                verify.check(
                    answer["ErrorCode"] == ErrorCode.NONE and bumped(before, answer),
                    f"EndTxn v{end_v} ({'commit' if commit else 'abort'}) of {producer.tid} at "
                    f"producer {before[0]} epoch {before[1]}: ErrorCode "
                    f"{name(answer['ErrorCode'])}, ProducerId {answer['ProducerId']}, "
                    f"ProducerEpoch {answer['ProducerEpoch']}; expected 0 and epoch "
                    f"{before[1] + 1} (or a new producer id at epoch 0)",
                    req,
                )
                ends.append((commit, answer["ProducerId"], answer["ProducerEpoch"]))
                wait_for_state(
                    producer, "CompleteCommit" if commit else "CompleteAbort", topic, req
                )
            want = [(int(c), e) for c, p, e in ends if p == ends[0][1]]
            got = marker_epochs(topic, ends[0][1], req)
            verify.check(
                got[-len(want) :] == want,
                f"markers of producer {ends[0][1]} in {topic.name}-0 (type, epoch): {got}; "
                f"expected {want}, each transaction's marker at the epoch its EndTxn answered",
                req,
            )

        run_property(
            harness, st.lists(st.booleans(), min_size=2, max_size=2), transactions, examples=2
        )


@conformance("txn/v2/produce/adds-partition", "TXN.R16", api=ApiKey.PRODUCE)
def test_produce_adds_the_partition(harness: Harness) -> None:
    req = "TXN.R16"
    end_v, produce_v = versions(harness, ApiKey.PRODUCE)
    with SuiteTopic.create(harness, "txn-v2-add", 1) as topic:
        producer = TxnProducer.start(harness, "v2-add", req)
        producer.produce_ok(topic, 0, [b"added-by-produce"], req, version=produce_v)
        if ApiKey.DESCRIBE_TRANSACTIONS in harness.advertised:
            state = describe(producer, req)
            parts = sorted((t["Topic"], p) for t in state["Topics"] for p in t["Partitions"])
            verify.check(
                (state["TransactionState"], parts) == ("Ongoing", [(topic.name, 0)]),
                f"DescribeTransactions of {producer.tid} after a Produce v{produce_v} alone: "
                f"state {state['TransactionState']}, partitions {parts}; expected Ongoing with "
                f"[{(topic.name, 0)}]",
                req,
            )
        pid = producer.pid
        answer = producer.end_v2(True, end_v)
        verify.check(
            answer["ErrorCode"] == ErrorCode.NONE,
            f"EndTxn v{end_v} (commit) of {producer.tid}, its partition added by Produce "
            f"v{produce_v}: ErrorCode {name(answer['ErrorCode'])}, expected 0",
            req,
        )
        txns.settled(topic, 0, req)
        reads = txns.read_all(topic, 0, txns.READ_COMMITTED, req)
        kinds = [kind for _, p, kind in txns.markers(reads) if p == pid]
        values = [v for _, v in txns.consumed(reads)]
        verify.check(
            kinds == [txns.COMMIT] and values == [b"added-by-produce"],
            f"{topic.name}-0 after the commit: markers of producer {pid} {kinds}, read_committed "
            f"{values}; expected one COMMIT marker and [b'added-by-produce']",
            req,
        )


@conformance("txn/v2/produce/stale-epoch-after-abort", "TXN.R17", api=ApiKey.PRODUCE)
def test_a_late_write_after_an_abort_is_refused(harness: Harness) -> None:
    req = "TXN.R17"
    end_v, produce_v = versions(harness, ApiKey.PRODUCE)
    with SuiteTopic.create(harness, "txn-v2-late", 1) as topic:
        producer = TxnProducer.start(harness, "v2-late", req)
        producer.produce_ok(topic, 0, [b"aborted"], req, version=produce_v)
        old_epoch, seq = producer.epoch, producer.sequences[(topic.name, 0)]
        answer = producer.end_v2(False, end_v)
        verify.check(
            answer["ErrorCode"] == ErrorCode.NONE,
            f"EndTxn v{end_v} (abort) of {producer.tid}: ErrorCode "
            f"{name(answer['ErrorCode'])}, expected 0",
            req,
        )
        wait_for_state(producer, "CompleteAbort", topic, req)
        before = txns.settled(topic, 0, req).high_watermark
        producer.sequences[(topic.name, 0)] = seq
        late = producer.produce(topic, 0, [b"late"], req, epoch=old_epoch, version=produce_v)
        after = txns.fetch(topic, 0, 0, txns.READ_UNCOMMITTED, req)
        verify.check(
            late["ErrorCode"] in FENCED and after.high_watermark == before,
            f"a transactional Produce v{produce_v} at epoch {old_epoch}, after EndTxn v{end_v} "
            f"aborted that epoch's transaction and its markers were written: ErrorCode "
            f"{name(late['ErrorCode'])}, high watermark {before} -> {after.high_watermark}; "
            "expected 47 (INVALID_PRODUCER_EPOCH) or 90 (PRODUCER_FENCED) and nothing appended",
            req,
        )
        if ApiKey.DESCRIBE_TRANSACTIONS in harness.advertised:
            state = describe(producer, req)["TransactionState"]
            verify.check(
                state == "CompleteAbort",
                f"DescribeTransactions of {producer.tid} after the late write: {state}, "
                "expected CompleteAbort (no transaction opened by it)",
                req,
            )


def api_versions(harness: Harness, version: int) -> dict[str, Any]:
    body = {"ClientSoftwareName": "kafka-conformance", "ClientSoftwareVersion": "0.1.0"}
    conn = harness.connect()
    return verify.expect_response(conn, ApiKey.API_VERSIONS, version, body, served="TXN.R18").body


@conformance("txn/v2/api-versions/transaction-version", "TXN.R18", api=ApiKey.API_VERSIONS)
def test_the_transaction_version_feature(harness: Harness) -> None:
    req = "TXN.R18"
    txns.newest(harness, ApiKey.END_TXN, txns.V2_END, note=False)
    top = txns.newest(harness, ApiKey.API_VERSIONS, "3+")
    v3 = api_versions(harness, 3)
    finalized = {f["Name"]: f for f in v3.get("FinalizedFeatures") or []}
    level = finalized.get(FEATURE, {}).get("MaxVersionLevel")
    verify.check(
        level is not None and level >= 0 and v3.get("FinalizedFeaturesEpoch", -1) >= 0,
        f"ApiVersions v3 of a broker advertising EndTxn v5: finalized {FEATURE} "
        f"{finalized.get(FEATURE)}, FinalizedFeaturesEpoch {v3.get('FinalizedFeaturesEpoch')}; "
        "expected the feature's level and an epoch >= 0",
        req,
    )
    from_zero = [f["Name"] for f in v3.get("SupportedFeatures") or [] if f["MinVersion"] == 0]
    verify.check(
        not from_zero,
        f"ApiVersions v3's SupportedFeatures lists {from_zero} with MinVersion 0; expected "
        "none (KIP-1022: v3 leaves out the features whose range starts at 0)",
        req,
    )
    supported = None
    if top >= 4:
        v4 = api_versions(harness, top)
        supported = {f["Name"]: f for f in v4.get("SupportedFeatures") or []}.get(FEATURE)
        verify.check(
            supported is not None
            and supported["MaxVersion"] >= V2_LEVEL
            and level is not None
            and supported["MinVersion"] <= level <= supported["MaxVersion"],
            f"ApiVersions v{top}: supported {FEATURE} {supported}, finalized level {level}; "
            f"expected a range reaching {V2_LEVEL} that holds the finalized level",
            req,
        )
    if not harness.can_check(ApiKey.UPDATE_FEATURES, req, within="1+"):
        return
    uv = txns.newest(harness, ApiKey.UPDATE_FEATURES, "1+", note=False)
    beyond = (supported["MaxVersion"] if supported else V2_LEVEL) + 1
    body = {
        "timeoutMs": 30000,
        "FeatureUpdates": [{"Feature": FEATURE, "MaxVersionLevel": beyond, "UpgradeType": 1}],
        "ValidateOnly": True,
    }
    answer = verify.expect_response(
        harness.connect(), ApiKey.UPDATE_FEATURES, uv, body, served=req
    ).body
    codes = {answer["ErrorCode"]} | {r["ErrorCode"] for r in answer.get("Results") or []}
    verify.check(
        ErrorCode.INVALID_UPDATE_VERSION in codes,
        f"UpdateFeatures v{uv} (ValidateOnly) of {FEATURE} to {beyond}, above the supported "
        f"range: ErrorCode {name(answer['ErrorCode'])}, results "
        f"{[(r['Feature'], r['ErrorCode']) for r in answer.get('Results') or []]}; expected "
        "95 (INVALID_UPDATE_VERSION)",
        req,
    )
