"""How the group coordinator reports a failed append to ``__consumer_offsets`` (Kafka's mapping)."""

from __future__ import annotations

from conformance.protocol import ErrorCode

#: How an append failure on ``__consumer_offsets`` is reported to a SyncGroup (Kafka's mapping).
_STORE_GROUP: dict[int, ErrorCode] = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.UNKNOWN_SERVER_ERROR,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.UNKNOWN_SERVER_ERROR,
}


def store_group_error(code: int) -> int:
    """The SyncGroup error for an append error code."""
    return int(_STORE_GROUP.get(code, code))


def store_offsets_error(code: int) -> int:
    """The OffsetCommit error for an append error code (too large: INVALID_COMMIT_OFFSET_SIZE)."""
    mapped = _STORE_GROUP.get(code, code)
    if mapped == ErrorCode.UNKNOWN_SERVER_ERROR and code != ErrorCode.UNKNOWN_SERVER_ERROR:
        return int(ErrorCode.INVALID_COMMIT_OFFSET_SIZE)
    return int(mapped)
