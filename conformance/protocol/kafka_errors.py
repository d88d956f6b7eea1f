"""Kafka error codes as one exception, shared by the reference, the client and the suite.

Whoever meets a failure Kafka has an error code for raises ``KafkaError(code, message)``;
whoever answers or reports it reads ``code`` and ``message`` (a handler guard turns it into
the response's ErrorCode and ErrorMessage, the client into a failed send or poll).
"""

from __future__ import annotations

from conformance.protocol._generated.error_codes import ErrorCode


def error_code(code: int) -> ErrorCode | int:
    """``code`` as an ErrorCode when Kafka defines it, else the bare int."""
    try:
        return ErrorCode(code)  # type: ignore[call-arg]  # the lookup by value, not __new__
    except ValueError:
        return int(code)


def error_name(code: int) -> str:
    """Kafka's name for ``code`` (``UNKNOWN_ERROR_CODE_n`` for a code Kafka does not define)."""
    known = error_code(code)
    return known.name if isinstance(known, ErrorCode) else f"UNKNOWN_ERROR_CODE_{code}"


def is_defined(code: int) -> bool:
    """Whether Kafka defines ``code`` (the one test of it; ``error_name`` is the one name)."""
    return isinstance(error_code(code), ErrorCode)


def is_retriable(code: int) -> bool:
    """Kafka's clients retry ``code`` (an undefined code is not retriable)."""
    known = error_code(code)
    return isinstance(known, ErrorCode) and known.retriable


class KafkaError(Exception):
    """A failure with a Kafka error code; ``message`` is the ErrorMessage to answer with, if any,
    and ``context`` says where it happened (for the one-line text only)."""

    def __init__(self, code: int, message: str | None = None, *, context: str = "") -> None:
        self.code = error_code(code)
        self.message = message
        self.context = context
        text = f"{self.name} ({int(code)})"
        if context:
            text = f"{context}: {text}"
        if message:
            text = f"{text}: {message}"
        super().__init__(text)

    @property
    def name(self) -> str:
        return error_name(self.code)

    @property
    def retriable(self) -> bool:
        return is_retriable(self.code)


def raise_for(code: int, message: str | None = None, *, context: str = "") -> None:
    """Raise :class:`KafkaError` for a non-zero code."""
    if code != ErrorCode.NONE:
        raise KafkaError(code, message, context=context)
