"""Connection hygiene: Kafka's connections.max.idle.ms closes idle connections and bounds a
half-sent frame, refusals are logged at DEBUG only, and node logs are rotated by size (issue 13).
"""

from __future__ import annotations

import asyncio
import logging
import struct
from pathlib import Path

import pytest

from conformance.client.wire import Connection
from reference_impl.config import NodeConfig
from reference_impl.launcher import Cluster
from reference_impl.net.listener import Listener
from tests.reference.control_plane import CODEC, run

IDLE = 0.3


async def _listener() -> Listener:
    listener = Listener("PLAINTEXT", "zkBroker", CODEC, [], idle_timeout=IDLE)
    await listener.start()
    return listener


async def _open(listener: Listener) -> Connection:
    return await Connection.open("127.0.0.1", listener.port, codec=CODEC)


def test_kafkas_default_idle_time_is_ten_minutes() -> None:
    config = NodeConfig("broker", 1, "/tmp/x", [])
    assert config.connections_max_idle_ms == 600_000


@pytest.mark.parametrize("sent", [b"", struct.pack(">i", 100) + b"0123456789"])
def test_an_idle_connection_or_a_half_sent_frame_is_closed(sent: bytes) -> None:
    async def main() -> tuple[bool, int]:
        listener = await _listener()
        try:
            conn = await _open(listener)
            if sent:
                await conn.send_raw(sent)
            closed = await conn.wait_closed_by_peer(10 * IDLE + 5)
            await conn.close()
            return closed, listener.connections
        finally:
            await listener.stop()

    closed, left = run(main())
    assert closed, "the listener kept an idle connection open"
    assert left == 0


def test_a_connection_in_use_is_not_idle() -> None:
    async def main() -> int:
        listener = await _listener()
        try:
            async with await _open(listener) as conn:
                answered = 0
                for _ in range(8):  # 8 requests, 0.1 s apart: 0.8 s, well past the idle time
                    await conn.api_versions()
                    answered += 1
                    await asyncio.sleep(IDLE / 3)
                return answered
        finally:
            await listener.stop()

    assert run(main()) == 8


def test_refused_connections_are_logged_at_debug_only(caplog: pytest.LogCaptureFixture) -> None:
    async def main() -> None:
        listener = await _listener()
        try:
            for _ in range(20):
                conn = await _open(listener)
                await conn.send_raw(struct.pack(">ihhi", 8, 999, 0, 1))  # an unknown api key
                assert await conn.wait_closed_by_peer(5)
                await conn.close()
        finally:
            await listener.stop()

    with caplog.at_level(logging.DEBUG, logger="reference_impl.net.listener"):
        run(main())
    refusals = [r for r in caplog.records if "closing" in r.getMessage()]
    assert len(refusals) == 20
    assert {r.levelno for r in refusals} == {logging.DEBUG}


def test_a_node_closes_idle_connections_and_rotates_its_log(tmp_path: Path) -> None:
    overrides = {"connections_max_idle_ms": 500, "log_file_max_bytes": 2048, "log_level": "DEBUG"}
    cluster = Cluster(tmp_path / "cluster", brokers=1, overrides=overrides)
    cluster.start(timeout=60)
    try:
        host, port = cluster.broker_address(cluster.broker_nodes()[0])

        async def idle() -> bool:
            async with await Connection.open(host, port, codec=CODEC) as conn:
                return await conn.wait_closed_by_peer(10)

        async def refused(times: int) -> None:  # a DEBUG line each: log volume to rotate
            for _ in range(times):
                async with await Connection.open(host, port, codec=CODEC) as conn:
                    await conn.send_raw(struct.pack(">ihhi", 8, 999, 0, 1))
                    assert await conn.wait_closed_by_peer(5)

        assert run(idle()), "the broker kept an idle connection past connections.max.idle.ms"
        run(refused(60))
    finally:
        cluster.stop()
    for node in cluster.nodes.values():
        logs = sorted(node.log_path.parent.glob("node.log*"))
        if node.config.role == "broker":  # the chatty one at DEBUG
            assert len(logs) > 1, f"{node.name}: the log was not rotated ({logs})"
        assert len(logs) <= 1 + 3  # the file and at most log_file_backups old ones
        for f in logs:
            assert f.stat().st_size <= 2048 + 1024, f"{f} grew past the rotation size"
