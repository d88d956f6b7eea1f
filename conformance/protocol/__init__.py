"""Kafka wire protocol: message specs, the compiled codec, headers and record batches, and the
shared tables of API keys, error codes and the enums the specs carry as integers."""

from conformance.protocol._generated.api_keys import ApiKey
from conformance.protocol._generated.enums import (
    AUTHORIZED_OPERATIONS_UNSET,
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    ConfigOperation,
    ConfigResourceType,
)
from conformance.protocol._generated.error_codes import ErrorCode
from conformance.protocol.codec import Codec
from conformance.protocol.errors import DecodeError, EncodeError, SpecError, UnknownMessageError
from conformance.protocol.kafka_errors import KafkaError
from conformance.protocol.spec import MessageSpec, SpecSet

__all__ = [
    "AUTHORIZED_OPERATIONS_UNSET",
    "AclOperation",
    "AclPatternType",
    "AclPermissionType",
    "AclResourceType",
    "ApiKey",
    "Codec",
    "ConfigOperation",
    "ConfigResourceType",
    "DecodeError",
    "EncodeError",
    "ErrorCode",
    "KafkaError",
    "MessageSpec",
    "SpecError",
    "SpecSet",
    "UnknownMessageError",
]
