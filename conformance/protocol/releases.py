"""What each Apache Kafka release's broker advertises to clients, per API: the release table
(``conformance/matrix/kafka_releases.json``, derived from the releases' message specs and jars by
``conformance.matrix.kafka_releases``), read here so that every layer can use it: the matrix
compares targets with it, the reference target makes the reference speak a release
(``reference?release=V``, :func:`broker_settings`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

DATA_FILE = Path(__file__).resolve().parents[1] / "matrix" / "kafka_releases.json"
#: Listeners on which a broker answers clients (KRaft broker, ZooKeeper-mode broker).
BROKER_LISTENERS = frozenset({"broker", "zkBroker"})
#: the first release whose new clusters finalize transaction.version 2 (KIP-890 part 2)
TV2_RELEASE = (4, 0)


@dataclass(frozen=True)
class ReleaseApi:
    api_key: int
    name: str
    min: int
    max: int
    listeners: tuple[str, ...] | None
    latest_unstable: bool

    @property
    def broker_facing(self) -> bool:
        """Whether a broker advertises it to clients (releases without listeners: all APIs)."""
        return self.listeners is None or bool(BROKER_LISTENERS & set(self.listeners))

    @property
    def advertised(self) -> bool:
        """Whether a broker advertises it to clients by default: broker-facing, with a stable
        version (an API whose every version is still unstable needs unstable.api.versions.enable,
        as KIP-932's share-group APIs in 3.9)."""
        return self.broker_facing and not (self.latest_unstable and self.max == self.min)

    @property
    def advertised_max(self) -> int:
        """The highest version a broker of this release advertises by default."""
        return self.max - 1 if self.latest_unstable and self.max > self.min else self.max


@cache
def load(path: Path = DATA_FILE) -> dict[str, dict[int, ReleaseApi]]:
    """release -> api key -> facts, releases in release order."""
    data = json.loads(path.read_text(encoding="utf-8"))
    out: dict[str, dict[int, ReleaseApi]] = {}
    for release in data["releases"]:
        out[release["release"]] = {
            a["api_key"]: ReleaseApi(
                a["api_key"],
                a["name"],
                a["min"],
                a["max"],
                tuple(a["listeners"]) if a["listeners"] is not None else None,
                a["latest_unstable"],
            )
            for a in release["apis"]
        }
    return out


def _line(name: str) -> tuple[int, ...] | None:
    """(major, minor, ...) of a numbered release, None for another name (trunk snapshots)."""
    parts = name.split(".")
    return tuple(int(p) for p in parts) if all(p.isdigit() for p in parts) else None


def release_of(version: str, releases: dict[str, dict[int, ReleaseApi]]) -> str | None:
    """The release of the table that stands for a Kafka ``version``: the same one, else the
    newest of the same major.minor line (patch releases keep their line's API versions)."""
    if version in releases:
        return version
    line = version.split(".")[:2]
    same = [r for r in releases if r.split(".")[:2] == line and _line(r) is not None]
    return max(same, key=lambda r: _line(r) or ()) if same else None  # every one numbered


def broker_settings(name: str) -> dict[str, Any]:
    """What a reference broker needs to behave as release ``name`` on its client listeners
    (``settings`` sections of its node config, which the reference reads without importing the
    table): ``api_ranges``, each API the release's broker advertises to clients by default and
    its range (KIP-896's removals in 4.0 included, the latest unstable version left out), and the
    finalized ``features`` (transaction.version 2 from 4.0 on, unfinalized before). ValueError
    for a release the table has no line of."""
    releases = load()
    release = release_of(name, releases)
    if release is None:
        known = ", ".join(releases)
        raise ValueError(f"no Apache Kafka release {name!r} in the release table: {known}")
    apis = releases[release]
    ranges = {
        str(key): [api.min, api.advertised_max] for key, api in apis.items() if api.advertised
    }
    tv = 2 if (_line(release) or (0, 0))[:2] >= TV2_RELEASE else 0
    return {"api_ranges": ranges, "features": {"transaction.version": tv}, "release": release}
