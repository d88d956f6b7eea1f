"""Faults of transactions, as a Kafka-compatible broker's implementer might get them wrong.

Each rewrites frames between the suite and a cluster (``faults_log.ProxiedCluster``): some
change what the broker is asked (it then does what a broken one would: an abort committed,
isolation ignored, RequireStable dropped), some change what it answers (markers or aborted
ranges missing from Fetch, the last stable offset reported as the high watermark, a fenced
epoch or a refused write answered NONE).
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records import decode_batches, encode_batch
from tests.support.faults_log import Fault


def _fetch_parts(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [p for t in body["Responses"] for p in t["Partitions"]]


class NoProducerIdForTransactions(Fault):
    """InitProducerId with a transactional id answers NONE without a producer id (TXN.R1)."""

    responses = (ApiKey.INIT_PRODUCER_ID,)

    def on_response(self, api, version, body, asked) -> bool:
        if not asked.get("TransactionalId") or body["ErrorCode"] != 0:
            return False
        body["ProducerId"], body["ProducerEpoch"] = -1, -1
        return True


class EpochNotBumped(Fault):
    """InitProducerId of a transactional id keeps answering the epoch it first gave (TXN.R2)."""

    responses = (ApiKey.INIT_PRODUCER_ID,)

    def __init__(self) -> None:
        super().__init__()
        self.first: dict[str, int] = {}

    def on_response(self, api, version, body, asked) -> bool:
        tid = asked.get("TransactionalId")
        if not tid or body["ErrorCode"] != 0:
            return False
        epoch = self.first.setdefault(tid, body["ProducerEpoch"])
        if epoch == body["ProducerEpoch"]:
            return False
        body["ProducerEpoch"] = epoch
        return True


#: the fencing codes a broken broker answers NONE instead
FENCING = (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED)


class FencedEpochAccepted(Fault):
    """A fenced epoch is answered NONE: EndTxn, AddPartitionsToTxn and transactional Produce
    (TXN.R3, and TXN.R10's producer after the timeout)."""

    responses = (ApiKey.END_TXN, ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.PRODUCE)

    def on_response(self, api, version, body, asked) -> bool:
        if api == ApiKey.END_TXN:
            if body["ErrorCode"] not in FENCING:
                return False
            body["ErrorCode"] = 0
            return True
        if api == ApiKey.PRODUCE:
            parts = [p for t in body["Responses"] for p in t["PartitionResponses"]]
            key = "ErrorCode"
        else:
            parts = [
                p
                for t in body.get("ResultsByTopicV3AndBelow") or []
                for p in t["ResultsByPartition"]
            ]
            key = "PartitionErrorCode"
        fenced = [p for p in parts if p[key] in FENCING]
        for p in fenced:
            p[key] = 0
        return bool(fenced)


class MarkersDropped(Fault):
    """Fetch answers leave the control batches (transaction markers) out (TXN.R4)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        changed = False
        for p in _fetch_parts(body):
            if not p["Records"]:
                continue
            batches = decode_batches(p["Records"], allow_partial=True)
            kept = [b for b in batches if not b.is_control]
            if len(kept) != len(batches):
                p["Records"] = b"".join(encode_batch(b) for b in kept)
                changed = True
        return changed


class IsolationIgnored(Fault):
    """Every Fetch is served read_uncommitted, whatever the consumer asked (TXN.R5)."""

    requests = (ApiKey.FETCH,)

    def on_request(self, api, version, body) -> bool:
        if body.get("IsolationLevel") != 1:
            return False
        body["IsolationLevel"] = 0
        return True


class StableOffsetIsHighWatermark(Fault):
    """Fetch reports the high watermark as the last stable offset (TXN.R6)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [
            p
            for p in _fetch_parts(body)
            if p.get("LastStableOffset", -1) >= 0 and p["LastStableOffset"] != p["HighWatermark"]
        ]
        for p in parts:
            p["LastStableOffset"] = p["HighWatermark"]
        return bool(parts)


class AbortedRangesDropped(Fault):
    """Fetch answers list no aborted transaction (TXN.R7)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [p for p in _fetch_parts(body) if p.get("AbortedTransactions")]
        for p in parts:
            p["AbortedTransactions"] = []
        return bool(parts)


class AbortCommits(Fault):
    """EndTxn's abort is carried out as a commit: the transaction's records and offsets
    become visible (TXN.R8)."""

    requests = (ApiKey.END_TXN,)

    def on_request(self, api, version, body) -> bool:
        if body["Committed"]:
            return False
        body["Committed"] = True
        return True


class RequireStableIgnored(Fault):
    """OffsetFetch ignores RequireStable: pending offsets are answered as absent (TXN.R9)."""

    requests = (ApiKey.OFFSET_FETCH,)

    def on_request(self, api, version, body) -> bool:
        if not body.get("RequireStable"):
            return False
        body["RequireStable"] = False
        return True


class MemberNotChecked(Fault):
    """A group-aware TxnOffsetCommit of a stale generation or an unknown member is answered
    NONE (TXN.R14)."""

    responses = (ApiKey.TXN_OFFSET_COMMIT,)

    def on_response(self, api, version, body, asked) -> bool:
        refused = (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID)
        parts = [p for t in body["Topics"] for p in t["Partitions"] if p["ErrorCode"] in refused]
        for p in parts:
            p["ErrorCode"] = 0
        return bool(parts)


class NotAddedAccepted(Fault):
    """A transactional batch for a partition not in the transaction is answered NONE
    (TXN.R11)."""

    responses = (ApiKey.PRODUCE,)

    def on_response(self, api, version, body, asked) -> bool:
        refused = (ErrorCode.INVALID_TXN_STATE, ErrorCode.TRANSACTION_ABORTABLE)
        parts = [
            p
            for t in body["Responses"]
            for p in t["PartitionResponses"]
            if p["ErrorCode"] in refused
        ]
        for p in parts:
            p["ErrorCode"], p["BaseOffset"] = 0, 0
        return bool(parts)


class EmptyEndAccepted(Fault):
    """EndTxn with no transaction is answered NONE (TXN.R12)."""

    responses = (ApiKey.END_TXN,)

    def on_response(self, api, version, body, asked) -> bool:
        if body["ErrorCode"] != ErrorCode.INVALID_TXN_STATE:
            return False
        body["ErrorCode"] = 0
        return True


class OngoingDescribedEmpty(Fault):
    """DescribeTransactions reports an Ongoing transaction as Empty (TXN.R13)."""

    responses = (ApiKey.DESCRIBE_TRANSACTIONS,)

    def on_response(self, api, version, body, asked) -> bool:
        states = [s for s in body["TransactionStates"] if s["TransactionState"] == "Ongoing"]
        for s in states:
            s["TransactionState"] = "Empty"
        return bool(states)


#: the first Produce version of transactions v2 (a transactional write adds its partition)
PRODUCE_V2 = 12


class EndDoesNotBump(Fault):
    """EndTxn v5 answers the producer's own epoch: no bump (TXN.R15)."""

    responses = (ApiKey.END_TXN,)

    def on_response(self, api, version, body, asked) -> bool:
        if version < 5 or body["ErrorCode"] != 0 or asked.get("ProducerEpoch", -1) < 0:
            return False
        body["ProducerId"], body["ProducerEpoch"] = asked["ProducerId"], asked["ProducerEpoch"]
        return True


class ImplicitAddRefused(Fault):
    """A transactional Produce v12+ is refused as if its partition had to be added first, as a
    broker that knows only transactions v1 answers it (TXN.R16)."""

    responses = (ApiKey.PRODUCE,)

    def on_response(self, api, version, body, asked) -> bool:
        if version < PRODUCE_V2 or not asked.get("TransactionalId"):
            return False
        parts = [p for t in body["Responses"] for p in t["PartitionResponses"]]
        for p in parts:
            p["ErrorCode"], p["BaseOffset"] = ErrorCode.TRANSACTION_ABORTABLE, -1
        return bool(parts)


class LateWriteAccepted(Fault):
    """A transactional Produce v12+ at a fenced epoch is answered NONE (TXN.R17)."""

    responses = (ApiKey.PRODUCE,)

    def on_response(self, api, version, body, asked) -> bool:
        if version < PRODUCE_V2:
            return False
        parts = [
            p
            for t in body["Responses"]
            for p in t["PartitionResponses"]
            if p["ErrorCode"] in FENCING
        ]
        for p in parts:
            p["ErrorCode"] = 0
        return bool(parts)


class TransactionVersionHidden(Fault):
    """ApiVersions v3+ finalizes no transaction.version and lists it as supported from 0 in v3
    too (TXN.R18)."""

    responses = (ApiKey.API_VERSIONS,)

    def on_response(self, api, version, body, asked) -> bool:
        if version < 3:
            return False
        body["FinalizedFeatures"] = [
            f for f in body.get("FinalizedFeatures") or [] if f["Name"] != "transaction.version"
        ]
        supported = [
            f for f in body.get("SupportedFeatures") or [] if f["Name"] != "transaction.version"
        ]
        body["SupportedFeatures"] = [
            *supported,
            {"Name": "transaction.version", "MinVersion": 0, "MaxVersion": 2},
        ]
        return True


class UpdateBeyondMaxAccepted(Fault):
    """UpdateFeatures takes a transaction.version level above the supported range: NONE where
    Kafka answers INVALID_UPDATE_VERSION (TXN.R18's UpdateFeatures part alone)."""

    responses = (ApiKey.UPDATE_FEATURES,)

    def on_response(self, api, version, body, asked) -> bool:
        if body["ErrorCode"] != ErrorCode.INVALID_UPDATE_VERSION:
            return False
        body["ErrorCode"], body["ErrorMessage"] = 0, None
        return True


TXN_FAULTS: dict[str, type[Fault]] = {
    "TXN.R1": NoProducerIdForTransactions,
    "TXN.R2": EpochNotBumped,
    "TXN.R3": FencedEpochAccepted,
    "TXN.R4": MarkersDropped,
    "TXN.R5": IsolationIgnored,
    "TXN.R6": StableOffsetIsHighWatermark,
    "TXN.R7": AbortedRangesDropped,
    "TXN.R8": AbortCommits,
    "TXN.R9": RequireStableIgnored,
    "TXN.R10": FencedEpochAccepted,
    "TXN.R11": NotAddedAccepted,
    "TXN.R12": EmptyEndAccepted,
    "TXN.R13": OngoingDescribedEmpty,
    "TXN.R14": MemberNotChecked,
    "TXN.R15": EndDoesNotBump,
    "TXN.R16": ImplicitAddRefused,
    "TXN.R17": LateWriteAccepted,
    "TXN.R18": TransactionVersionHidden,
}
