"""Ports for the project's servers: below the ephemeral range (where outgoing connections take
their local ports), never handed out twice by one process nor by two processes that live at
once (each draws from blocks it holds), bindable when handed out."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.client import ports

#: ports each of two processes draws: were they drawn independently from the whole range, as
#: before the blocks, about DRAWN**2 / 12768 (about 20) would be the same
DRAWN = 500
#: consecutive ports a docker target takes (``free_run``): more than a block
RUN = 40


@pytest.fixture
def holding(monkeypatch, tmp_path: Path):
    """This process's blocks held afresh in a folder of the test's own; given up after."""
    fresh = ports.Holding()
    monkeypatch.setattr(ports, "_holding", fresh)
    monkeypatch.setattr(ports, "LOCKS", tmp_path)
    yield fresh
    ports._holding.release()


def test_ports_lie_below_the_ephemeral_range_and_are_never_repeated() -> None:
    top = ports._ephemeral_start()
    drawn = [ports.free_port() for _ in range(300)]
    assert len(set(drawn)) == len(drawn)
    assert all(ports.LOWEST <= p < top for p in drawn), (top, sorted(drawn)[:5])
    assert {p // ports.BLOCK for p in drawn} <= set(ports._holding.blocks)
    with socket.socket() as s:  # the last one is free to serve on
        s.bind(("127.0.0.1", drawn[-1]))
        s.listen()


def test_two_processes_never_hand_out_one_port(holding, tmp_path: Path) -> None:
    """Another process draws three runs of RUN ports and DRAWN single ones (and binds none: its
    servers have not started yet), then this one does: none is the same."""
    code = (
        "import sys, pathlib\n"
        "from conformance.client import ports\n"
        "ports.LOCKS = pathlib.Path(sys.argv[1])\n"
        f"runs = [ports.free_run({RUN}) for _ in range(3)]\n"
        f"print(*[ports.free_port() for _ in range({DRAWN})], flush=True)\n"
        f"print(*[b + i for b in runs for i in range({RUN})], flush=True)\n"
        "sys.stdin.read()\n"
    )
    other = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert other.stdout is not None and other.stdin is not None
        theirs = {int(p) for p in other.stdout.readline().split()}
        their_runs = {int(p) for p in other.stdout.readline().split()}
        our_runs = {b + i for b in [ports.free_run(RUN) for _ in range(3)] for i in range(RUN)}
        ours = {ports.free_port() for _ in range(DRAWN)}
    finally:
        if other.stdin is not None:
            other.stdin.close()
        other.wait(30)
    assert len(theirs) == len(ours) == DRAWN and len(their_runs) == len(our_runs) == 3 * RUN
    assert (ours | our_runs) & (theirs | their_runs) == set()
    assert ours & our_runs == set()
    assert len(list(tmp_path.iterdir())) >= 2 * DRAWN // ports.BLOCK


def test_a_port_in_use_is_never_handed_out(monkeypatch, holding) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        # the range is the one block that holds the busy port
        k = taken // ports.BLOCK
        monkeypatch.setattr(ports, "LOWEST", k * ports.BLOCK)
        monkeypatch.setattr(ports, "MIN_RANGE", 0)
        monkeypatch.setattr(ports, "_ephemeral_start", lambda: (k + 1) * ports.BLOCK)
        got = [ports.free_port() for _ in range(ports.BLOCK)]
        assert taken not in got
        assert holding.blocks == [k]


def test_a_forked_child_holds_none_of_its_parents_blocks(holding) -> None:
    ours = ports.free_port()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its port, then gone at once
        try:
            os.write(write_end, str(ports.free_port()).encode())
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 30)  # bounded, should the child hang
        theirs = int(os.read(read_end, 16)) if ready else None
    finally:
        os.close(read_end)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert theirs is not None, "the forked child gave no port in 30 s"
    assert theirs // ports.BLOCK not in holding.blocks, (ours, theirs, holding.blocks)


def test_a_run_is_consecutive_free_ports_from_a_block(holding) -> None:
    base = ports.free_run(RUN)
    assert base is not None and base % ports.BLOCK == 0
    assert {base // ports.BLOCK, (base + RUN - 1) // ports.BLOCK} <= set(holding.blocks)
    with contextlib.ExitStack() as stack:  # every port of it is free to serve on
        for port in range(base, base + RUN):
            s = stack.enter_context(socket.socket())
            s.bind(("127.0.0.1", port))
