"""Stops are bounded and clean: cancellation is never swallowed, every task a node owns ends.

Issue 13: a replica fetcher cancelled while it closed its connection to a dead leader swallowed
the cancellation and kept retrying, so a broker's graceful stop hung until SIGKILL. The
tests below cancel a request and a close at every loop iteration; the cluster test stops a
3-broker cluster with replicated partitions under load a few times and requires every process
to exit 0 by itself (``Cluster.stop`` kills what is still running after its timeout, which
would show as -9). Stop times over many repetitions are measured in benchmarks/bench_stop.py.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from conformance.client.wire import Connection
from reference_impl.net.listener import Listener
from reference_impl.tasks import stop_tasks
from tests.reference.cluster.test_durability import History, create_topic
from tests.reference.control_plane import CODEC, new_cluster

REPETITIONS = 3


async def _cancelled_after(steps: int, port: int, call: str) -> tuple[bool, asyncio.Task]:
    """Run ``call`` on a fresh connection, cancel it after ``steps`` loop iterations; whether
    it had finished before the cancellation, and the task."""
    conn = await Connection.open("127.0.0.1", port, codec=CODEC)
    try:
        coro = conn.api_versions() if call == "request" else conn.close()
        task = asyncio.get_running_loop().create_task(coro)
        for _ in range(steps):
            await asyncio.sleep(0)
        finished_before = task.done()
        task.cancel()
        await asyncio.wait([task], timeout=5)
        return finished_before, task
    finally:
        await conn.close()


@pytest.mark.parametrize("call", ["request", "close"])
def test_a_task_cancelled_during_a_request_or_a_close_ends_cancelled(call: str) -> None:
    """Every loop iteration of the call is tried (an exhaustive sweep, not a sample): the
    answer arriving in the same iteration as the cancellation is the case that used to be
    swallowed (Python 3.11's wait_for returns the ready result instead)."""

    async def main() -> list[int]:
        listener = Listener("PLAINTEXT", "zkBroker", CODEC, [])
        port = await listener.start()
        swallowed = []
        try:
            for steps in range(40):
                finished_before, task = await _cancelled_after(steps, port, call)
                assert task.done(), f"{call} did not end after its cancellation"
                if not finished_before and not task.cancelled():
                    swallowed.append(steps)
        finally:
            await listener.stop()
        return swallowed

    swallowed = asyncio.run(main())
    assert not swallowed, f"{call}: cancellations after {swallowed} loop steps were swallowed"


def test_stop_tasks_gives_up_on_a_task_that_ignores_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                continue  # the defect stop_tasks must survive

    async def main() -> float:
        task = asyncio.get_running_loop().create_task(stubborn(), name="stubborn")
        await asyncio.sleep(0)
        loop = asyncio.get_running_loop()
        started = loop.time()
        await stop_tasks([task], 0.2)
        elapsed = loop.time() - started
        task.get_coro().close()  # let the test end
        return elapsed

    with caplog.at_level(logging.ERROR, logger="reference_impl.tasks"):
        elapsed = asyncio.run(main())
    assert elapsed < 5
    assert "task stubborn did not stop" in caplog.text


def test_graceful_stops_of_a_replicated_cluster_end_without_sigkill(tmp_path: Path) -> None:
    cluster = new_cluster(tmp_path / "cluster", "embedded", None)
    try:
        for rep in range(REPETITIONS):
            cluster.start(timeout=60)
            if rep == 0:
                create_topic(cluster, "stopped", 6)
            history = History(cluster, "stopped", 6).start()
            history.wait_for_acks(500)
            cluster.stop(timeout=10)  # under load: followers are mid-fetch when leaders go
            history.abandon()
            for node in cluster.nodes.values():
                assert node.proc is not None
                assert node.proc.returncode == 0, (
                    f"stop {rep + 1}: {node.name} exited {node.proc.returncode} "
                    f"(-9: it did not stop within 10 s): {node.last_words()}"
                )
    finally:
        cluster.stop()
