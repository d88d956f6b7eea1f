"""Faults of the data plane, as a Kafka-compatible broker's implementer might get them wrong.

Each fault rewrites frames between the suite and the reference cluster (``FaultyProxy``): some
rewrite requests before the broker sees them (the broker then does what a broken one would),
some rewrite answers. ``ProxiedCluster`` puts one proxy in front of every broker and points the
brokers' advertised endpoints (Metadata, DescribeCluster, FindCoordinator) at the proxies, so
that a client following leaders never leaves the faulty path.
"""

from __future__ import annotations

import copy
import dataclasses
import time
from typing import Any

from crc32c import crc32c

from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.framing import (
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)
from conformance.protocol.records import (
    TimestampType,
    decode_batches,
    encode_batch,
)
from conformance.targets.base import Endpoint, Target
from tests.support.proxies import FaultyProxy

CODEC = Codec.from_specs()
#: a v2 batch: the CRC-32C at byte 17 covers everything from byte 21 (the attributes) on
CRC_AT, CRC_FROM, ATTRIBUTES_AT = 17, 21, 21
#: producer id (int64), epoch (int16) and base sequence (int32) follow the timestamps
PRODUCER_AT, NO_PRODUCER = 43, b"\xff" * 8


class Fault:
    """Rewrites nothing; subclasses override ``on_request`` / ``on_response`` (decoded bodies,
    changed in place; return True when changed)."""

    requests: tuple[int, ...] = ()
    responses: tuple[int, ...] = ()

    def __init__(self) -> None:
        #: correlation id -> decoded request body, for answers that depend on the request
        self.asked: dict[int, dict[str, Any]] = {}
        #: frames this fault changed
        self.changed = 0

    def request(self, api: int, version: int, frame: bytes) -> bytes:
        if api not in self.requests and api not in self.responses:
            return frame
        header, body = decode_request(CODEC, frame)
        self.asked[header["CorrelationId"]] = copy.deepcopy(body)
        if api not in self.requests or not self.on_request(api, version, body):
            return frame
        self.changed += 1
        return encode_request(
            CODEC, api, version, header["CorrelationId"], header["ClientId"], body
        )

    def response(self, api: int, version: int, frame: bytes) -> bytes:
        if api not in self.responses:
            return frame
        header, body = decode_response(CODEC, api, version, frame)
        asked = self.asked.pop(header["CorrelationId"], {})
        if not self.on_response(api, version, body, asked):
            return frame
        self.changed += 1
        return encode_response(CODEC, api, version, header["CorrelationId"], body)

    def on_request(self, api: int, version: int, body: dict) -> bool:
        return False

    def on_response(self, api: int, version: int, body: dict, asked: dict) -> bool:
        return False


def _produce_parts(body: dict):
    return [p for t in body["Responses"] for p in t["PartitionResponses"]]


def _fetch_parts(body: dict):
    return [p for t in body["Responses"] for p in t["Partitions"]]


def _rewrite_batches(records: bytes | None, change) -> bytes | None:
    """Each whole batch of ``records`` passed through ``change`` and encoded again."""
    if not records:
        return records
    return b"".join(encode_batch(change(b)) for b in decode_batches(records, allow_partial=True))


# --- the faults -------------------------------------------------------------------------------


class HeadersDropped(Fault):
    """Fetch returns records without their headers (LOG.R1)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        def strip(b):
            return dataclasses.replace(
                b, records=tuple(dataclasses.replace(r, headers=()) for r in b.records)
            )

        changed = False
        for p in _fetch_parts(body):
            new = _rewrite_batches(p["Records"], strip)
            changed |= new != p["Records"]
            p["Records"] = new
        return changed


class BaseOffsetOffByOne(Fault):
    """Produce acknowledges every batch one offset later than it was written (LOG.R2)."""

    responses = (ApiKey.PRODUCE,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [p for p in _produce_parts(body) if p["ErrorCode"] == 0]
        for p in parts:
            p["BaseOffset"] += 1
        return bool(parts)


class EveryWriteToPartitionZero(Fault):
    """A write to any partition is stored in partition 0, and acknowledged as the partition the
    client named (LOG.R3)."""

    requests = responses = (ApiKey.PRODUCE,)

    def on_request(self, api, version, body) -> bool:
        moved = [p for t in body["TopicData"] for p in t["PartitionData"] if p["Index"] != 0]
        for p in moved:
            p["Index"] = 0
        return bool(moved)

    def on_response(self, api, version, body, asked) -> bool:
        named = [p["Index"] for t in asked.get("TopicData", []) for p in t["PartitionData"]]
        parts = _produce_parts(body)
        if len(named) != len(parts):
            return False
        for p, index in zip(parts, named, strict=True):
            p["Index"] = index
        return True


class UnknownPartitionAccepted(Fault):
    """Produce to a partition the broker does not have is acknowledged: an unknown partition
    index, or a deleted topic (LOG.R4, LOG.R17)."""

    responses = (ApiKey.PRODUCE,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [
            p
            for p in _produce_parts(body)
            if p["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        ]
        for p in parts:
            p["ErrorCode"], p["BaseOffset"], p["ErrorMessage"] = 0, 0, None
        return bool(parts)


class UnknownTopicIdAnsweredByName(Fault):
    """A topic id the broker does not know is answered as an unknown topic name would be,
    UNKNOWN_TOPIC_OR_PARTITION, by Produce and Fetch (LOG.R23)."""

    responses = (ApiKey.PRODUCE, ApiKey.FETCH)

    def on_response(self, api, version, body, asked) -> bool:
        parts = _produce_parts(body) if api == ApiKey.PRODUCE else _fetch_parts(body)
        unknown = [p for p in parts if p["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_ID]
        for p in unknown:
            p["ErrorCode"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return bool(unknown)


class AcksZeroAnswered(Fault):
    """acks=0 is treated as acks=1, so it gets an answer (LOG.R5)."""

    requests = (ApiKey.PRODUCE,)

    def on_request(self, api, version, body) -> bool:
        if body["Acks"] != 0:
            return False
        body["Acks"] = 1
        return True


class HighWatermarkOffByOne(Fault):
    """Fetch reports the high watermark one short of the log end (LOG.R6)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [p for p in _fetch_parts(body) if p["HighWatermark"] > 0]
        for p in parts:
            p["HighWatermark"] -= 1
        return bool(parts)


class OutOfRangeAnsweredEmpty(Fault):
    """A Fetch past the log end is answered empty without error (LOG.R7)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [p for p in _fetch_parts(body) if p["ErrorCode"] == ErrorCode.OFFSET_OUT_OF_RANGE]
        for p in parts:
            p["ErrorCode"] = 0
        return bool(parts)


class MaxWaitIgnored(Fault):
    """An empty Fetch is answered at once whatever its MaxWaitMs (LOG.R8)."""

    requests = (ApiKey.FETCH,)

    def on_request(self, api, version, body) -> bool:
        if body["MaxWaitMs"] == 0:
            return False
        body["MaxWaitMs"] = 0
        return True


class FetchLimitStrict(Fault):
    """A Fetch whose first batch is over PartitionMaxBytes returns nothing (no KIP-74: a
    consumer with a small limit is stuck) (LOG.R9)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        limits = [p["PartitionMaxBytes"] for t in asked.get("Topics", []) for p in t["Partitions"]]
        if not limits:
            return False
        parts = [p for p in _fetch_parts(body) if len(p["Records"] or b"") > min(limits)]
        for p in parts:
            p["Records"] = b""
        return bool(parts)


class ListOffsetsOffByOne(Fault):
    """ListOffsets answers one past the right offset (LOG.R10-R12)."""

    responses = (ApiKey.LIST_OFFSETS,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [p for t in body["Topics"] for p in t["Partitions"] if p["Offset"] >= 0]
        for p in parts:
            p["Offset"] += 1
        return bool(parts)


class StampedWithAppendTime(Fault):
    """Fetched batches carry the broker's append time whatever the topic says (LOG.R13)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        now = int(time.time() * 1000)

        def stamp(b):
            return dataclasses.replace(
                b, timestamp_type=TimestampType.LOG_APPEND_TIME, max_timestamp=now
            )

        changed = False
        for p in _fetch_parts(body):
            new = _rewrite_batches(p["Records"], stamp)
            changed |= new != p["Records"]
            p["Records"] = new
        return changed


class TimestampTypeIgnored(Fault):
    """The broker ignores message.timestamp.type: topics keep CreateTime (modelled by dropping
    the config from CreateTopics on the way in) (LOG.R18)."""

    requests = (ApiKey.CREATE_TOPICS,)

    def on_request(self, api, version, body) -> bool:
        changed = False
        for t in body["Topics"]:
            kept = [c for c in t["Configs"] if c["Name"] != "message.timestamp.type"]
            if len(kept) != len(t["Configs"]):
                t["Configs"] = kept
                changed = True
        return changed


class CodecBitsLost(Fault):
    """Compressed batches are fetched back marked uncompressed (the codec attribute lost, the
    CRC recomputed), so no consumer can read them (LOG.R14)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        changed = False
        for p in _fetch_parts(body):
            data = bytearray(p["Records"] or b"")
            pos = 0
            while pos + 61 <= len(data):
                length = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
                if pos + length > len(data):
                    break
                if data[pos + ATTRIBUTES_AT + 1] & 0x07:
                    data[pos + ATTRIBUTES_AT + 1] &= 0xF8
                    crc = crc32c(bytes(data[pos + CRC_FROM : pos + length]))
                    data[pos + CRC_AT : pos + CRC_AT + 4] = crc.to_bytes(4, "big")
                    changed = True
                pos += length
            if changed:
                p["Records"] = bytes(data)
        return changed


class ZstdAcceptedEarly(Fault):
    """zstd batches in Produce below v7 are acknowledged (LOG.R15)."""

    responses = (ApiKey.PRODUCE,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [
            p
            for p in _produce_parts(body)
            if p["ErrorCode"] == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
        ]
        for p in parts:
            p["ErrorCode"], p["BaseOffset"], p["ErrorMessage"] = 0, 0, None
        return bool(parts)


class CrcNotChecked(Fault):
    """The broker appends batches whatever their CRC says (modelled by correcting the CRC on
    the way in, so the reference appends the batch a careless broker would) (LOG.R16)."""

    requests = (ApiKey.PRODUCE,)

    def on_request(self, api, version, body) -> bool:
        changed = False
        for t in body["TopicData"]:
            for p in t["PartitionData"]:
                data = bytearray(p["Records"] or b"")
                if len(data) < 61:
                    continue
                crc = crc32c(bytes(data[CRC_FROM:]))
                if data[CRC_AT : CRC_AT + 4] != crc.to_bytes(4, "big"):
                    data[CRC_AT : CRC_AT + 4] = crc.to_bytes(4, "big")
                    p["Records"] = bytes(data)
                    changed = True
        return changed


class NoProducerId(Fault):
    """InitProducerId answers success without giving a producer id (IDEMPOTENCE.R1)."""

    responses = (ApiKey.INIT_PRODUCER_ID,)

    def on_response(self, api, version, body, asked) -> bool:
        if body["ErrorCode"] != 0:
            return False
        body["ProducerId"] = -1
        return True


class IdempotenceIgnored(Fault):
    """The broker ignores producer ids: every batch is appended as if it carried none, so
    retries are duplicated and neither gaps nor old epochs are refused (modelled by clearing
    the producer fields on the way in) (IDEMPOTENCE.R2-R4)."""

    requests = (ApiKey.PRODUCE,)

    def on_request(self, api, version, body) -> bool:
        changed = False
        for t in body["TopicData"]:
            for p in t["PartitionData"]:
                data = bytearray(p["Records"] or b"")
                if len(data) < 61 or data[PRODUCER_AT : PRODUCER_AT + 8] == NO_PRODUCER:
                    continue
                data[PRODUCER_AT : PRODUCER_AT + 14] = NO_PRODUCER + b"\xff\xff" + b"\xff" * 4
                crc = crc32c(bytes(data[CRC_FROM:]))
                data[CRC_AT : CRC_AT + 4] = crc.to_bytes(4, "big")
                p["Records"] = bytes(data)
                changed = True
        return changed


class AnswerRewritten(Fault):
    """Turns one error code into NONE in the topic entries of one API's answers."""

    api: int = ApiKey.CREATE_TOPICS
    entries: str = "Topics"
    code: int = 0

    def __init__(self) -> None:
        super().__init__()
        self.responses = (self.api,)

    def on_response(self, api, version, body, asked) -> bool:
        hit = [t for t in body[self.entries] if t["ErrorCode"] == self.code]
        for t in hit:
            t["ErrorCode"] = 0
            if "ErrorMessage" in t:
                t["ErrorMessage"] = None
        return bool(hit)


class IllegalNamesAccepted(AnswerRewritten):
    """CreateTopics takes any name (TOPICS.R1)."""

    code = ErrorCode.INVALID_TOPIC_EXCEPTION


class ExistingTopicAccepted(AnswerRewritten):
    """CreateTopics of an existing topic answers success (TOPICS.R2)."""

    code = ErrorCode.TOPIC_ALREADY_EXISTS


class ReplicationFactorUnchecked(AnswerRewritten):
    """CreateTopics accepts any replication factor (TOPICS.R3)."""

    code = ErrorCode.INVALID_REPLICATION_FACTOR


class PartitionCountUnchecked(AnswerRewritten):
    """CreateTopics accepts any partition count (TOPICS.R4)."""

    code = ErrorCode.INVALID_PARTITIONS


class ShrinkAccepted(AnswerRewritten):
    """CreatePartitions answers success to a count not above the current one (TOPICS.R8)."""

    api, entries, code = ApiKey.CREATE_PARTITIONS, "Results", ErrorCode.INVALID_PARTITIONS


class IllegalNameListed(AnswerRewritten):
    """Metadata reports an illegal name as an existing topic (TOPICS.R9)."""

    api, code = ApiKey.METADATA, ErrorCode.INVALID_TOPIC_EXCEPTION


class ValidateOnlyIgnored(Fault):
    """CreateTopics with validateOnly creates the topic (TOPICS.R5)."""

    requests = (ApiKey.CREATE_TOPICS,)

    def on_request(self, api, version, body) -> bool:
        if not body.get("validateOnly"):
            return False
        body["validateOnly"] = False
        return True


class LeaderNotListed(Fault):
    """Metadata names partition leaders by a stale id no listed broker has (TOPICS.R6)."""

    responses = (ApiKey.METADATA,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [p for t in body["Topics"] for p in t["Partitions"] or []]
        for p in parts:
            p["LeaderId"] += 1000
        return bool(parts)


class TopicIdReused(Fault):
    """A topic created again under a name keeps the first topic id the name had (TOPICS.R7)."""

    responses = (ApiKey.CREATE_TOPICS, ApiKey.METADATA)

    def __init__(self) -> None:
        super().__init__()
        self.first: dict[str, Any] = {}

    def on_response(self, api, version, body, asked) -> bool:
        changed = False
        for t in body["Topics"]:
            tid = t.get("TopicId")
            if tid is None or tid.int == 0 or t["ErrorCode"] != 0:
                continue
            first = self.first.setdefault(t["Name"], tid)
            if first != tid:
                t["TopicId"] = first
                changed = True
        return changed


class AutoCreateAlways(Fault):
    """Metadata auto-creates topics even when the request forbids it (TOPICS.R10)."""

    requests = (ApiKey.METADATA,)

    def on_request(self, api, version, body) -> bool:
        if version < 4 or body.get("AllowAutoTopicCreation", True) or not body["Topics"]:
            return False
        body["AllowAutoTopicCreation"] = True
        return True


class LogStartNotMoved(Fault):
    """DeleteRecords answers the low watermark asked for but the log start stays where it was
    (modelled by asking the broker for offset 0, which moves nothing) (LOG.R19)."""

    requests = responses = (ApiKey.DELETE_RECORDS,)

    def on_request(self, api, version, body) -> bool:
        parts = [p for t in body["Topics"] for p in t["Partitions"]]
        for p in parts:
            p["Offset"] = 0
        return bool(parts)

    def on_response(self, api, version, body, asked) -> bool:
        wanted = {
            (t["Name"], p["PartitionIndex"]): p["Offset"]
            for t in asked.get("Topics", [])
            for p in t["Partitions"]
        }
        changed = False
        for t in body["Topics"]:
            for p in t["Partitions"]:
                offset = wanted.get((t["Name"], p["PartitionIndex"]), -1)
                if offset >= 0 and p["ErrorCode"] == 0:
                    p["LowWatermark"] = offset
                    changed = True
        return changed


def _rotated(entries: list[dict], field: str) -> bool:
    """Each entry's ``field`` moved to the next entry (the last's to the first); whether
    anything changed."""
    values = [e[field] for e in entries]
    moved = values[1:] + values[:1]
    for e, v in zip(entries, moved, strict=True):
        e[field] = v
    return moved != values


def _by_topic(topics: list[dict], name: str, parts: str) -> list[list[dict]]:
    """The partition entries of an answer grouped by topic name (a topic may have several
    entries)."""
    grouped: dict[str, list[dict]] = {}
    for t in topics:
        grouped.setdefault(t[name], []).extend(t[parts])
    return list(grouped.values())


class MovedWithinTopic(Fault):
    """Answers give each partition ``field`` of another partition of the same topic in the
    request (the next one's; the last's goes to the first)."""

    api: int = ApiKey.FETCH
    #: the answer's topic entries, a topic's name and its partition entries
    keys: tuple[str, str, str] = ("Responses", "Topic", "Partitions")
    field: str = "Records"

    def __init__(self) -> None:
        super().__init__()
        self.responses = (self.api,)

    def on_response(self, api, version, body, asked) -> bool:
        topics, name, parts = self.keys
        changed = False
        for entries in _by_topic(body[topics], name, parts):
            changed |= _rotated(entries, self.field)
        return changed


class BaseOffsetsMoved(MovedWithinTopic):
    """Produce answers give each partition another partition's base offset (LOG.R20)."""

    api, keys, field = ApiKey.PRODUCE, ("Responses", "Name", "PartitionResponses"), "BaseOffset"


class RecordsMoved(MovedWithinTopic):
    """Fetch answers give each partition another partition's records (LOG.R21)."""


class LogStartReportedZero(Fault):
    """Fetch answers LogStartOffset 0 whatever DeleteRecords did (LOG.R22)."""

    responses = (ApiKey.FETCH,)

    def on_response(self, api, version, body, asked) -> bool:
        parts = [p for p in _fetch_parts(body) if p.get("LogStartOffset", 0) > 0]
        for p in parts:
            p["LogStartOffset"] = 0
        return bool(parts)


#: requirement id -> the fault that must make it FAIL
LOG_FAULTS: dict[str, type[Fault]] = {
    "LOG.R1": HeadersDropped,
    "LOG.R2": BaseOffsetOffByOne,
    "LOG.R3": EveryWriteToPartitionZero,
    "LOG.R4": UnknownPartitionAccepted,
    "LOG.R5": AcksZeroAnswered,
    "LOG.R6": HighWatermarkOffByOne,
    "LOG.R7": OutOfRangeAnsweredEmpty,
    "LOG.R8": MaxWaitIgnored,
    "LOG.R9": FetchLimitStrict,
    "LOG.R10": ListOffsetsOffByOne,
    "LOG.R11": ListOffsetsOffByOne,
    "LOG.R12": ListOffsetsOffByOne,
    "LOG.R13": StampedWithAppendTime,
    "LOG.R14": CodecBitsLost,
    "LOG.R15": ZstdAcceptedEarly,
    "LOG.R16": CrcNotChecked,
    "LOG.R17": UnknownPartitionAccepted,
    "LOG.R18": TimestampTypeIgnored,
    "LOG.R19": LogStartNotMoved,
    "LOG.R20": BaseOffsetsMoved,
    "LOG.R21": RecordsMoved,
    "LOG.R22": LogStartReportedZero,
    "LOG.R23": UnknownTopicIdAnsweredByName,
}
TOPICS_FAULTS: dict[str, type[Fault]] = {
    "TOPICS.R1": IllegalNamesAccepted,
    "TOPICS.R2": ExistingTopicAccepted,
    "TOPICS.R3": ReplicationFactorUnchecked,
    "TOPICS.R4": PartitionCountUnchecked,
    "TOPICS.R5": ValidateOnlyIgnored,
    "TOPICS.R6": LeaderNotListed,
    "TOPICS.R7": TopicIdReused,
    "TOPICS.R8": ShrinkAccepted,
    "TOPICS.R9": IllegalNameListed,
    "TOPICS.R10": AutoCreateAlways,
}
IDEMPOTENCE_FAULTS: dict[str, type[Fault]] = {
    "IDEMPOTENCE.R1": NoProducerId,
    "IDEMPOTENCE.R2": IdempotenceIgnored,
    "IDEMPOTENCE.R3": IdempotenceIgnored,
    "IDEMPOTENCE.R4": IdempotenceIgnored,
}


# --- one proxy per broker ---------------------------------------------------------------------


class ProxiedCluster:
    """A FaultyProxy in front of every broker of ``target``, with ``fault`` on each; the
    brokers' endpoints in Metadata, DescribeCluster and FindCoordinator answers point at the
    proxies. ``target()`` is an external target whose bootstrap is the first proxy."""

    ADVERTISING = (ApiKey.METADATA, ApiKey.FIND_COORDINATOR, ApiKey.DESCRIBE_CLUSTER)

    def __init__(self, target: Target, fault: Fault | None = None) -> None:
        self.fault = fault or Fault()
        self.upstream = list(target.bootstrap)
        self.proxies = [
            FaultyProxy((ep.host, ep.port), self._response, self._request) for ep in self.upstream
        ]
        self.mapped: dict[tuple[str, int], int] = {}

    def __enter__(self) -> ProxiedCluster:
        for proxy, ep in zip(self.proxies, self.upstream, strict=True):
            proxy.__enter__()
            self.mapped[(ep.host, ep.port)] = proxy.port
        return self

    def __exit__(self, *exc: object) -> None:
        for proxy in self.proxies:
            proxy.__exit__(*exc)

    @property
    def rewritten(self) -> int:
        return sum(p.rewritten for p in self.proxies)

    @property
    def bootstrap(self) -> str:
        return ",".join(p.address for p in self.proxies)

    def target(self) -> Target:
        return Target(
            kind="external",
            name="proxied",
            bootstrap=[Endpoint("127.0.0.1", p.port) for p in self.proxies],
        )

    def _request(self, api: int, version: int, frame: bytes) -> bytes:
        return self.fault.request(api, version, frame)

    def _response(self, api: int, version: int, frame: bytes) -> bytes:
        frame = self.fault.response(api, version, frame)
        if api not in self.ADVERTISING:
            return frame
        header, body = decode_response(CODEC, api, version, frame)
        if not self._repoint(body):
            return frame
        return encode_response(CODEC, api, version, header["CorrelationId"], body)

    def _repoint(self, value: Any) -> bool:
        changed = False
        if isinstance(value, dict):
            port = self.mapped.get((value.get("Host"), value.get("Port")))
            if port is not None:
                value["Port"] = port
                changed = True
            for v in value.values():
                changed |= self._repoint(v)
        elif isinstance(value, list):
            for v in value:
                changed |= self._repoint(v)
        return changed
