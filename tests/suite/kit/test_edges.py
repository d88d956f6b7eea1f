"""The edge pass: the documented special values and shapes of each (API, version) are derived
from the specs and always sent, so verdicts on them do not depend on the seed."""

from __future__ import annotations

import struct

import pytest

from conformance.protocol import ApiKey, Codec
from conformance.suite.kit.edges import edge_requests
from tests.support.proxies import FaultyProxy, passthrough
from tests.support.runs import verdicts

CODEC = Codec.from_specs()


def _whats(api: int, version: int) -> list[str]:
    return [what for what, _ in edge_requests(CODEC, api, version)]


def _timestamps(api: int, version: int) -> set[int]:
    return {
        p["Timestamp"]
        for _, body in edge_requests(CODEC, api, version)
        for t in body["Topics"]
        for p in t["Partitions"]
    }


def test_special_timestamps_follow_the_versions_that_define_them() -> None:
    assert _timestamps(ApiKey.LIST_OFFSETS, 6) == {-1, -2}
    assert _timestamps(ApiKey.LIST_OFFSETS, 7) == {-1, -2, -3}
    assert _timestamps(ApiKey.LIST_OFFSETS, 9) == {-1, -2, -3, -4, -5}


def test_null_and_empty_follow_the_spec() -> None:
    assert "Topics null" not in _whats(ApiKey.OFFSET_FETCH, 1)  # nullable from v2
    assert {"Topics null", "Topics empty"} <= set(_whats(ApiKey.OFFSET_FETCH, 2))
    assert {"Groups[0].Topics null", "Groups[0].Topics empty"} <= set(
        _whats(ApiKey.OFFSET_FETCH, 8)
    )
    join = dict(edge_requests(CODEC, ApiKey.JOIN_GROUP, 9))
    assert [p["Name"] for p in join["a valid body, one element per list"]["Protocols"]] == ["range"]
    assert join["Protocols empty"]["Protocols"] == []
    configs = set(_whats(ApiKey.DESCRIBE_CONFIGS, 4))
    assert {
        "Resources[0].ConfigurationKeys null",
        "Resources[0].ConfigurationKeys empty",
    } <= configs


def test_every_edge_encodes_at_its_version_on_suite_names_of_its_own() -> None:
    count = 0
    for spec in CODEC.specs:
        if spec.type != "request":
            continue
        for v in spec.valid_versions:
            owners: dict[str, str] = {}
            for what, body in edge_requests(CODEC, spec.api_key, v):
                CODEC.encode(spec.api_key, v, "request", body)
                count += 1
                for name in {n for n in _strings(body) if n.startswith("kc-suite-")}:
                    assert owners.setdefault(name, what) == what, (spec.name, v, name)
    assert count > 400


def _strings(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


MAX_TIMESTAMP = struct.pack(">q", -3)


def close_on_max_timestamp(api: int, version: int, frame: bytes) -> bytes:
    """Close the connection on a ListOffsets asking for the offset of the largest timestamp."""
    if api == ApiKey.LIST_OFFSETS and MAX_TIMESTAMP in frame:
        raise ConnectionAbortedError("ListOffsets timestamp -3")
    return frame


@pytest.mark.parametrize("seed", ["1", "2"])
def test_a_special_value_is_judged_whatever_the_seed(cli, reference, seed) -> None:
    ep = reference.bootstrap[0]
    with FaultyProxy((ep.host, ep.port), passthrough, close_on_max_timestamp) as proxy:
        proc, run = cli(
            "--bootstrap-server", proxy.address, "--seed", seed, "--examples", "3",
            "--select", "protocol/spec/list-offsets/v6/ or protocol/spec/list-offsets/v7/",
        )  # fmt: skip
    assert run is not None, proc.stderr[-2000:]
    v = verdicts(run)
    assert v[("protocol/spec/list-offsets/v7/well-formed", "PROTOCOL.R9")] == "FAIL", run.records
    assert v[("protocol/spec/list-offsets/v6/well-formed", "PROTOCOL.R9")] == "PASS", run.records
    message = next(r["message"] for r in run.records if r["verdict"] == "FAIL")
    assert "Timestamp = -3" in message and "KIP-734" in message, message
