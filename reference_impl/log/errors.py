"""Data-plane failures, each carrying the Kafka error code a response reports for it.

The log and the replica layer raise these; handlers turn ``.code`` into the response's
ErrorCode (and ``.message`` into ErrorMessage where the version has one).
"""

from __future__ import annotations

from enum import IntEnum


class Errors(IntEnum):
    """The Kafka error codes the data plane answers with (values are Kafka's)."""

    NONE = 0
    OFFSET_OUT_OF_RANGE = 1
    CORRUPT_MESSAGE = 2
    UNKNOWN_TOPIC_OR_PARTITION = 3
    INVALID_FETCH_SIZE = 4
    LEADER_NOT_AVAILABLE = 5
    NOT_LEADER_OR_FOLLOWER = 6
    REQUEST_TIMED_OUT = 7
    REPLICA_NOT_AVAILABLE = 9
    MESSAGE_TOO_LARGE = 10
    COORDINATOR_NOT_AVAILABLE = 15
    INVALID_TOPIC_EXCEPTION = 17
    RECORD_LIST_TOO_LARGE = 18
    NOT_ENOUGH_REPLICAS = 19
    NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
    INVALID_REQUIRED_ACKS = 21
    INVALID_TIMESTAMP = 32
    UNSUPPORTED_VERSION = 35
    TOPIC_ALREADY_EXISTS = 36
    INVALID_REQUEST = 42
    UNSUPPORTED_FOR_MESSAGE_FORMAT = 43
    OUT_OF_ORDER_SEQUENCE_NUMBER = 45
    DUPLICATE_SEQUENCE_NUMBER = 46
    INVALID_PRODUCER_EPOCH = 47
    INVALID_TXN_STATE = 48
    INVALID_PRODUCER_ID_MAPPING = 49
    KAFKA_STORAGE_ERROR = 56
    UNKNOWN_PRODUCER_ID = 59
    FETCH_SESSION_ID_NOT_FOUND = 70
    INVALID_FETCH_SESSION_EPOCH = 71
    FENCED_LEADER_EPOCH = 74
    UNKNOWN_LEADER_EPOCH = 75
    UNSUPPORTED_COMPRESSION_TYPE = 76
    OFFSET_NOT_AVAILABLE = 78
    INVALID_RECORD = 87
    UNKNOWN_TOPIC_ID = 100
    INCONSISTENT_TOPIC_ID = 103
    INELIGIBLE_REPLICA = 107
    NEW_LEADER_ELECTED = 108


class KafkaError(Exception):
    """A failure with the error code Kafka answers it with."""

    code: Errors = Errors.UNKNOWN_TOPIC_OR_PARTITION

    def __init__(self, message: str = "", *, code: Errors | None = None) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code


class CorruptMessage(KafkaError):
    """CRC mismatch or batch framing that cannot be trusted."""

    code = Errors.CORRUPT_MESSAGE


class InvalidRecord(KafkaError):
    """A batch whose CRC holds but whose contents break the format's rules."""

    code = Errors.INVALID_RECORD


class MessageTooLarge(KafkaError):
    code = Errors.MESSAGE_TOO_LARGE


class OffsetOutOfRange(KafkaError):
    code = Errors.OFFSET_OUT_OF_RANGE


class NotLeaderOrFollower(KafkaError):
    code = Errors.NOT_LEADER_OR_FOLLOWER


class OutOfOrderSequence(KafkaError):
    code = Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


class InvalidProducerEpoch(KafkaError):
    code = Errors.INVALID_PRODUCER_EPOCH


class StorageError(KafkaError):
    code = Errors.KAFKA_STORAGE_ERROR
