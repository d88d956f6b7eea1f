"""Replication settings, named after Kafka's broker configs (``replica.lag.time.max.ms`` …).

They come from the ``"replication"`` section of a broker's ``NodeConfig.settings``; the log's
broker-wide defaults come from its ``"log"`` section (LogConfig attribute names), and a topic's
configs from the metadata cache override those per partition.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class ReplicationConfig:
    #: a follower that has not caught up with the leader's log end for this long leaves the ISR
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    #: pause after a fetch error (Kafka's default is 1000; a loopback cluster recovers faster)
    replica_fetch_backoff_ms: int = 200
    replica_high_watermark_checkpoint_interval_ms: int = 5_000
    log_retention_check_interval_ms: int = 300_000
    log_flush_scheduler_interval_ms: int = 1_000
    #: the Fetch version followers use: 12 carries LastFetchedEpoch / DivergingEpoch by name
    replica_fetch_version: int = 12

    @classmethod
    def from_settings(cls, section: dict[str, Any] | None) -> ReplicationConfig:
        return from_section(cls, section, "replication settings")


def from_section(cls: type[T], section: dict[str, Any] | None, what: str) -> T:
    """A dataclass of a settings section's values; ValueError naming the keys it lacks."""
    known = {f.name for f in fields(cls)}  # type: ignore[arg-type]
    section = section or {}
    unknown = sorted(set(section) - known)
    if unknown:
        raise ValueError(f"unknown {what}: {', '.join(unknown)}")
    return cls(**section)
