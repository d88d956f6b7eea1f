"""What the run takes for a target that went down (``conformance.suite.kit.liveness``): a listener
that refuses connections, or one that closes every new connection without answering; and how
long it takes to say so (a few attempts, about a second)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator

import pytest

from conformance.client.ports import free_port
from conformance.protocol import Codec
from conformance.suite.kit import liveness
from conformance.suite.kit.harness import Harness
from conformance.targets.base import Endpoint, Target


def _harness(port: int) -> Harness:
    return Harness(Target(bootstrap=[Endpoint("127.0.0.1", port)]), Codec.from_specs())


@pytest.fixture
def closes_every_connection() -> Iterator[int]:
    """A listener that accepts and at once closes every connection, until the test ends."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    server.close()


def test_a_listener_that_refuses_is_down_within_about_a_second() -> None:
    harness = _harness(free_port())
    try:
        start = time.monotonic()
        why = liveness.down(harness)
        took = time.monotonic() - start
    finally:
        harness.close()
    assert why is not None and why.endswith("refuses connections"), why
    assert took < liveness.ATTEMPTS * (liveness.PAUSE + 0.5), took


def test_a_listener_that_closes_every_connection_is_down(closes_every_connection: int) -> None:
    harness = _harness(closes_every_connection)
    try:
        why = liveness.down(harness)
    finally:
        harness.close()
    assert why is not None and "closes new connections without answering ApiVersions" in why, why
