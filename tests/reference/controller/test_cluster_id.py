"""KIP-78 get-or-generate under races, and nodes of another cluster refusing to join.

Concurrent starters against an empty store agree on exactly one id: kazoo clients racing for
``/cluster/id``, controllers racing for one embedded data dir (one wins the dir, the others
exit with a reason); a whole ZooKeeper-mode cluster started at once is in
test_zookeeper_failover. A node whose
``meta.properties`` names another cluster exits with a one-line INCONSISTENT_CLUSTER_ID reason.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import signal
import time

import pytest
from kazoo.client import KazooClient

from reference_impl.cluster_id import is_valid, read_meta_properties, write_meta_properties
from reference_impl.launcher import NodeProcess
from reference_impl.zk import ZooKeeper
from tests.reference.control_plane import STORES, new_cluster, run, wait_until

_chroot = itertools.count(1)
FOREIGN = "AAAAAAAAAAAAAAAAAAAAAA"


def test_kazoo_clients_racing_for_cluster_id_agree(zookeeper) -> None:
    chroot = f"/race-{next(_chroot)}-{time.monotonic_ns()}"

    async def race() -> list[str]:
        nodes = [ZooKeeper(zookeeper.connect + chroot, 4000) for _ in range(8)]
        await asyncio.gather(*(n.start() for n in nodes))
        try:
            return list(await asyncio.gather(*(n.cluster_id() for n in nodes)))
        finally:
            await asyncio.gather(*(n.close() for n in nodes))

    ids = run(race())
    assert len(set(ids)) == 1 and is_valid(ids[0])
    client = KazooClient(hosts=zookeeper.connect)
    client.start(timeout=10)
    try:
        assert json.loads(client.get(chroot + "/cluster/id")[0]) == {"version": 1, "id": ids[0]}
    finally:
        client.stop()
        client.close()


def test_controllers_racing_for_one_embedded_data_dir(tmp_path) -> None:
    cluster = new_cluster(tmp_path, "embedded", None, brokers=0)
    (first,) = cluster.controller_nodes()
    rivals = [first] + [
        NodeProcess(f"rival-{i}", first.config, first.config_path, tmp_path / f"rival-{i}.log")
        for i in range(2)
    ]
    for node in rivals:
        node.start()
    try:
        losers = wait_until(
            lambda: (
                [n for n in rivals if not n.running]
                if sum(not n.running for n in rivals) == 2
                else None
            ),
            timeout=20,
        )
        for node in losers:
            assert node.proc.returncode == 1
            assert "is in use by another process" in node.last_words()
        data_dir = first.config.data_dir
        cluster_id = wait_until(lambda: read_meta_properties(data_dir).get("cluster.id"))
        lines = (tmp_path / "controller-0" / "data" / "metadata.log").read_text().splitlines()
        ids = [
            r["cluster_id"]
            for line in lines
            for r in json.loads(line)["records"]
            if r["type"] == "cluster_id"
        ]
        assert ids == [cluster_id]
    finally:
        for node in rivals:
            node.signal(signal.SIGKILL)
            node.wait(10)


@pytest.mark.parametrize("store", STORES)
def test_a_node_of_another_cluster_refuses_to_join(
    store: str, tmp_path, request: pytest.FixtureRequest
) -> None:
    """A broker, then a controller, with a foreign ``meta.properties`` exits 1 with a one-line
    INCONSISTENT_CLUSTER_ID reason; with its own back it joins again."""
    zookeeper = request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    cluster = new_cluster(tmp_path, store, zookeeper, brokers=1)
    cluster.start()
    try:
        for name in ("broker-1", "controller-0"):
            node = cluster.nodes[name]
            cluster.kill(name, signal.SIGTERM)
            own = read_meta_properties(node.config.data_dir)["cluster.id"]
            write_meta_properties(node.config.data_dir, FOREIGN, node.config.node_id)
            cluster.start_node(name)
            assert node.wait(30) == 1
            reason = node.last_words()
            assert "INCONSISTENT_CLUSTER_ID" in reason and FOREIGN in reason and own in reason
            write_meta_properties(node.config.data_dir, own, node.config.node_id)
            cluster.start_node(name)
            cluster.wait_ready(timeout=30)
    finally:
        cluster.stop()
