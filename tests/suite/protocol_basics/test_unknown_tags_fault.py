"""PROTOCOL.R12 FAILs against a target that reads a request differently when it carries unknown
tagged fields: a proxy in front of the reference answers such a Metadata request as if it had
asked for no topic (the test asks for one topic nobody made: an answer the tests beside it cannot
change, where tansu 0.6 answers 'no topics' with every topic), in the body or in the header."""

from __future__ import annotations

from conformance.protocol import ApiKey, Codec
from conformance.protocol.compiler import UNKNOWN_TAGS
from conformance.protocol.framing import decode_request, encode_request
from tests.support.proxies import FaultyProxy, passthrough

CODEC = Codec.from_specs()
TEST = "protocol/headers/unknown-tagged-fields-ignored"


class TopicsDroppedWhenTagged:
    """Metadata requests with unknown tagged fields (header or body) lose their topic list."""

    def __init__(self) -> None:
        self.rewritten = 0

    def request(self, api: int, version: int, frame: bytes) -> bytes:
        if api != ApiKey.METADATA:
            return frame
        header, body = decode_request(CODEC, frame)
        if not (header.get(UNKNOWN_TAGS) or body.get(UNKNOWN_TAGS)) or not body.get("Topics"):
            return frame
        self.rewritten += 1
        body = {k: v for k, v in body.items() if k != UNKNOWN_TAGS}
        body["Topics"] = []
        return encode_request(
            CODEC, api, version, header["CorrelationId"], header.get("ClientId"), body
        )


def test_r12_fails_where_unknown_tags_change_the_answer(cli, reference) -> None:
    boot = reference.bootstrap[0]
    fault = TopicsDroppedWhenTagged()
    with FaultyProxy((boot.host, boot.port), passthrough, fault.request) as proxy:
        proc, run = cli("--bootstrap-server", proxy.address, "--select", TEST)
    assert run is not None, proc.stderr[-2000:]
    (r12,) = [r for r in run.records if r["requirement_id"] == "PROTOCOL.R12"]
    assert fault.rewritten == 1  # the body's tags (the check stops at the first difference)
    assert r12["verdict"] == "FAIL", r12
    assert "unknown body tags changed the answer" in r12["message"], r12["message"]
