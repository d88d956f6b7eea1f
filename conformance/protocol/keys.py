"""Strict encode: a body key that no field of its struct has is an error, not silently dropped.

The compiled encoders read the fields a version has and ignore every other key, which is what
lets one body serve several versions. It also hides a misspelt key: a ``ValidateOnly`` where
the spec says ``validateOnly`` was dropped, and generated CreateTopics requests created topics.
A key is unknown when the struct has no field of that name in any version (a field of another
version is still dropped quietly, as bodies written for a range of versions need).
"""

from __future__ import annotations

from typing import Any

from conformance.protocol.compiler import UNKNOWN_TAGS
from conformance.protocol.errors import EncodeError
from conformance.protocol.spec import FieldSpec, MessageSpec, StructSpec


class UnknownKeyError(EncodeError):
    """A body names a key its message's spec does not have (strict encode)."""

    def __init__(
        self, message: str, version: int, path: str, key: str, struct: str, known: list[str]
    ) -> None:
        where = f" in {path}" if path else ""
        reason = (
            f"unknown key {key!r}{where}: {struct} has no such field in any version "
            f"(its fields: {', '.join(known) or 'none'})"
        )
        super().__init__(f"{message} v{version}", path, reason)
        self.key, self.version = key, version


def _fields(struct: StructSpec, cache: dict[int, dict[str, FieldSpec]]) -> dict[str, FieldSpec]:
    found = cache.get(id(struct))
    if found is None:
        found = cache[id(struct)] = {f.name: f for f in struct.fields}
    return found


def check_keys(
    msg: MessageSpec, version: int, body: Any, cache: dict[int, dict[str, FieldSpec]]
) -> None:
    """Raise :class:`UnknownKeyError` for the first key of ``body`` (nested structs included)
    that names no field of its struct; values of the wrong type are the encoder's to report."""
    todo: list[tuple[StructSpec, Any, str]] = [(msg.struct, body, "")]
    while todo:  # bounded: each body node is visited once
        struct, value, path = todo.pop()
        if not isinstance(value, dict):
            continue
        fields = _fields(struct, cache)
        for key, item in value.items():
            field = fields.get(key)
            if field is None:
                if key == UNKNOWN_TAGS:
                    continue
                raise UnknownKeyError(
                    msg.name, version, path, str(key), struct.name, sorted(fields)
                )
            if field.struct is None or item is None:
                continue
            where = f"{path}.{key}" if path else key
            if field.is_array:
                if isinstance(item, list):
                    todo.extend((field.struct, e, f"{where}[{i}]") for i, e in enumerate(item))
            else:
                todo.append((field.struct, item, where))
