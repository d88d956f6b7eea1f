"""A heavy Produce does not hold the broker's event loop: big or compressed batches are validated
on a worker thread, with the same answers as inline validation (issue 13). The stall it saves
other connections is measured in benchmarks/bench_stall.py."""

from __future__ import annotations

import asyncio
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import KafkaError
from conformance.protocol.records import build_batch, encode_batch
from conformance.protocol.records.compression import Compression
from reference_impl.log.validation import validate_batch
from reference_impl.replica.manager import validated_batch

MAX = 64 << 20


def batch(records: int, compression: Compression = Compression.NONE, size: int = 1) -> bytes:
    now = int(time.time() * 1000)
    items = [(now, None, b"x" * size) for _ in range(records)]
    return encode_batch(build_batch(items, compression=compression))


async def _loop_turns_while_validating(data: bytes) -> int:
    """How many times another task ran while ``validated_batch`` was working."""
    turns = 0

    async def other() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(0)

    task = asyncio.get_running_loop().create_task(other())
    await asyncio.sleep(0)
    before = turns
    await validated_batch(data, MAX, 9)
    during = turns - before
    task.cancel()
    return during


@pytest.mark.parametrize(
    "data",
    [
        pytest.param(batch(50_000, Compression.GZIP), id="compressed"),
        pytest.param(batch(200, size=1024), id="big"),
    ],
)
def test_a_heavy_batch_leaves_the_loop_to_other_connections(data: bytes) -> None:
    assert asyncio.run(_loop_turns_while_validating(data)) > 0


def test_a_small_plain_batch_is_validated_inline() -> None:
    assert asyncio.run(_loop_turns_while_validating(batch(3))) == 0


@given(
    records=st.integers(1, 300),
    compression=st.sampled_from(list(Compression)),
    size=st.sampled_from([1, 300]),
    corrupt=st.booleans(),
)
def test_offloaded_validation_answers_as_inline_validation(
    records: int, compression: Compression, size: int, corrupt: bool
) -> None:
    data = bytearray(batch(records, compression, size))
    if corrupt:
        data[-1] ^= 0xFF  # the CRC no longer matches
    data = bytes(data)

    def outcome(run) -> tuple:
        try:
            v = run()
        except KafkaError as e:
            return ("error", int(e.code))
        return ("ok", v.header.count, bytes(v.data))

    inline = outcome(lambda: validate_batch(data, max_message_bytes=MAX, produce_version=9))
    either = outcome(lambda: asyncio.run(validated_batch(data, MAX, 9)))
    assert either == inline
