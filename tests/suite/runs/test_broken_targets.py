"""Deliberately broken targets: a faulty proxy in front of a good target makes exactly the
expected requirements fail (compared with the same selection and seed through a transparent
proxy).

* in front of tansu, a proxy that drops a field (ThrottleTimeMs) from Metadata v3+ responses:
  PROTOCOL.R3 fails for exactly those versions;
* in front of the reference cluster, a proxy that advertises DescribeCluster 0-0 while the broker
  behind it still answers v1 as if supported: PROTOCOL.R10 fails for DescribeCluster, and v1 of
  its spec-derived test becomes UNSUPPORTED (not FAIL).
"""

from __future__ import annotations

import pytest

from conformance.protocol import ApiKey, Codec
from conformance.targets.tansu import TansuTarget
from tests.support.proxies import FaultyProxy, passthrough
from tests.support.runs import failing, verdicts

SEED = "20261122"
CODEC = Codec.from_specs()


def drop_throttle_time(api: int, version: int, frame: bytes) -> bytes:
    if api != ApiKey.METADATA or not 3 <= version <= 12:
        return frame
    header = 5 if version >= 9 else 4  # correlation id (+ empty tagged fields from v9)
    return frame[:header] + frame[header + 4 :]


def advertise_describe_cluster_v0_only(api: int, version: int, frame: bytes) -> bytes:
    if (
        api != ApiKey.API_VERSIONS
        or version > CODEC.message(ApiKey.API_VERSIONS, "response").valid_versions.hi
    ):
        return frame
    body = CODEC.decode(ApiKey.API_VERSIONS, version, "response", frame[4:])
    for key in body["ApiKeys"]:
        if key["ApiKey"] == ApiKey.DESCRIBE_CLUSTER:
            key["MaxVersion"] = key["MinVersion"]
    return frame[:4] + CODEC.encode(ApiKey.API_VERSIONS, version, "response", body)


@pytest.fixture(scope="module")
def tansu():
    target = TansuTarget()
    target.start()
    yield target
    target.stop()


def run_through(cli, target, fault, select: str):
    ep = target.bootstrap[0]
    with FaultyProxy((ep.host, ep.port), fault) as proxy:
        proc, run = cli(
            "--bootstrap-server",
            proxy.address,
            "--target-name",
            "proxied",
            "--seed",
            SEED,
            "--select",
            select,
        )
    assert run is not None, proc.stderr[-2000:]
    assert not [r for r in run.records if r["verdict"] == "ERROR"], proc.stdout[-3000:]
    return run, proxy.rewritten


def test_a_dropped_field_fails_exactly_the_decoding_requirement(cli, tansu) -> None:
    select = "spec and metadata"
    baseline, _ = run_through(cli, tansu, passthrough, select)
    faulty, rewritten = run_through(cli, tansu, drop_throttle_time, select)
    assert rewritten > 0
    broken = {(f"protocol/spec/metadata/v{v}/well-formed", "PROTOCOL.R3") for v in range(3, 13)}
    before, after = failing(baseline), failing(faulty)
    assert after - before == broken - before
    # each requirement is judged on its own: nothing else moves
    assert before - after <= broken
    v = verdicts(faulty)
    assert v[("protocol/spec/metadata/v2/well-formed", "PROTOCOL.R3")] == "PASS"
    assert v[("protocol/spec/metadata/v12/well-formed", "PROTOCOL.R1")] == "PASS"  # framing held


def test_an_unadvertised_version_answered_fails_exactly_the_version_requirement(
    cli, reference
) -> None:
    select = "protocol/versions/describe-cluster or protocol/spec/describe-cluster"
    baseline, _ = run_through(cli, reference, passthrough, select)
    faulty, rewritten = run_through(cli, reference, advertise_describe_cluster_v0_only, select)
    assert rewritten > 0
    assert failing(baseline) == set()
    assert failing(faulty) == {
        ("protocol/versions/describe-cluster/outside-advertised-refused", "PROTOCOL.R10")
    }
    v = verdicts(faulty)
    assert v[("protocol/spec/describe-cluster/v1/well-formed", "PROTOCOL.R9")] == "UNSUPPORTED"
    assert v[("protocol/spec/describe-cluster/v0/well-formed", "PROTOCOL.R9")] == "PASS"
