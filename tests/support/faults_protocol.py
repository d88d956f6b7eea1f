"""Request faults for the PROTOCOL tests, for :class:`tests.support.proxies.FaultyProxy`.

A request fault that raises ends the proxy's request loop, which closes both sides: that is how
these faults close the client's connection on a request, as a broker that gives up would.
"""

from __future__ import annotations

from collections import Counter


class ClosedByFault(ConnectionAbortedError):
    """Raised by a request fault to close the client's connection (never reaches a test)."""


class CloseOn:
    """Close the connection on requests of ``api``: every one (``every=1``), or every
    ``every``-th (the others are forwarded and answered)."""

    def __init__(self, api: int, every: int = 1) -> None:
        self.api, self.every = api, every
        self.seen: Counter[int] = Counter()
        self.closed = 0

    def request(self, api: int, version: int, frame: bytes) -> bytes:
        if api != self.api:
            return frame
        self.seen[version] += 1
        if self.seen[version] % self.every == 0:
            self.closed += 1
            raise ClosedByFault(f"api {api} v{version}")
        return frame
