"""Faults of what a target offers: an ApiVersions answer that advertises less than it serves.

Put in front of the reference with :class:`tests.support.proxies.FaultyProxy`, it makes a target
that offers too little (a small broker that knows Metadata v8 only and no DescribeCluster, say):
the suite must then credit nothing it had no way to check.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, Codec
from conformance.protocol.framing import decode_response, encode_response

CODEC = Codec.from_specs()


class Advertise:
    """Rewrites ApiVersions answers: ``limits`` maps an api key to the (min, max) to advertise,
    or None to leave it out; other keys are advertised as they are."""

    def __init__(self, limits: dict[int, tuple[int, int] | None]) -> None:
        self.limits = limits

    def response(self, api: int, version: int, frame: bytes) -> bytes:
        if api != ApiKey.API_VERSIONS:
            return frame
        try:
            header, body = decode_response(CODEC, api, version, frame)
        except Exception:
            return frame  # an error answer in v0 to a newer version: left alone
        keys = []
        for k in body["ApiKeys"]:
            if k["ApiKey"] not in self.limits:
                keys.append(k)
            elif (limit := self.limits[k["ApiKey"]]) is not None:
                keys.append({**k, "MinVersion": limit[0], "MaxVersion": limit[1]})
        body["ApiKeys"] = keys
        return encode_response(CODEC, api, version, header["CorrelationId"], body)
