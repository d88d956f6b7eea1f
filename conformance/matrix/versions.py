"""Ordering implementation versions, so "an earlier version" means what its maker means.

PEP 440 / semantic-looking versions (``0.6.0``, ``3.9.0-rc1``, ``v1.2``) sort as versions, with
pre-releases before their release; anything else (a git sha, a date) sorts after them, naturally
(digit runs as numbers), and among equals the earlier first run decides.
"""

from __future__ import annotations

import re
from typing import Any

from packaging.version import InvalidVersion, Version

_DIGITS = re.compile(r"(\d+)")


def _natural(text: str) -> tuple[Any, ...]:
    return tuple(int(p) if p.isdigit() else p for p in _DIGITS.split(text) if p)


def version_key(version: str) -> tuple[Any, ...]:
    """A sort key: parseable versions first, in version order; then the rest, naturally."""
    text = version.strip()
    try:
        return (0, Version(text.removeprefix("v").removeprefix("V")), ())
    except InvalidVersion:
        return (1, Version("0"), _natural(text))


def order_versions(
    versions: list[tuple[str, str]], first_seen: dict[tuple[str, str], str]
) -> dict[tuple[str, str], int]:
    """Rank of each (implementation, version) within its implementation, 0 for the earliest.

    ``first_seen`` maps each pair to the start time of its earliest run (ISO text), the
    tie-breaker for versions that compare equal.
    """
    ranks: dict[tuple[str, str], int] = {}
    for impl in sorted({i for i, _ in versions}):
        mine = sorted(
            (p for p in versions if p[0] == impl),
            key=lambda p: (version_key(p[1]), first_seen.get(p, ""), p[1]),
        )
        for rank, pair in enumerate(mine):
            ranks[pair] = rank
    return ranks
