"""The reference's tagged-field extensions of released messages (flexible versions only).

KIP-536 start time: an int64 (ms since the epoch) under tag ``START_TIME_TAG`` on the broker
entries of MetadataResponse (v9+), DescribeClusterResponse (v0+) and UpdateMetadataRequest
(v6+, ``LiveBrokers``), and at the top level of BrokerRegistrationRequest. Absent means 0, the
proposal's value for clusters without the feature. ``specs/requirements/kip-536.json`` documents it.

Internal to the reference (UpdateMetadataRequest, top level; other brokers never see them):
``METADATA_OFFSET_TAG`` (int64) is the controller's metadata offset the request reflects, which
a broker reports back as CurrentMetadataOffset in its heartbeats (catching up, in the draft's
terms); ``CONFIG_IMAGE_TAG`` (JSON) carries the dynamic configs and client quotas, which Kafka's
ZooKeeper brokers read from ZooKeeper and KRaft brokers from the metadata log.

Tag numbers are far above those Kafka allocates, so that no future release collides with them.
"""

from __future__ import annotations

import json
import struct
from typing import Any

START_TIME_TAG = 536
METADATA_OFFSET_TAG = 10_000
CONFIG_IMAGE_TAG = 10_001

_INT64 = struct.Struct(">q")
TAGS = "_unknown_tagged_fields"


def put_int64(value: dict, tag: int, number: int) -> dict:
    value.setdefault(TAGS, {})[tag] = _INT64.pack(number)
    return value


def get_int64(value: dict, tag: int, default: int = 0) -> int:
    raw = value.get(TAGS, {}).get(tag)
    if raw is None or len(raw) != 8:
        return default
    return _INT64.unpack(raw)[0]


def put_json(value: dict, tag: int, obj: Any) -> dict:
    value.setdefault(TAGS, {})[tag] = json.dumps(obj, separators=(",", ":")).encode()
    return value


def get_json(value: dict, tag: int) -> Any:
    raw = value.get(TAGS, {}).get(tag)
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None


def with_start_time(entry: dict, start_time_ms: int, flexible: bool) -> dict:
    """A broker entry carrying the KIP-536 start time where the version can (flexible)."""
    return put_int64(entry, START_TIME_TAG, start_time_ms) if flexible else entry


def start_time(entry: dict) -> int:
    return get_int64(entry, START_TIME_TAG, 0)
