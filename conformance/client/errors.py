"""Errors the client raises: Kafka error codes as exceptions, and the client's own failures.

A response's error code becomes a :class:`KafkaError` carrying the code and Kafka's name for it
(from the suite's table of Kafka 3.9 codes); ``retriable`` says whether Kafka's clients retry it
(the codes whose Java exception is a ``RetriableException``).
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

ERROR_CODES_FILE = Path(__file__).resolve().parents[1] / "suite" / "data" / "error_codes.json"

NONE = 0
OFFSET_OUT_OF_RANGE = 1
CORRUPT_MESSAGE = 2
UNKNOWN_TOPIC_OR_PARTITION = 3
LEADER_NOT_AVAILABLE = 5
NOT_LEADER_OR_FOLLOWER = 6
REQUEST_TIMED_OUT = 7
REPLICA_NOT_AVAILABLE = 9
NETWORK_EXCEPTION = 13
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
NOT_ENOUGH_REPLICAS = 19
NOT_ENOUGH_REPLICAS_AFTER_APPEND = 20
TOPIC_ALREADY_EXISTS = 36
OUT_OF_ORDER_SEQUENCE_NUMBER = 45
DUPLICATE_SEQUENCE_NUMBER = 46
KAFKA_STORAGE_ERROR = 56
FENCED_LEADER_EPOCH = 74
UNKNOWN_LEADER_EPOCH = 75
OFFSET_NOT_AVAILABLE = 78
UNKNOWN_TOPIC_ID = 100
INCONSISTENT_TOPIC_ID = 103

#: codes Kafka's clients treat as transient (retry after refreshing metadata / coordinator)
RETRIABLE = frozenset(
    {
        CORRUPT_MESSAGE,
        UNKNOWN_TOPIC_OR_PARTITION,
        LEADER_NOT_AVAILABLE,
        NOT_LEADER_OR_FOLLOWER,
        REQUEST_TIMED_OUT,
        REPLICA_NOT_AVAILABLE,
        NETWORK_EXCEPTION,
        COORDINATOR_LOAD_IN_PROGRESS,
        COORDINATOR_NOT_AVAILABLE,
        NOT_COORDINATOR,
        NOT_ENOUGH_REPLICAS,
        NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KAFKA_STORAGE_ERROR,
        FENCED_LEADER_EPOCH,
        UNKNOWN_LEADER_EPOCH,
        OFFSET_NOT_AVAILABLE,
        UNKNOWN_TOPIC_ID,
        INCONSISTENT_TOPIC_ID,
    }
)
#: codes after which the client's view of partition leadership is stale
STALE_METADATA = frozenset(
    {
        UNKNOWN_TOPIC_OR_PARTITION,
        LEADER_NOT_AVAILABLE,
        NOT_LEADER_OR_FOLLOWER,
        REPLICA_NOT_AVAILABLE,
        KAFKA_STORAGE_ERROR,
        FENCED_LEADER_EPOCH,
        UNKNOWN_LEADER_EPOCH,
        UNKNOWN_TOPIC_ID,
        INCONSISTENT_TOPIC_ID,
    }
)
#: codes after which the group coordinator must be looked up again
STALE_COORDINATOR = frozenset({COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR})


@cache
def error_names() -> dict[int, str]:
    data = json.loads(ERROR_CODES_FILE.read_text())
    return {int(code): name for code, name in data["codes"].items()}


def error_name(code: int) -> str:
    return error_names().get(code, f"UNKNOWN_ERROR_CODE_{code}")


class ClientError(Exception):
    """A failure of the client (its configuration, a timeout, serialisation) or of the peer."""


class KafkaError(ClientError):
    """A non-zero error code in a response."""

    def __init__(self, code: int, message: str | None = None, *, context: str = "") -> None:
        self.code = code
        self.name = error_name(code)
        text = f"{self.name} ({code})"
        if context:
            text = f"{context}: {text}"
        if message:
            text = f"{text}: {message}"
        super().__init__(text)

    @property
    def retriable(self) -> bool:
        return self.code in RETRIABLE


class SerializationError(ClientError):
    """A key or value could not be serialised (raised by send() before anything is sent)."""


class RecordTooLargeError(ClientError):
    """A serialised record is larger than the producer's ``max_request_size``."""


class DeliveryTimeoutError(ClientError):
    """A record was not acknowledged within the producer's ``delivery_timeout``."""


class MetadataTimeoutError(ClientError):
    """Metadata for a topic (its partitions and leaders) did not arrive within ``max_block``."""


class ProducerClosedError(ClientError):
    """send() on a closed producer, or a record still queued when the producer was closed."""


def raise_for(code: int, message: str | None = None, *, context: str = "") -> None:
    """Raise :class:`KafkaError` for a non-zero code."""
    if code != NONE:
        raise KafkaError(code, message, context=context)
