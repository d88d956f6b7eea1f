"""Reading ZooKeeper's transaction log: each write attributed to the session that made it.

Against a real ZooKeeper 3.8 (the reference target's): two sessions write, one of them in a
multi-op transaction (as the reference controller commits), and the log read back names every
write with its session; ``conf`` leads to the log; what cannot be read is said, not guessed.
"""

from __future__ import annotations

import pytest

from conformance.suite.kit import zk_txnlog
from conformance.suite.kit.znodes import ZooKeeperReader, split_connect
from conformance.targets.zookeeper import ZooKeeperServer


@pytest.fixture(scope="module")
def zookeeper():
    server = ZooKeeperServer()
    server.start()
    yield server
    server.stop()


def test_every_write_names_its_session(zookeeper) -> None:
    from kazoo.client import KazooClient

    a, b = KazooClient(hosts=zookeeper.connect), KazooClient(hosts=zookeeper.connect)
    a.start()
    b.start()
    try:
        a.ensure_path("/t1/cluster")
        a.create("/t1/controller", b"{}", ephemeral=True)
        tx = a.transaction()
        tx.check("/t1/cluster", 0)
        tx.create("/t1/cluster/brokers", b"{}")
        tx.set_data("/t1/cluster", b"x")
        assert not [r for r in tx.commit() if isinstance(r, Exception)]
        b.create("/t1/other", b"1")
        b.delete("/t1/other")
        sa, sb = a.client_id[0], b.client_id[0]
    finally:
        for c in (a, b):
            c.stop()
            c.close()
    writes = [w for w in zk_txnlog.writes(zookeeper.connect) if w.path.startswith("/t1")]
    got = [(w.session, zk_txnlog.NAMES[w.op], w.path) for w in writes]
    assert got == [
        (sa, "create", "/t1"),
        (sa, "create", "/t1/cluster"),
        (sa, "create", "/t1/controller"),
        (sa, "create", "/t1/cluster/brokers"),
        (sa, "setData", "/t1/cluster"),
        (sb, "create", "/t1/other"),
        (sb, "delete", "/t1/other"),
    ]
    assert writes[3].zxid == writes[4].zxid  # one transaction
    assert zk_txnlog.under("/t1/cluster/brokers", "/t1/cluster")
    assert not zk_txnlog.under("/t1/clusterx", "/t1/cluster")


def test_the_reader_follows_the_chroot(zookeeper) -> None:
    assert split_connect(f"{zookeeper.connect}/kafka/") == (zookeeper.connect, "/kafka")
    assert split_connect(zookeeper.connect) == (zookeeper.connect, "")
    reader = ZooKeeperReader(f"{zookeeper.connect}/t1")
    try:
        assert reader.full("/cluster") == "/t1/cluster"
        assert reader.json("/cluster") == (b"x", reader.get("/cluster")[1])
        assert reader.json("/nothing") is None and reader.children("/cluster") == ["brokers"]
        assert reader.owner("/cluster") is None  # persistent
    finally:
        reader.close()


def test_what_cannot_be_read_is_said(zookeeper, tmp_path) -> None:
    with pytest.raises(zk_txnlog.TxnLogUnavailable, match="not on this machine"):
        zk_txnlog.log_dir("192.0.2.1:2181")
    with pytest.raises(zk_txnlog.TxnLogUnavailable, match="does not answer"):
        zk_txnlog.log_dir(f"127.0.0.1:{_closed_port()}")
    (tmp_path / "log.1").write_bytes(b"not a log at all")
    with pytest.raises(zk_txnlog.TxnLogUnavailable, match="not a ZooKeeper transaction log"):
        zk_txnlog.read_file(tmp_path / "log.1")


def _closed_port() -> int:
    from conformance.client.ports import free_port

    return free_port()
