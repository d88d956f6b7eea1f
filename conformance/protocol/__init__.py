"""Kafka wire protocol: message specs, the compiled codec, headers and record batches."""

from conformance.protocol.codec import Codec
from conformance.protocol.errors import DecodeError, EncodeError, SpecError, UnknownMessageError
from conformance.protocol.spec import MessageSpec, SpecSet

__all__ = [
    "Codec",
    "DecodeError",
    "EncodeError",
    "MessageSpec",
    "SpecError",
    "SpecSet",
    "UnknownMessageError",
]
