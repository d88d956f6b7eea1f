"""Ordering implementation versions, so "an earlier version" means what its maker means.

PEP 440 / semantic-looking versions (``0.6.0``, ``3.9.0-rc1``, ``v1.2``) sort as versions, with
pre-releases before their release; anything else (a git sha, a build name) sorts after them in
the order of their first runs, since such names carry no order of their own.
"""

from __future__ import annotations

import re
from typing import Any

from packaging.version import InvalidVersion, Version

_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[Any, ...]:
    """Text split into digit runs (as numbers) and the rest, for natural ordering; each part is
    tagged so a number never meets a string in a comparison."""
    return tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in _DIGITS.split(text) if p)


def version_key(version: str) -> tuple[Any, ...]:
    """A sort key: parseable versions first, in version order; then the rest, naturally."""
    text = version.strip()
    try:
        return (0, Version(text.removeprefix("v").removeprefix("V")), ())
    except InvalidVersion:
        return (1, Version("0"), natural_key(text))


def order_versions(
    versions: list[tuple[str, str]], first_seen: dict[tuple[str, str], str]
) -> dict[tuple[str, str], int]:
    """Rank of each (implementation, version) within its implementation, 0 for the earliest.

    ``first_seen`` maps each pair to the start time of its earliest run (ISO text), the
    tie-breaker for versions that compare equal.
    """
    ranks: dict[tuple[str, str], int] = {}
    for impl in sorted({i for i, _ in versions}):

        def key(pair: tuple[str, str]) -> tuple[Any, ...]:
            vk = version_key(pair[1])
            when = first_seen.get(pair, "")
            return (vk[0], vk[1], when, vk[2]) if vk[0] == 0 else (vk[0], when, vk[2])

        mine = sorted((p for p in versions if p[0] == impl), key=key)
        for rank, pair in enumerate(mine):
            ranks[pair] = rank
    return ranks
