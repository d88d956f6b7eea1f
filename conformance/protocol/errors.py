"""The exceptions of the protocol layer: one per kind of failure, each printable as one line."""

from __future__ import annotations


class SpecError(ValueError):
    """A message-spec file is malformed: names the file, the JSON path and the rule broken."""

    def __init__(self, file: str, json_path: str, rule: str) -> None:
        self.file, self.json_path, self.rule = file, json_path, rule
        super().__init__(f"{file}: {json_path}: {rule}")


class UnknownMessageError(KeyError):
    """No spec for this api key / kind, or the version is outside the message's validVersions."""

    def __str__(self) -> str:
        return str(self.args[0])


class DecodeError(ValueError):
    """Bytes that do not decode as the named message.

    ``path`` is the dotted field path (``Topics[2].Partitions[0].ErrorCode``) and ``offset`` the
    byte offset into the decoded buffer where the problem was found.
    """

    def __init__(self, message: str, path: str, offset: int, reason: str) -> None:
        self.message, self.path, self.offset, self.reason = message, path, offset, reason
        where = f"{message}.{path}" if path else message
        super().__init__(f"cannot decode {where} at byte {offset}: {reason}")


class EncodeError(ValueError):
    """A value that cannot be encoded as the named message (wrong type, null where not nullable)."""

    def __init__(self, message: str, path: str, reason: str) -> None:
        self.message, self.path, self.reason = message, path, reason
        where = f"{message}.{path}" if path else message
        super().__init__(f"cannot encode {where}: {reason}")
