"""The codec: message bodies to and from bytes, for any folder of message specs."""

from __future__ import annotations

from pathlib import Path

from conformance.protocol.compiler import Compiled, compile_message
from conformance.protocol.errors import UnknownMessageError
from conformance.protocol.keys import check_keys
from conformance.protocol.spec import FieldSpec, MessageSpec, SpecSet

KINDS = ("request", "response")


class Codec:
    """Encodes and decodes message bodies; each (message, version) is compiled on first use.

    ``strict_keys``: encode refuses a body key its struct has no field for
    (:class:`conformance.protocol.keys.UnknownKeyError`) instead of dropping it; the suite's
    own requests go through :meth:`strict`, other users keep the lenient default."""

    def __init__(self, specs: SpecSet, *, strict_keys: bool = False) -> None:
        self.specs = specs
        self.strict_keys = strict_keys
        self._compiled: dict[tuple[int, str, int], Compiled] = {}
        self._fields: dict[int, dict[str, FieldSpec]] = {}

    @classmethod
    def from_specs(cls, spec_dir: Path | str | None = None, *, strict: bool = True) -> Codec:
        """The project's own specs by default; any folder of Kafka message specs otherwise."""
        return cls(SpecSet.load(spec_dir, strict=strict))

    def strict(self) -> Codec:
        """This codec with strict encode (specs and compiled units shared, so nothing is
        compiled twice)."""
        if self.strict_keys:
            return self
        twin = Codec(self.specs, strict_keys=True)
        twin._compiled, twin._fields = self._compiled, self._fields
        return twin

    def message(self, api_key: int, kind: str) -> MessageSpec:
        if kind not in KINDS:
            raise UnknownMessageError(f"kind must be request or response, not {kind!r}")
        return self.specs.message(api_key, kind)

    def compiled(self, api_key: int, version: int, kind: str) -> Compiled:
        key = (api_key, kind, version)
        unit = self._compiled.get(key)
        if unit is None:
            unit = self._compiled[key] = compile_message(self.message(api_key, kind), version)
        return unit

    def decode(self, api_key: int, version: int, kind: str, raw: bytes) -> dict:
        """Decode a whole body; raises DecodeError (with field path and offset) when malformed."""
        unit = self._compiled.get((api_key, kind, version)) or self.compiled(api_key, version, kind)
        return unit.decode(raw if type(raw) is bytes else bytes(raw))

    def decode_prefix(self, api_key: int, version: int, kind: str, raw: bytes) -> tuple[dict, int]:
        """Decode a body at the start of ``raw``; returns it and how many bytes it used.

        For peers that, like Kafka's request parser, ignore bytes after a well-formed body.
        """
        unit = self._compiled.get((api_key, kind, version)) or self.compiled(api_key, version, kind)
        return unit.decode_prefix(raw if type(raw) is bytes else bytes(raw))

    def encode(self, api_key: int, version: int, kind: str, body: dict) -> bytes:
        """Encode a body; fields left out take their defaults. Raises EncodeError (its
        UnknownKeyError for a key the spec does not have, when ``strict_keys``)."""
        unit = self._compiled.get((api_key, kind, version)) or self.compiled(api_key, version, kind)
        if self.strict_keys:
            check_keys(unit.message, version, body, self._fields)
        return unit.encode(body)

    def header(self, kind: str) -> MessageSpec:
        """RequestHeader or ResponseHeader."""
        name = {"request": "RequestHeader", "response": "ResponseHeader"}[kind]
        try:
            return self.specs.by_name[name]
        except KeyError:
            raise UnknownMessageError(f"no {name} spec in {self.specs.source}") from None

    def compiled_header(self, kind: str, version: int) -> Compiled:
        key = (-1 if kind == "request" else -2, kind, version)
        unit = self._compiled.get(key)
        if unit is None:
            unit = self._compiled[key] = compile_message(self.header(kind), version)
        return unit
