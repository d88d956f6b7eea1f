"""The Kafka error codes the group coordinator answers with (values are Kafka's)."""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    UNKNOWN_SERVER_ERROR = -1
    NONE = 0
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    MESSAGE_TOO_LARGE = 10
    OFFSET_METADATA_TOO_LARGE = 12
    COORDINATOR_LOAD_IN_PROGRESS = 14
    COORDINATOR_NOT_AVAILABLE = 15
    NOT_COORDINATOR = 16
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    ILLEGAL_GENERATION = 22
    INCONSISTENT_GROUP_PROTOCOL = 23
    INVALID_GROUP_ID = 24
    UNKNOWN_MEMBER_ID = 25
    INVALID_SESSION_TIMEOUT = 26
    REBALANCE_IN_PROGRESS = 27
    INVALID_COMMIT_OFFSET_SIZE = 28
    INVALID_REQUEST = 42
    KAFKA_STORAGE_ERROR = 56
    NON_EMPTY_GROUP = 68
    GROUP_ID_NOT_FOUND = 69
    MEMBER_ID_REQUIRED = 79
    GROUP_MAX_SIZE_REACHED = 81
    FENCED_INSTANCE_ID = 82


#: How an append failure on ``__consumer_offsets`` is reported to a SyncGroup (Kafka's mapping).
_STORE_GROUP = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.INVALID_FETCH_SIZE: Errors.UNKNOWN_SERVER_ERROR,
}


def store_group_error(code: int) -> int:
    """The SyncGroup error for an append error code."""
    return int(_STORE_GROUP.get(code, code))


def store_offsets_error(code: int) -> int:
    """The OffsetCommit error for an append error code (too large: INVALID_COMMIT_OFFSET_SIZE)."""
    mapped = _STORE_GROUP.get(code, code)
    if mapped == Errors.UNKNOWN_SERVER_ERROR and code != Errors.UNKNOWN_SERVER_ERROR:
        return int(Errors.INVALID_COMMIT_OFFSET_SIZE)
    return int(mapped)
