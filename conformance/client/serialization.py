"""Serialisers and deserialisers of keys and values.

A serialiser is a callable ``(topic, data) -> bytes | None``; a deserialiser
``(topic, data: bytes | None) -> Any``. Either may also implement ``on_update`` to be told the
cluster id (KIP-78). The defaults pass bytes through (and encode ``str`` as UTF-8), so a record
the interceptors see on the consumer side holds exactly the bytes that were produced.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from conformance.client.errors import SerializationError

Serializer = Callable[[str, Any], bytes | None]
Deserializer = Callable[[str, bytes | None], Any]


def bytes_serializer(topic: str, data: Any) -> bytes | None:
    """None stays None, bytes-like values pass, ``str`` is UTF-8; anything else is refused."""
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, bytearray | memoryview):
        return bytes(data)
    if isinstance(data, str):
        return data.encode("utf-8")
    raise SerializationError(
        f"cannot serialise a {type(data).__name__} for {topic!r} without a serializer"
    )


def bytes_deserializer(topic: str, data: bytes | None) -> bytes | None:
    return data


def call_serializer(serializer: Serializer, topic: str, data: Any, what: str) -> bytes | None:
    """Run a serialiser; whatever it raises, or a non-bytes result, is a SerializationError."""
    try:
        out = serializer(topic, data)
    except SerializationError:
        raise
    except Exception as e:
        raise SerializationError(f"serialising the {what} for {topic!r} failed: {e!r}") from e
    if out is not None and not isinstance(out, bytes):
        raise SerializationError(
            f"the {what} serializer returned {type(out).__name__} for {topic!r}, not bytes"
        )
    return out
