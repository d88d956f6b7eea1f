"""Loopback ports for the servers the project starts (reference nodes, ZooKeeper, Kafka, tansu,
proxies).

A port the OS hands out for ``bind(0)`` comes from the ephemeral range, the same range every
outgoing connection takes its local port from: between the moment it is chosen and the moment a
server binds it, a client connection (the cluster's own nodes connecting to each other, say) can
take it, and the server fails with "address already in use". Ports are therefore drawn below the
ephemeral range, never handed out twice by one process, and checked bindable.

A port is handed out before its server binds it (a cluster's configs are written first, its
nodes bind when they start, and again after a restart), so the bind check cannot keep two of the
project's processes (pytest-xdist workers, a suite run's workers, ``serve``) from handing out the
same port meanwhile. Each process therefore hands out only ports of blocks it holds: ``BLOCK``
ports, held through an exclusive ``flock`` on the block's file in a folder of the user's temporary
directory (``LOCKS``), kept open for the process's life and released by the OS however it ends.
No two processes hold one block, so none hands out another's port, bound yet or not. A forked
child holds no block of its parent's. Where no block can be held (the folder unusable, every
block taken), a port is drawn at random from the whole range as before.
"""

from __future__ import annotations

import fcntl
import os
import random
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

#: where drawn ports lie when the ephemeral range cannot be read (Linux's default starts at 32768)
LOWEST, EPHEMERAL_START = 20000, 32768
#: below this many ports between LOWEST and the ephemeral range, the OS picks (``bind(0)``)
MIN_RANGE = 1000
#: ports per block; block k is ports k*BLOCK .. k*BLOCK+BLOCK-1, whatever LOWEST is
BLOCK = 32
#: the block files' folder (one per user; None: the temporary directory's, made when first used)
LOCKS: Path | None = None
_given: set[int] = set()
_rng = random.SystemRandom()


@dataclass
class Holding:
    """The blocks this process holds: their numbers and the open, locked files holding them."""

    pid: int = field(default_factory=os.getpid)
    blocks: list[int] = field(default_factory=list)
    files: list[int] = field(default_factory=list)

    def current(self) -> Holding:
        """This holding, or a fresh one in a forked child (its parent's locks are its
        parent's: the child's copies of the files are closed, which keeps them locked)."""
        if self.pid == os.getpid():
            return self
        self.release()
        return Holding()

    def claim(self, lo: int, top: int, count: int = 1) -> int | None:
        """``count`` consecutive blocks within ``lo``..``top`` no process holds, now held by this
        one (the first one's number); None when there are none, or the folder cannot be used."""
        folder = _folder()
        if folder is None:
            return None
        starts = list(range(-(-lo // BLOCK), top // BLOCK - count + 1))
        _rng.shuffle(starts)
        for k in starts:
            files: list[int] = []
            for j in range(k, k + count):
                fd = None if j in self.blocks else _lock(folder / str(j))
                if fd is None:
                    break
                files.append(fd)
            if len(files) == count:
                self.files.extend(files)
                self.blocks.extend(range(k, k + count))
                return k
            for fd in files:
                os.close(fd)
        return None

    def release(self) -> None:
        """Close the files (the blocks stay held while another process has them open)."""
        for fd in self.files:
            os.close(fd)
        self.files.clear()
        self.blocks.clear()


_holding = Holding()


def _lock(path: Path) -> int | None:
    """The file at ``path``, open and exclusively locked by this process; None where another
    holds it (or it cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _folder() -> Path | None:
    folder = LOCKS or Path(tempfile.gettempdir()) / f"kafka-conformance-ports-{os.getuid()}"
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    return folder


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return EPHEMERAL_START


def _bindable(host: str, port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def _give(port: int) -> int:
    _given.add(port)
    return port


def _in_block(host: str, k: int, lo: int, top: int) -> int | None:
    """A bindable port of block ``k`` within ``lo``..``top`` not given before, now given."""
    for port in range(max(k * BLOCK, lo), min(k * BLOCK + BLOCK, top)):
        if port not in _given:
            if _bindable(host, port):
                return _give(port)
            _given.add(port)  # another program's: never looked at again
    return None


def _held() -> Holding:
    global _holding
    _holding = _holding.current()
    return _holding


def _from_blocks(host: str, lo: int, top: int) -> int | None:
    """A port from the blocks this process holds, holding another block while they have none
    left; None when no block can be held."""
    holding = _held()
    for k in holding.blocks:
        if (port := _in_block(host, k, lo, top)) is not None:
            return port
    while (new := holding.claim(lo, top)) is not None:
        if (port := _in_block(host, new, lo, top)) is not None:
            return port
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` nobody listens on now, below the ephemeral range, not given before
    by this process nor by another that draws here while it lives (the OS's pick, ``bind(0)``,
    when no such port is found)."""
    top = _ephemeral_start()
    if top - LOWEST >= MIN_RANGE:
        port = _from_blocks(host, LOWEST, top)
        if port is not None:
            return port
        for _ in range(200):
            port = _rng.randrange(LOWEST, top)
            if port not in _given and _bindable(host, port):
                return _give(port)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    return _give(port)


def free_run(size: int, host: str = "127.0.0.1", attempts: int = 50) -> int | None:
    """The first of ``size`` consecutive ports on ``host`` nobody listens on now, below the
    ephemeral range, in blocks this process holds (from a block's first port), none given
    before; drawn at random where no blocks can be held; None when none is found."""
    if size == 1:
        return free_port(host)
    top = _ephemeral_start()
    for _ in range(attempts):
        k = _held().claim(LOWEST, top, -(-size // BLOCK))
        if k is None:
            break
        run = range(k * BLOCK, k * BLOCK + size)
        if not _given.intersection(run) and all(_bindable(host, p) for p in run):
            _given.update(run)
            return run[0]
        # the blocks stay held: free_port hands out their free ports
    for _ in range(attempts):
        base = _rng.randrange(LOWEST, top - size)
        run = range(base, base + size)
        if not _given.intersection(run) and all(_bindable(host, p) for p in run):
            _given.update(run)
            return base
    return None
