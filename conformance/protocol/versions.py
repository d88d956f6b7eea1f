"""Version ranges as Kafka's message specs write them: "none", "3", "0-7", "9+"."""

from __future__ import annotations

import re
from dataclasses import dataclass

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


#: The highest version of each API in Kafka 3.9. The specs also carry the versions 4.x added
#: (Produce and OffsetCommit by topic id, ...); the project's hand-built request bodies (its
#: client, the suite's helpers, the reference's handlers) are written for Kafka 3.9's, so a
#: negotiation stops here. Tests that take each version from the specs are not capped.
KAFKA_3_9_MAX = {
    0: 11, 1: 17, 2: 9, 3: 12, 4: 7, 5: 4, 6: 8, 7: 3, 8: 9, 9: 9, 10: 6, 11: 9, 12: 4, 13: 5,
    14: 5, 15: 5, 16: 5, 17: 1, 18: 4, 19: 7, 20: 6, 21: 2, 22: 5, 23: 4, 24: 5, 25: 4, 26: 4,
    27: 1, 28: 4, 29: 3, 30: 3, 31: 3, 32: 4, 33: 2, 34: 2, 35: 4, 36: 2, 37: 3, 38: 3, 39: 2,
    40: 2, 41: 3, 42: 2, 43: 2, 44: 1, 45: 0, 46: 0, 47: 0, 48: 1, 49: 1, 50: 0, 51: 0, 52: 1,
    53: 1, 54: 1, 55: 2, 56: 3, 57: 1, 58: 0, 59: 1, 60: 1, 61: 0, 62: 4, 63: 1, 64: 0, 65: 0,
    66: 1, 67: 0, 68: 0, 69: 0, 70: 0, 71: 0, 72: 0, 73: 0, 74: 0, 75: 0, 76: 0, 77: 0, 78: 0,
    79: 0, 80: 0, 81: 0, 82: 0, 83: 0, 84: 0, 85: 0, 86: 0, 87: 0,
}  # fmt: skip


def negotiable(api_key: int, ours: Versions) -> Versions:
    """Our versions of an API that a negotiation may pick: at most Kafka 3.9's highest for the
    APIs 3.9 had (see :data:`KAFKA_3_9_MAX`), all of them for the APIs 4.x added."""
    cap = KAFKA_3_9_MAX.get(api_key)
    return ours if cap is None else Versions(ours.lo, min(ours.hi, cap))
