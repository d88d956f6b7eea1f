"""KIP-590 forwarding: admin mutations reach the controller inside an Envelope (58).

Which mutations, and the Api their handlers serve, is ``reference_impl/forwarded.py``.

The broker does not look into the request: it wraps the client's serialised request (header
included), the client's principal and IP address, and sends the Envelope through the
controller channel (which rediscovers the controller on NOT_CONTROLLER until the timeout).
The controller's inner response is the client's answer, errors included. An Envelope the
controller refuses with CLUSTER_AUTHORIZATION_FAILED is a broken inter-broker security set-up,
nothing the client did: the client gets UNKNOWN_SERVER_ERROR; a timeout gets REQUEST_TIMED_OUT.
"""

from __future__ import annotations

import logging

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.framing import decode_response
from reference_impl import principal
from reference_impl.error_responses import error_response
from reference_impl.net.listener import RequestContext
from reference_impl.roles import BrokerView

log = logging.getLogger(__name__)


class Forwarder:
    def __init__(self, broker: BrokerView) -> None:
        self.b = broker

    async def forward(self, ctx: RequestContext, body: dict) -> dict:
        metrics = self.b.metrics
        metrics.redirected.labels(ApiKey(ctx.api_key).api_name).inc()
        metrics.forwarding.inc()
        try:
            return await self._forward(ctx, body)
        finally:
            metrics.forwarding.dec()

    async def _forward(self, ctx: RequestContext, body: dict) -> dict:
        envelope = {
            "RequestData": ctx.raw,
            "RequestPrincipal": principal.serialize(ctx.session.principal),
            "ClientHostAddress": principal.address_bytes(ctx.client_address),
        }
        timeout = self.b.config.request_timeout_ms / 1000
        try:
            resp = await self.b.controller_channel.request(
                ApiKey.ENVELOPE, envelope, timeout=timeout
            )
        except TimeoutError:
            return self._error(ctx, body, ErrorCode.REQUEST_TIMED_OUT, "controller not reachable")
        code = resp.body["ErrorCode"]
        if code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
            self.b.metrics.forwarding_auth_failures.inc()
            log.error("the controller refused this broker's Envelope: check broker principals")
            return self._error(ctx, body, ErrorCode.UNKNOWN_SERVER_ERROR, None)
        if code != ErrorCode.NONE or resp.body["ResponseData"] is None:
            log.warning("Envelope answered with error %d", code)
            return self._error(ctx, body, ErrorCode.UNKNOWN_SERVER_ERROR, None)
        _header, inner = decode_response(
            self.b.codec, ctx.api_key, ctx.version, resp.body["ResponseData"]
        )
        return inner

    def _error(self, ctx: RequestContext, body: dict, code: ErrorCode, message: str | None) -> dict:
        answer = error_response(self.b.codec, ctx.api_key, ctx.version, body, int(code), message)
        assert answer is not None
        return answer
