"""Fixtures of the reference-cluster tests: a real ZooKeeper, and clusters shared per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conformance.targets.zookeeper import ZooKeeperServer
from reference_impl.launcher import Cluster
from tests.reference.control_plane import STORES, new_cluster


@pytest.fixture(scope="session")
def zookeeper() -> Iterator[ZooKeeperServer]:
    """One ZooKeeper server for the session (each cluster uses its own chroot), stopped by pid."""
    server = ZooKeeperServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session", params=STORES)
def shared_cluster(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """A 3-broker cluster per metadata store, for the tests that do not stop nodes."""
    store = request.param
    zookeeper = request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    cluster = new_cluster(
        tmp_path_factory.mktemp(f"shared-{store}"),
        store,
        zookeeper,
        client_controller_listener=True,
    )
    cluster.start(timeout=60)
    try:
        yield cluster
    finally:
        cluster.stop()
