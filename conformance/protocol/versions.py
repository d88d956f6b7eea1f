"""Version ranges as Kafka's message specs write them: "none", "3", "0-7", "9+"."""

from __future__ import annotations

import re
from dataclasses import dataclass

from conformance.protocol._generated.api_keys import ApiKey

_RANGE = re.compile(r"^(?:(none)|(\d+)(?:(\+)|-(\d+))?)$")

#: The highest version any field or message can have; "N+" ranges end here.
MAX_VERSION = 0x7FFF


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of versions; empty when ``lo > hi``."""

    lo: int
    hi: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        m = _RANGE.match(text.strip()) if isinstance(text, str) else None
        if m is None:
            raise ValueError(f"invalid version range {text!r} (expected none, N, N-M or N+)")
        if m.group(1):
            return NONE
        lo = int(m.group(2))
        if m.group(3):
            return cls(lo, MAX_VERSION)
        hi = int(m.group(4)) if m.group(4) is not None else lo
        if hi < lo:
            raise ValueError(f"invalid version range {text!r} (upper bound below lower bound)")
        return cls(lo, hi)

    @property
    def empty(self) -> bool:
        return self.lo > self.hi

    def __contains__(self, version: int) -> bool:
        return self.lo <= version <= self.hi

    def intersect(self, other: Versions) -> Versions:
        lo, hi = max(self.lo, other.lo), min(self.hi, other.hi)
        return Versions(lo, hi) if lo <= hi else NONE

    def __iter__(self):
        return iter(range(self.lo, self.hi + 1))

    def __str__(self) -> str:
        if self.empty:
            return "none"
        if self.hi == MAX_VERSION:
            return f"{self.lo}+"
        return str(self.lo) if self.lo == self.hi else f"{self.lo}-{self.hi}"


NONE = Versions(1, 0)


#: The APIs whose newest versions the suite's hand-built request bodies are not written for yet:
#: api key -> (the highest version they are written for, why). The harness's negotiation stops
#: there; every other API is spoken at the newest version both sides advertise (issue 37: no
#: Kafka 3.9 cap). The client (``conformance.client``) writes every version of the APIs it
#: uses, and the reference's handlers declare their own highest versions
#: (``reference_impl.net.listener.Api.max_version``).
NOT_WRITTEN: dict[int, tuple[int, str]] = {
    ApiKey.OFFSET_COMMIT: (
        9,
        "OffsetCommit v10 names topics by id; the offsets and groups tests' commits are by name",
    ),
    ApiKey.OFFSET_FETCH: (
        9,
        "OffsetFetch v10 names topics by id; the offsets and groups tests' look-ups are by name",
    ),
    ApiKey.TXN_OFFSET_COMMIT: (
        5,
        "TxnOffsetCommit v6 names topics by id; the transactions tests' commits are by name",
    ),
}


def negotiable(api_key: int, ours: Versions) -> Versions:
    """Our versions of an API that a negotiation may pick: all that our specs know, but up to
    :data:`NOT_WRITTEN`'s version for an API whose newer bodies are not written yet."""
    cap = NOT_WRITTEN.get(api_key)
    return ours if cap is None else Versions(ours.lo, min(ours.hi, cap[0]))
