"""The broker states of the registration draft, as the controller records them."""

from __future__ import annotations

from enum import StrEnum


class BrokerState(StrEnum):
    #: not running, or doing its single-node start-up (log recovery)
    OFFLINE = "OFFLINE"
    #: registered but not caught up with metadata, or missed heartbeats: not shown to clients
    FENCED = "FENCED"
    #: caught up and heartbeating: serves clients, may lead partitions
    ONLINE = "ONLINE"
    #: asked to shut down (SIGINT/SIGTERM): leaderships are being moved away
    STOPPING = "STOPPING"

    @property
    def visible(self) -> bool:
        """Shown to clients in Metadata and DescribeCluster (fenced brokers are omitted)."""
        return self in (BrokerState.ONLINE, BrokerState.STOPPING)
