"""Produce (0), v3+: one v2 batch per partition, validated, stored as received (on a topic
whose message.timestamp.type is LogAppendTime, stamped with the leader's append time, which the
answer's LogAppendTimeMs carries), acknowledged per ``Acks`` (0: no answer, 1: once the leader
wrote it, -1: once the ISR has it).

Versions below 3 (legacy message sets) are not served, as in Kafka 4.0. Errors are Kafka's:
INVALID_REQUIRED_ACKS for acks outside -1/0/1, TOPIC_AUTHORIZATION_FAILED, and per partition
what the replica manager answers (UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER with the
current leader from v10, CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE,
NOT_ENOUGH_REPLICAS(_AFTER_APPEND), OUT_OF_ORDER_SEQUENCE_NUMBER, INVALID_PRODUCER_EPOCH,
REQUEST_TIMED_OUT). With acks=0 an error closes the connection instead, as Kafka does, since
there is no answer to carry it.

Transactional batches (KIP-98; WRITE on the TRANSACTIONAL_ID is ``security/authorize.py``'s):
the producer state refuses an older epoch (INVALID_PRODUCER_EPOCH, as Kafka 2.7+ answers a
fenced producer's Produce) and a non-transactional batch while the producer's transaction is
open (INVALID_TXN_STATE); the first transactional batch of a producer in a partition opens its
transaction there, which holds the last stable offset until the coordinator's marker. Before
that first batch the leader asks the coordinator whether the partition is in the transaction
(``txn_verification.py``: TRANSACTION_ABORTABLE for v11, INVALID_TXN_STATE before, when it is
not), as Kafka 3.9 does. From v12 (transaction version 2, KIP-890 part 2) the leader asks the
coordinator to add the partition to the transaction instead (the client sends no
AddPartitionsToTxn); a batch at an epoch older than the partition's (a late write of a transaction
whose end bumped the epoch) is INVALID_PRODUCER_EPOCH, the hanging-transaction defence.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records.entries import MAGIC_OFFSET
from conformance.protocol.records.header import HEADER_SIZE, MAGIC, BatchHeader, parse_header
from reference_impl.handlers.data_common import current_leader, node_endpoints
from reference_impl.handlers.txn_verification import Verifier
from reference_impl.net.listener import CLOSE, Api, RequestContext
from reference_impl.roles import BrokerView

MIN_VERSION = 3
#: v12: a transaction-version-2 client's transactional Produce adds its partition to the
#: transaction (KIP-890 part 2); v13: topics named by id (KIP-516; an unknown id is
#: UNKNOWN_TOPIC_ID), answered by id
MAX_VERSION = 13
TOPIC_IDS_VERSION = 13
_NOT_ADDED = (ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.INVALID_TXN_STATE)


def api(node: BrokerView) -> Api:
    verifier = Verifier(node)

    async def handle(ctx: RequestContext, body: dict) -> dict | None:
        return await produce(node, ctx, body, verifier)

    return Api(ApiKey.PRODUCE, handle, min_version=MIN_VERSION, max_version=MAX_VERSION)


async def produce(
    node: BrokerView, ctx: RequestContext, body: dict, verifier: Verifier | None = None
) -> Any:
    v = ctx.version
    acks = body["Acks"]
    answers: dict[tuple[str, int], tuple[int, int, int, str | None, int]] = {}
    entries = []
    names = [_name(node, t, v) for t in body["TopicData"]]
    for t, name in zip(body["TopicData"], names, strict=True):
        allowed = name is not None and node.authorize(ctx.session, "WRITE", ("TOPIC", name))
        for p in t["PartitionData"]:
            key = (name if name is not None else str(t["TopicId"]), p["Index"])
            records = p["Records"]
            if name is None:
                answers[key] = (int(ErrorCode.UNKNOWN_TOPIC_ID), -1, -1, None, -1)
            elif acks not in (-1, 0, 1):
                answers[key] = (int(ErrorCode.INVALID_REQUIRED_ACKS), -1, -1, None, -1)
            elif not allowed:
                answers[key] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, -1, -1, None, -1)
            else:
                entries.append((name, p["Index"], records))
    tid = body.get("TransactionalId")
    guards: dict[tuple[str, int], tuple[int, int]] = {}
    if entries and tid is not None and verifier is not None:
        entries = await _verified(node, verifier, tid, v, entries, answers, guards)
    if entries:
        results = await node.replica_manager.append_records(
            acks, body["TimeoutMs"], entries, produce_version=v, guards=guards
        )
        for key, r in results.items():
            answers[key] = (
                r.error,
                r.base_offset,
                r.log_start_offset,
                r.message,
                r.log_append_time,
            )
    if acks == 0:
        return CLOSE if any(a[0] for a in answers.values()) else None
    leaders: set[int] = set()
    topics = []
    for t, name in zip(body["TopicData"], names, strict=True):
        parts = []
        for p in t["PartitionData"]:
            key = (name if name is not None else str(t["TopicId"]), p["Index"])
            code, base, start, message, append_time = answers[key]
            entry: dict[str, Any] = {
                "Index": p["Index"],
                "ErrorCode": code,
                "BaseOffset": base,
                "LogAppendTimeMs": append_time,
                "LogStartOffset": start,
                "RecordErrors": [],
                "ErrorMessage": message if code else None,
            }
            if code == ErrorCode.NOT_LEADER_OR_FOLLOWER and v >= 10:
                leader = current_leader(node, *key)
                if leader is not None:
                    entry["CurrentLeader"] = leader
                    leaders.add(leader["LeaderId"])
            parts.append(entry)
        if parts:  # Kafka answers per partition: a topic listed with none is not answered
            ident = {"TopicId": t["TopicId"]} if v >= TOPIC_IDS_VERSION else {"Name": t["Name"]}
            topics.append({**ident, "PartitionResponses": parts})
    response: dict[str, Any] = {"Responses": topics, "ThrottleTimeMs": 0}
    if v >= 10 and leaders:
        response["NodeEndpoints"] = node_endpoints(node, ctx, leaders)
    return response


async def _verified(
    node: BrokerView,
    verifier: Verifier,
    tid: str,
    version: int,
    entries: list[tuple[str, int, Any]],
    answers: dict,
    guards: dict[tuple[str, int], tuple[int, int]],
) -> list[tuple[str, int, Any]]:
    """The entries whose transactional batch may be appended; the others answered with the
    coordinator's verdict. Only a producer's first batch of a transaction in a partition it
    leads here is verified (one with its transaction open there needs no second look); each
    verified one gets a guard, so that a marker written meanwhile makes its append
    INVALID_TXN_STATE, as Kafka's VerificationGuard does."""
    rm = node.replica_manager
    to_verify: list[tuple[str, int]] = []
    producer: tuple[int, int] | None = None
    for name, index, records in entries:
        h = _header(records)
        if h is None or not h.is_transactional or h.producer_id < 0:
            continue
        p = rm.partitions.get((name, index))
        if p is None or not p.is_leader:
            continue
        if rm.transaction_open(name, index, h.producer_id, h.producer_epoch):
            continue
        producer = producer or (h.producer_id, h.producer_epoch)
        to_verify.append((name, index))
        guards[(name, index)] = (h.producer_id, p.log.producers.guard(h.producer_id))
    if producer is None:
        return entries
    verdicts = await verifier.verify(tid, *producer, to_verify, version)
    kept = []
    for entry in entries:
        code = verdicts.get((entry[0], entry[1]), 0)
        if code:
            message = "the partition is not in the transaction" if code in _NOT_ADDED else None
            answers[(entry[0], entry[1])] = (code, -1, -1, message, -1)
        else:
            kept.append(entry)
    return kept


def _name(node: BrokerView, topic: dict, version: int) -> str | None:
    """The topic a TopicData entry names (v13+: by id; None for an id the broker does not know)."""
    if version < TOPIC_IDS_VERSION:
        return topic["Name"]
    return node.metadata_cache.topic_ids.get(topic["TopicId"])


def _header(records: Any) -> BatchHeader | None:
    if not records or len(records) < HEADER_SIZE or records[MAGIC_OFFSET] != MAGIC:
        return None
    return parse_header(records, 0)
