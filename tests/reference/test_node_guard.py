"""The handler guard: an error code raised anywhere below a handler is the code answered."""

from __future__ import annotations

import asyncio

import pytest

from conformance.protocol import ApiKey, Codec, ErrorCode, KafkaError
from reference_impl.log.validation import validate_internal_batch
from reference_impl.net.listener import RequestContext, Session
from reference_impl.node import guarded

CODEC = Codec.from_specs()
BODY = {
    "Topics": [
        {"Name": "a", "NumPartitions": 1, "ReplicationFactor": 1, "Assignments": [], "Configs": []}
    ],
    "TimeoutMs": 1000,
    "ValidateOnly": False,
}


def answer(raise_: BaseException) -> dict:
    async def handler(ctx: RequestContext, body: dict) -> dict:
        raise raise_

    ctx = RequestContext(None, ApiKey.CREATE_TOPICS, 5, {}, Session("User:ANONYMOUS"), "x:1")  # type: ignore[arg-type]
    return asyncio.run(guarded(CODEC, handler)(ctx, BODY))


@pytest.mark.parametrize(
    "code", [ErrorCode.INVALID_CONFIG, ErrorCode.NOT_CONTROLLER, ErrorCode.CORRUPT_MESSAGE]
)
def test_a_kafka_error_is_answered_with_its_code_and_message(code: ErrorCode) -> None:
    topics = answer(KafkaError(code, "why"))["Topics"]
    assert [(t["ErrorCode"], t["ErrorMessage"]) for t in topics] == [(code, "why")]


def test_a_log_layer_error_escaping_a_handler_keeps_its_code() -> None:
    """The log's validation raises the same KafkaError the handlers do (once a separate class
    the guard did not catch, so it became UNKNOWN_SERVER_ERROR)."""
    with pytest.raises(KafkaError) as raised:
        validate_internal_batch(b"")
    topics = answer(raised.value)["Topics"]
    assert [t["ErrorCode"] for t in topics] == [ErrorCode.INVALID_RECORD]


def test_any_other_exception_is_an_unknown_server_error() -> None:
    topics = answer(ValueError("bug"))["Topics"]
    assert [(t["ErrorCode"], t["ErrorMessage"]) for t in topics] == [
        (ErrorCode.UNKNOWN_SERVER_ERROR, "internal error")
    ]
