"""Loopback ports for the servers the project starts (reference nodes, ZooKeeper, tansu, proxies).

A port the OS hands out for ``bind(0)`` comes from the ephemeral range, the same range every
outgoing connection takes its local port from: between the moment it is chosen and the moment a
server binds it, a client connection (the cluster's own nodes connecting to each other, say) can
take it, and the server fails with "address already in use". Ports are therefore drawn at
random below the ephemeral range, never handed out twice by one process, and checked bindable.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

#: where drawn ports lie when the ephemeral range cannot be read (Linux's default starts at 32768)
LOWEST, EPHEMERAL_START = 20000, 32768
_given: set[int] = set()
_rng = random.SystemRandom()


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return EPHEMERAL_START


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` nobody listens on now, below the ephemeral range, not given before
    by this process (the OS's pick, ``bind(0)``, when no such port is found)."""
    top = _ephemeral_start()
    if top - LOWEST >= 1000:
        for _ in range(200):
            port = _rng.randrange(LOWEST, top)
            if port in _given:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind((host, port))
                except OSError:
                    continue
            _given.add(port)
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        port = s.getsockname()[1]
    _given.add(port)
    return port
