"""Errors the client raises: Kafka error codes, and the client's own failures.

A response's error code becomes the kernel's :class:`KafkaError` (its ``retriable`` is Kafka's
flag for the code, from the one ErrorCode table); the client's own failures (configuration,
timeouts, serialisation) are :class:`ClientError`. A caller that treats both alike catches
``FAILURES``.
"""

from __future__ import annotations

from conformance.protocol import ErrorCode, KafkaError
from conformance.protocol.kafka_errors import error_name, is_retriable, raise_for

__all__ = [
    "FAILURES",
    "STALE_COORDINATOR",
    "STALE_METADATA",
    "ClientError",
    "DeliveryTimeoutError",
    "KafkaError",
    "MetadataTimeoutError",
    "ProducerClosedError",
    "RecordTooLargeError",
    "SerializationError",
    "error_name",
    "is_retriable",
    "raise_for",
]

#: codes after which the client's view of partition leadership is stale
STALE_METADATA = frozenset(
    {
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.REPLICA_NOT_AVAILABLE,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.UNKNOWN_TOPIC_ID,
        ErrorCode.INCONSISTENT_TOPIC_ID,
    }
)
#: codes after which the group coordinator must be looked up again
STALE_COORDINATOR = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})


class ClientError(Exception):
    """A failure of the client (its configuration, a timeout, serialisation) or of the peer."""


#: every failure the client raises on purpose: its own, and error codes of responses
FAILURES = (ClientError, KafkaError)


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
