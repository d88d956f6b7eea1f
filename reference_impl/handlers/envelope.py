"""Envelope (58), on the controller listener: a forwarded admin mutation (KIP-590).

The envelope itself needs ClusterAction on CLUSTER (broker principals only), else
CLUSTER_AUTHORIZATION_FAILED and the inner request is not looked at. A node that is not the
active controller answers NOT_CONTROLLER. Otherwise the inner request (header and body, as the
client sent it) is served as if the embedded principal had sent it from the embedded address,
and its response (header and body) travels back in ResponseData.
"""

from __future__ import annotations

import logging
import struct

from conformance.protocol import ApiKey, Codec, DecodeError, ErrorCode, UnknownMessageError
from conformance.protocol.framing import (
    decode_header_prefix,
    encode_response,
    request_header_version,
)
from reference_impl import principal
from reference_impl.forwarded import FORWARDED
from reference_impl.net.listener import CLOSE, Api, RequestContext, Session
from reference_impl.roles import ControllerView
from reference_impl.security_hooks import CLUSTER, CLUSTER_ACTION

log = logging.getLogger(__name__)

ROLES = ("controller",)


def _decode_inner(codec: Codec, raw: bytes) -> tuple[dict, dict]:
    """The inner request's header and body; bytes after the body are ignored, as the forwarding
    broker's listener (and Kafka's parser) ignored them."""
    if len(raw) < 4:
        raise ValueError("inner request shorter than its api key and version")
    api_key, version = struct.unpack_from(">hh", raw)
    codec.message(api_key, "request").check_version(version)
    unit = codec.compiled_header("request", request_header_version(codec, api_key, version))
    header, off = decode_header_prefix(unit, raw)
    body, _ = codec.decode_prefix(api_key, version, "request", raw[off:])
    return header, body


def api(node: ControllerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        metrics = node.metrics
        if not node.authorize(ctx.session, CLUSTER_ACTION, CLUSTER):
            metrics.envelopes.labels("cluster_authorization_failed").inc()
            log.warning("Envelope from %s refused: not a broker principal", ctx.session.principal)
            return {"ErrorCode": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        if not node.active:
            metrics.envelopes.labels("not_controller").inc()
            return {"ErrorCode": ErrorCode.NOT_CONTROLLER}
        try:
            embedded = principal.deserialize(body["RequestPrincipal"] or b"")
        except principal.PrincipalError:
            metrics.envelopes.labels("principal_deserialization_failure").inc()
            return {"ErrorCode": ErrorCode.PRINCIPAL_DESERIALIZATION_FAILURE}
        raw = body["RequestData"]
        try:
            header, inner = _decode_inner(node.codec, raw)
        except (DecodeError, UnknownMessageError, ValueError) as e:
            metrics.envelopes.labels("invalid_request").inc()
            log.info("Envelope with an undecodable request: %s", e)
            return {"ErrorCode": ErrorCode.INVALID_REQUEST}
        api_key, version = header["RequestApiKey"], header["RequestApiVersion"]
        served = ctx.listener.served.get(api_key)
        lo, hi = ctx.listener.ranges.get(api_key, (1, 0))
        if api_key not in FORWARDED or served is None or not lo <= version <= hi:
            metrics.envelopes.labels("invalid_request").inc()
            return {"ErrorCode": ErrorCode.INVALID_REQUEST}
        address = principal.address_text(body["ClientHostAddress"])
        inner_ctx = RequestContext(
            ctx.listener,
            api_key,
            version,
            header,
            Session(principal=embedded),
            f"{address}:0",
            raw,
        )
        response = await served.handler(inner_ctx, inner)
        if response is None or response is CLOSE:
            metrics.envelopes.labels("invalid_request").inc()
            return {"ErrorCode": ErrorCode.INVALID_REQUEST}
        metrics.envelopes.labels("ok").inc()
        data = encode_response(node.codec, api_key, version, header["CorrelationId"], response)
        return {"ErrorCode": 0, "ResponseData": data}

    return Api(ApiKey.ENVELOPE, handle)
