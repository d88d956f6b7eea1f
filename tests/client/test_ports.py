"""Ports for the project's servers: below the ephemeral range (where outgoing connections take
their local ports), never handed out twice by one process, bindable when handed out."""

from __future__ import annotations

import socket

from conformance.client import ports


def test_ports_lie_below_the_ephemeral_range_and_are_never_repeated() -> None:
    top = ports._ephemeral_start()
    drawn = [ports.free_port() for _ in range(300)]
    assert len(set(drawn)) == len(drawn)
    assert all(ports.LOWEST <= p < top for p in drawn), (top, sorted(drawn)[:5])
    with socket.socket() as s:  # the last one is free to serve on
        s.bind(("127.0.0.1", drawn[-1]))
        s.listen()


def test_a_port_in_use_is_never_handed_out(monkeypatch) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        # the only port of a one-port range is taken: the draw falls back to the OS's pick
        monkeypatch.setattr(ports, "LOWEST", taken)
        monkeypatch.setattr(ports, "_ephemeral_start", lambda: taken + 1000)
        monkeypatch.setattr(ports._rng, "randrange", lambda lo, hi: taken)
        got = ports.free_port()
        assert got != taken
        assert got in ports._given
