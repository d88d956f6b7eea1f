"""Faults of a target that leaves some requests unanswered, with the connection left open.

:class:`Swallow` is a request fault for :class:`tests.support.proxies.FaultyProxy`: requests of the
chosen (api key, version) pairs (or every version of an api key) are never forwarded, so never
answered; it counts what it swallowed, so a test can tell how often the suite sent them.
"""

from __future__ import annotations

from collections import Counter


class Swallow:
    def __init__(self, apis: dict[int, set[int] | None]) -> None:
        #: api key -> the versions to swallow (None: every version)
        self.apis = apis
        self.swallowed: Counter[tuple[int, int]] = Counter()

    def request(self, api: int, version: int, frame: bytes) -> bytes | None:
        versions = self.apis.get(api, set())
        if versions is None or version in versions:
            self.swallowed[(api, version)] += 1
            return None
        return frame
