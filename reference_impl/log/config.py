"""Per-log settings, named after Kafka's topic configs (``segment.bytes`` → ``segment_bytes``).

The flush policy: Kafka's ``flush.messages`` / ``flush.ms`` (fsync after that many messages or
that much time; by default never, as in Kafka, whose durability comes from replication: an
acks=all produce is answered once its batch is in the log of every in-sync replica, which a
killed process does not lose), plus ``flush_on_acks_all`` (default off, as Kafka has no such
setting): when on, an acks=all produce is answered only once its batch is also fsynced on the
leader and on every in-sync follower (durable through a power loss too; set it with the node
settings ``{"log": {"flush_on_acks_all": true}}``).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields, replace

_DAY_MS = 24 * 60 * 60 * 1000

#: topic config name -> LogConfig attribute
TOPIC_CONFIGS = {
    "segment.bytes": "segment_bytes",
    "segment.ms": "segment_ms",
    "retention.bytes": "retention_bytes",
    "retention.ms": "retention_ms",
    "segment.index.bytes": None,
    "index.interval.bytes": "index_interval_bytes",
    "max.message.bytes": "max_message_bytes",
    "flush.messages": "flush_messages",
    "flush.ms": "flush_ms",
    "min.insync.replicas": "min_insync_replicas",
}


@dataclass(frozen=True)
class LogConfig:
    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * _DAY_MS
    retention_bytes: int = -1
    retention_ms: int = 7 * _DAY_MS
    index_interval_bytes: int = 4096
    max_message_bytes: int = 1024 * 1024 + 12
    flush_messages: int = 2**63 - 1
    flush_ms: int = 2**63 - 1
    flush_on_acks_all: bool = False
    min_insync_replicas: int = 1
    #: ``cleanup.policy`` includes ``delete``: retention removes old segments. A compact-only
    #: topic (``__consumer_offsets``) keeps everything (there is no log cleaner).
    delete_retention: bool = True
    #: ``message.timestamp.type`` is LogAppendTime: the leader stamps each batch it appends
    #: with its own clock (timestamp type bit set, max timestamp = the append time)
    log_append_time: bool = False

    def with_topic_configs(self, configs: dict[str, str | None]) -> LogConfig:
        """This config overridden by a topic's configs (unknown names are ignored)."""
        return _overridden(self, tuple(sorted(configs.items())))

    @classmethod
    def attribute_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]


@functools.lru_cache(maxsize=1024)
def _overridden(base: LogConfig, configs: tuple[tuple[str, str | None], ...]) -> LogConfig:
    """Memoised (both are immutable): every UpdateMetadata gives each hosted partition its
    topic's config again, and most topics have the same few overrides (about 5 % of the main
    cluster's broker CPU in a whole run went to building equal configs anew)."""
    changes: dict[str, int | bool] = {}
    named = dict(configs)
    policy = named.get("cleanup.policy")
    if policy is not None:
        changes["delete_retention"] = "delete" in [x.strip() for x in policy.split(",")]
    timestamp_type = named.get("message.timestamp.type")
    if timestamp_type is not None:
        changes["log_append_time"] = timestamp_type == "LogAppendTime"
    for name, value in configs:
        attr = TOPIC_CONFIGS.get(name)
        if attr is not None and value is not None:
            changes[attr] = int(value)
    return replace(base, **changes)
