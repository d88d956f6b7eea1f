"""A listener standing for an Apache Kafka release (``reference?release=V``): it serves only the
APIs of the release's ranges and only where they meet its own, and its ApiVersions features
follow the node's settings; the ranges come from the release table (``broker_settings``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from conformance.protocol import ApiKey, Codec
from conformance.protocol.releases import broker_settings, load, release_of
from conformance.targets.base import TargetError
from conformance.targets.reference import ReferenceTarget
from reference_impl.net.listener import Api, Listener
from reference_impl.node import features_for, release_limits

CODEC = Codec.from_specs()


async def _any(ctx, body):
    return {}


def _ranges(limits) -> dict[int, tuple[int, int]]:
    apis = [Api(ApiKey.METADATA, _any), Api(ApiKey.PRODUCE, _any)]
    apis.append(Api(ApiKey.END_TXN, _any, max_version=5))
    return Listener("t", "zkBroker", CODEC, apis, limits=limits).ranges


def test_limits_drop_and_narrow_the_served_ranges() -> None:
    assert _ranges(None)[ApiKey.END_TXN] == (0, 5)
    limited = _ranges({ApiKey.API_VERSIONS: (0, 3), ApiKey.END_TXN: (0, 4), ApiKey.PRODUCE: (3, 9)})
    assert limited == {ApiKey.API_VERSIONS: (0, 3), ApiKey.END_TXN: (0, 4), ApiKey.PRODUCE: (3, 9)}
    assert ApiKey.METADATA not in limited  # not in the release: not served


def test_release_settings_from_the_table() -> None:
    assert release_of("3.9.1", load()) == "3.9.2"  # a patch release speaks its line's protocol
    with pytest.raises(ValueError, match="no Apache Kafka release"):
        broker_settings("1.0.0")
    old, new = broker_settings("3.9.1"), broker_settings("4.4.0")
    assert old["features"] == {"transaction.version": 0}
    assert new["features"] == {"transaction.version": 2}
    assert old["api_ranges"][str(ApiKey.END_TXN)] == [0, 4]
    assert new["api_ranges"][str(ApiKey.END_TXN)] == [0, 5]
    # KIP-896 (4.0) removed Produce v0-v2; InitProducerId v6 is unstable in 4.4.0: not advertised
    assert new["api_ranges"][str(ApiKey.PRODUCE)][0] == 3
    assert new["api_ranges"][str(ApiKey.INIT_PRODUCER_ID)] == [0, 5]
    assert str(ApiKey.LEADER_AND_ISR) not in new["api_ranges"]
    config = SimpleNamespace(settings=old)
    assert release_limits(config)[ApiKey.END_TXN] == (0, 4)
    assert features_for(config).finalized == {}
    assert features_for(SimpleNamespace(settings={})).finalized == {"transaction.version": 2}


def test_reference_target_release_option() -> None:
    t = ReferenceTarget.from_spec("reference?release=4.0.2")
    settings = t.broker_overrides["settings"]
    assert settings["release"] == "4.0.2" and "transactions" in settings
    assert settings["api_ranges"][str(ApiKey.END_TXN)] == [0, 5]
    with pytest.raises(TargetError, match="no Apache Kafka release"):
        ReferenceTarget.from_spec("reference?release=0.9.0")
