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
