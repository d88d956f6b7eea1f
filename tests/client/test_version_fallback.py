"""The client falls back past an API version whose answers do not decode (issue 42).

A proxy in front of the reference appends one byte to the answers of the newest Metadata version
(v13, which the client speaks since issue 37 lifted the 3.9 cap): the client marks it unusable on
that node, bootstraps with the next lower one and keeps using it. When every Metadata
version's answers are malformed, the DecodeError reaches the caller once no version is left.
"""

from __future__ import annotations

import asyncio

import pytest

from conformance.client.metadata import ClusterMetadata
from conformance.protocol import ApiKey, Codec, DecodeError
from tests.support.proxies import FaultyProxy

#: the newest Metadata version: what the client asks the reference first
NEWEST = Codec.from_specs().message(ApiKey.METADATA, "request").valid_versions.hi


def _start(address: str) -> ClusterMetadata:
    async def go() -> ClusterMetadata:
        meta = ClusterMetadata(address, request_timeout=10.0)
        try:
            await meta.start()
            await meta.refresh(())  # a second look-up goes straight to the next lower one
        finally:
            await meta.close()
        return meta

    return asyncio.run(go())


def test_a_version_that_does_not_decode_is_passed_over(reference) -> None:
    ep = reference.bootstrap[0]

    def newest_malformed(api: int, version: int, frame: bytes) -> bytes:
        return frame + b"\0" if (api, version) == (ApiKey.METADATA, NEWEST) else frame

    with FaultyProxy((ep.host, ep.port), newest_malformed) as proxy:
        meta = _start(proxy.address)
    assert proxy.rewritten == 1  # learnt once, not per request
    assert meta.cluster_id and meta.brokers
    assert meta._unusable == {(-1, ApiKey.METADATA): NEWEST - 1}


def test_no_version_that_decodes_is_the_decode_error(reference) -> None:
    ep = reference.bootstrap[0]

    def all_malformed(api: int, version: int, frame: bytes) -> bytes:
        return frame + b"\0" if api == ApiKey.METADATA else frame

    with FaultyProxy((ep.host, ep.port), all_malformed) as proxy, pytest.raises(DecodeError):
        _start(proxy.address)
    assert proxy.rewritten > 1
