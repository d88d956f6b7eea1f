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

#: how much of a partition's log one acquisition reads at most
READ_BYTES = 1 << 20
#: the broker's share-partition state, in its data directory
STORE = "share-partitions.json"


def now_ms() -> int:
    return int(time.monotonic() * 1000)


def sessions(node: BrokerView) -> ShareSessions:
    found = getattr(node, "share_sessions", None)
    if found is None:
        settings = getattr(node.config, "settings", None) or {}
        forget = BrokerFaults.from_settings(settings.get("faults")).forget_share_state
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


def acknowledge(sp: SharePartition, member: str, batches: list[dict]) -> int:
    """Apply a partition's acknowledgement batches in order; the first error, else NONE."""
    error = 0
    for b in batches:
        got = sp.acknowledge(
            member, b["FirstOffset"], b["LastOffset"], list(b["AcknowledgeTypes"]), now_ms()
        )
        error = error or int(got)
    return error


def log_batches(
    node: BrokerView, name: str, index: int, offset: int
) -> list[tuple[int, int, bytes, list[int]]]:
    """The committed batches of a partition from ``offset``: (base, last offset, raw bytes, the
    offsets of its records; none for a control batch)."""
    data = node.replica_manager.read(name, index, offset, READ_BYTES)
    out = []
    for i, (s, e, _magic) in enumerate(complete_entries(data, allow_partial=True, noun="batch")):
        batch = decode_batch_at(data, s, e, index=i)
        offsets = (
            [] if batch.is_control else [batch.base_offset + r.offset_delta for r in batch.records]
        )
        out.append((batch.base_offset, batch.last_offset, data[s:e], offsets))
    return out
