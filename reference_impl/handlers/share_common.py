"""What ShareFetch and ShareAcknowledge share: the broker's share sessions and partitions
(``groups/share_sessions.py``), the group's share configs, acknowledgement batches applied to a
share partition, and the record offsets of a partition's log."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from conformance.protocol import ErrorCode, KafkaError
from conformance.protocol.records.batch import decode_batch_at
from conformance.protocol.records.entries import complete_entries
from reference_impl.config import GROUP_CONFIGS
from reference_impl.groups.share_partition import SharePartition
from reference_impl.groups.share_sessions import ShareSessions
from reference_impl.replica.faults import BrokerFaults
from reference_impl.roles import BrokerView

#: a partition answer's CurrentLeader where it names no new leader: Kafka 4.4.0 leaves the
#: field's defaults (0, 0) unless the partition is answered NOT_LEADER_OR_FOLLOWER (seen in
#: ``diff --models`` with the share-group model: LeaderId 0 on brokers numbered from 1)
NO_LEADER_CHANGE = {"LeaderId": 0, "LeaderEpoch": 0}
#: how much of a partition's log one acquisition reads at most
READ_BYTES = 1 << 20
#: the broker's share-partition state, in its data directory
STORE = "share-partitions.json"


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def faults(node: BrokerView) -> BrokerFaults:
    """The broker's test-only faults (``replica/faults.py``): all off unless a test set them."""
    settings = getattr(node.config, "settings", None) or {}
    return BrokerFaults.from_settings(settings.get("faults"))


def sessions(node: BrokerView) -> ShareSessions:
    found = getattr(node, "share_sessions", None)
    if found is None:
        forget = faults(node).forget_share_state
        found = ShareSessions(now_ms, None if forget else Path(node.data_dir) / STORE)
        node.share_sessions = found
    return found


def group_config(node: BrokerView, group: str, name: str) -> str:
    value = node.metadata_cache.group_configs.get(group, {}).get(name)
    default = GROUP_CONFIGS[name].default
    return value if value is not None else (default or "")


def lock_duration_ms(node: BrokerView, group: str) -> int:
    return int(group_config(node, group, "share.record.lock.duration.ms"))


def share_partition(
    node: BrokerView, group: str, topic_id: uuid.UUID, index: int
) -> tuple[str, SharePartition]:
    """The topic's name and the group's share partition, led here (else KafkaError)."""
    name = node.metadata_cache.topic_ids.get(topic_id)
    if name is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_ID, None)
    p = node.replica_manager.partition_or_error(name, index)

    def start() -> int:
        if group_config(node, group, "share.auto.offset.reset") == "latest":
            return int(p.high_watermark)
        return int(p.log.log_start_offset)  # earliest (by_duration: read as earliest)

    sp = sessions(node).partition(
        group,
        (topic_id, index),
        start,
        lock_duration_ms(node, group),
        int(group_config(node, group, "share.delivery.count.limit")),
    )
    return name, sp


def acknowledge(sp: SharePartition, member: str, batches: list[dict], renew: bool = True) -> int:
    """Apply a partition's acknowledgement batches in order; the first error, else NONE.
    ``renew``: the group's share.renew.acknowledge.enable (a RENEW is refused without it)."""
    error = 0
    for b in batches:
        types = list(b["AcknowledgeTypes"])
        got = sp.acknowledge(member, b["FirstOffset"], b["LastOffset"], types, now_ms(), renew)
        error = error or int(got)
    return error


#: the acknowledge types of each version (KIP-1222: RENEW from v2)
MAX_TYPE_V1, MAX_TYPE_V2 = 3, 4


def batches_invalid(batches: list[dict], version: int, renew_ack: bool) -> bool:
    """Whether a partition's acknowledgement batches are malformed for the request, which Kafka
    4.4.0 answers INVALID_REQUEST for that partition before touching the share partition: a
    batch whose first offset passes its last or comes before the previous batch's last, no
    types, a count of types neither 1 nor one per offset, a type above the version's (RENEW 4
    from v2), or a RENEW in a request whose IsRenewAck is false."""
    top = MAX_TYPE_V2 if version >= 2 else MAX_TYPE_V1
    previous = -1
    for b in batches:
        first, last, types = b["FirstOffset"], b["LastOffset"], list(b["AcknowledgeTypes"] or [])
        if first > last or first < previous or not types:
            return True
        if len(types) > 1 and last - first + 1 != len(types):
            return True
        if any(t < 0 or t > top for t in types) or (4 in types and not renew_ack):
            return True
        previous = last
    return False


def renew_enabled(node: BrokerView, group: str) -> bool:
    return group_config(node, group, "share.renew.acknowledge.enable").lower() == "true"


#: ListOffsets' isolation level and timestamp a read_committed share read bounds itself by
READ_COMMITTED, LATEST = 1, -1
#: the control type of a transaction's abort marker (1 commits)
ABORT = 0


def read_committed(node: BrokerView, group: str) -> bool:
    if faults(node).share_read_uncommitted:
        return False
    return group_config(node, group, "share.isolation.level") == "read_committed"


def log_batches(
    node: BrokerView, name: str, index: int, offset: int, committed_only: bool = False
) -> tuple[list[tuple[int, int, bytes, list[int]]], list[int]]:
    """The batches of a partition from ``offset`` up to the high watermark: (base, last
    offset, raw bytes, the offsets of its records; none for a control batch); and, with
    ``committed_only`` (the group's share.isolation.level read_committed), only those below
    the last stable offset and not of an aborted transaction, whose records' offsets come
    second (Kafka archives them: never delivered)."""
    data = node.replica_manager.read(name, index, offset, READ_BYTES)
    decoded = [
        (decode_batch_at(data, s, e, index=i), data[s:e])
        for i, (s, e, _magic) in enumerate(complete_entries(data, allow_partial=True, noun="batch"))
    ]
    out = [
        (
            b.base_offset,
            b.last_offset,
            raw,
            [] if b.is_control else [b.base_offset + r.offset_delta for r in b.records],
        )
        for b, raw in decoded
    ]
    if not committed_only:
        return out, []
    stable = node.replica_manager.list_offset(-1, READ_COMMITTED, name, index, -1, LATEST).offset
    # each transactional batch's fate: its producer's next marker (None: not in this read)
    next_marker: dict[int, int] = {}
    fate: list[int | None] = []
    for b, _raw in reversed(decoded):
        if b.is_control and b.records:
            next_marker[b.producer_id] = b.control_types()[0]
        fate.append(next_marker.get(b.producer_id) if b.is_transactional else 1)
    fate.reverse()
    kept: list[tuple[int, int, bytes, list[int]]] = []
    archived: list[int] = []
    for (b, _raw), batch, ends in zip(decoded, out, fate, strict=True):
        if b.base_offset >= stable or ends is None:
            break  # an open transaction (or one ending past this read): not read yet
        if b.is_transactional and not b.is_control and ends == ABORT:
            archived += batch[3]
        else:
            kept.append(batch)
    return kept, archived
