"""Reading the target's ZooKeeper (``--zookeeper H:P[/chroot]``) for the znode checks.

Paths are given relative to the chroot, as Kafka names them (``/brokers/ids/1``). The reader is
read-only; it is opened by a test and closed by it. Without a connect string the checks that
need it are SKIP naming ``--zookeeper``. Which ZooKeeper session wrote a znode is read from the
server's transaction log (``conformance.suite.kit.zk_txnlog``), where the server lets us find it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit import zk_txnlog

if TYPE_CHECKING:
    from conformance.suite.kit.harness import Harness

NO_ZOOKEEPER = "no ZooKeeper connect string (--zookeeper)"


def split_connect(connect: str) -> tuple[str, str]:
    """``h:p,h:p/chroot`` -> (hosts, chroot without a trailing slash, "" for none)."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, ("/" + chroot.strip("/")) if slash and chroot.strip("/") else ""


class ZooKeeperReader:
    def __init__(self, connect: str, timeout: float = 10.0) -> None:
        from kazoo.client import KazooClient

        self.connect = connect
        self.hosts, self.chroot = split_connect(connect)
        self.client = KazooClient(hosts=self.hosts, timeout=timeout, read_only=True)
        self.client.start(timeout=timeout)

    def full(self, path: str) -> str:
        """The path as the server (and its transaction log) knows it."""
        return f"{self.chroot}{path}" if path != "/" else (self.chroot or "/")

    def get(self, path: str) -> tuple[bytes, Any] | None:
        """(data, stat) of a znode, or None where it does not exist."""
        from kazoo.exceptions import NoNodeError

        try:
            return self.client.get(self.full(path))
        except NoNodeError:
            return None

    def json(self, path: str) -> tuple[Any, Any] | None:
        """(decoded JSON or the raw bytes where it is not JSON, stat), or None."""
        found = self.get(path)
        if found is None:
            return None
        data, stat = found
        try:
            return json.loads(data), stat
        except (ValueError, UnicodeDecodeError):
            return data, stat

    def children(self, path: str) -> list[str]:
        from kazoo.exceptions import NoNodeError

        try:
            return sorted(self.client.get_children(self.full(path)))
        except NoNodeError:
            return []

    def owner(self, path: str) -> int | None:
        """The session owning an ephemeral znode (None: absent or persistent)."""
        found = self.get(path)
        if found is None or not found[1].ephemeralOwner:
            return None
        return found[1].ephemeralOwner

    def close(self) -> None:
        try:
            self.client.stop()
        finally:
            self.client.close()


@contextmanager
def zookeeper(harness: Harness) -> Iterator[ZooKeeperReader]:
    """The target's ZooKeeper, read-only; SKIP naming ``--zookeeper`` without one."""
    connect = harness.target.zookeeper
    if not connect:
        raise MissingPrecondition(NO_ZOOKEEPER)
    from kazoo.handlers.threading import KazooTimeoutError

    try:
        reader = ZooKeeperReader(connect)
    except KazooTimeoutError:
        raise MissingPrecondition(f"cannot reach ZooKeeper at {connect}") from None
    try:
        yield reader
    finally:
        reader.close()


# --- who wrote what (the transaction log) ----------------------------------------------------


def writes(zk: ZooKeeperReader) -> list[zk_txnlog.Write]:
    """Every write the server logged; SKIP naming why where its log cannot be read here."""
    try:
        return zk_txnlog.writes(zk.hosts)
    except zk_txnlog.TxnLogUnavailable as e:
        raise MissingPrecondition(f"which session wrote a znode is not observable: {e}") from None


def holders(zk: ZooKeeperReader, log: list[zk_txnlog.Write], path: str) -> set[int]:
    """Sessions that created the ephemeral ``path`` over time, and the one holding it now."""
    full = zk.full(path)
    found = {w.session for w in log if w.path == full and w.op != zk_txnlog.DELETE}
    owner = zk.owner(path)
    return found | ({owner} if owner else set())


def controller_sessions(zk: ZooKeeperReader, log: list[zk_txnlog.Write]) -> set[int]:
    """Every session that held ``/controller``."""
    return holders(zk, log, "/controller")


def broker_sessions(zk: ZooKeeperReader, log: list[zk_txnlog.Write]) -> dict[str, set[int]]:
    """Broker id -> every session that held its ``/brokers/ids/N``."""
    prefix = zk.full("/brokers/ids/")
    ids = set(zk.children("/brokers/ids"))
    ids |= {w.path[len(prefix) :] for w in log if w.path.startswith(prefix)}
    return {i: holders(zk, log, f"/brokers/ids/{i}") for i in sorted(ids) if "/" not in i}


def written_under(zk: ZooKeeperReader, log: list[zk_txnlog.Write], *paths: str) -> list:
    """The writes of ``path`` and everything below it, for each of ``paths``."""
    full = [zk.full(p) for p in paths]
    return [w for w in log if any(zk_txnlog.under(w.path, f) for f in full)]
