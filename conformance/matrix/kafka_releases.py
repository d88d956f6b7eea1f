"""What each Apache Kafka release supports, per API: the "expected" side of the API matrix.

The facts (api key, name, lowest and highest request version, the listeners a release exposes an
API on, whether its highest version was still unstable) are derived from the upstream message
specs of every release (``../shared/kafka-specs/<release>``), and of the 4.x releases in
:data:`JAR_RELEASES` from the specs their kafka-clients jar carries (``kafka-conformance fetch
kafka:VERSION`` caches it), by running this module, and kept in ``kafka_releases.json`` beside it
so the matrix needs no upstream checkout::

    python -m conformance.matrix.kafka_releases [SPECS_ROOT] [KAFKA_CLIENTS_JAR ...]

(with no jar named, those of :data:`JAR_RELEASES` in the Kafka cache). An API a release keeps
with no version (4.0's LeaderAndIsr and the other ZooKeeper-era APIs) is not listed for it.

The best guess of which release a target behaves like compares its advertised ApiVersions with
each release's, API by API.
"""

from __future__ import annotations

import json
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from conformance.matrix.versions import version_key
from conformance.protocol.releases import DATA_FILE, ReleaseApi, load, release_of
from conformance.protocol.spec import read_spec_json
from conformance.protocol.versions import Versions

DEFAULT_SPECS_ROOT = Path(__file__).resolve().parents[3] / "shared" / "kafka-specs"
#: Releases whose facts come from their kafka-clients jar (the shared spec folders end at 3.9.0,
#: 3.8.0 and 3.7.1; the publication runs the lines' latest patches).
JAR_RELEASES = ("3.7.2", "3.8.1", "3.9.2", "4.0.2", "4.1.2", "4.2.2", "4.3.1", "4.4.0")


def _release_key(name: str) -> tuple[Any, ...]:
    # Dated trunk snapshots come after every numbered release.
    return (1, name) if name.startswith("trunk") else (0, version_key(name))


def jar_specs(jar: Path, into: Path) -> Path:
    """A kafka-clients jar's message specs written into ``into/<its release>``; that folder."""
    with zipfile.ZipFile(jar) as z:
        props = z.read("kafka/kafka-version.properties").decode("utf-8")
        version = dict(x.split("=", 1) for x in props.splitlines() if "=" in x)["version"]
        folder = into / version
        folder.mkdir(parents=True, exist_ok=True)
        for name in z.namelist():
            if name.startswith("common/message/") and name.endswith(".json"):
                (folder / Path(name).name).write_bytes(z.read(name))
    return folder


def derive(specs_root: Path, extra: Iterable[Path] = ()) -> dict[str, Any]:
    """The facts of every release folder under ``specs_root``, and of the ``extra`` folders
    (each named after its release)."""
    releases = []
    folders = [p for p in specs_root.iterdir() if p.is_dir() and any(p.glob("*Request.json"))]
    folders += list(extra)
    for folder in sorted(folders, key=lambda p: _release_key(p.name)):
        apis = []
        for path in sorted(folder.glob("*Request.json")):
            obj = read_spec_json(path, strict=False)
            if obj.get("type") != "request" or "apiKey" not in obj:
                continue
            valid = Versions.parse(obj["validVersions"])
            if valid.empty:
                continue
            apis.append(
                {
                    "api_key": obj["apiKey"],
                    "name": obj["name"].removesuffix("Request"),
                    "min": valid.lo,
                    "max": valid.hi,
                    "listeners": obj.get("listeners"),
                    "latest_unstable": bool(obj.get("latestVersionUnstable", False)),
                }
            )
        apis.sort(key=lambda a: a["api_key"])
        releases.append({"release": folder.name, "apis": apis})
    return {
        "about": "Request versions per API of each Apache Kafka release, derived from its message "
        "specs by conformance/matrix/kafka_releases.py; listeners is null where a release's "
        "specs do not name them.",
        "releases": releases,
    }


def similarity(
    advertised: dict[int, tuple[int, int]],
    release: dict[int, ReleaseApi],
    keys: set[int] | None = None,
) -> float:
    """How alike a target's advertised versions and a release's broker are, from 0 to 1.

    Over the APIs either side has (within ``keys`` when given): an API both have with the same
    highest version scores 1 (0.5 more when the lowest agrees too, then halved back to 1 at
    most: exact ranges beat equal maxima), one side only scores 0.
    """
    theirs = {k: a for k, a in release.items() if a.advertised}
    union = set(advertised) | set(theirs)
    if keys is not None:
        union &= keys
    if not union:
        return 0.0
    score = 0.0
    for key in union:
        if key in advertised and key in theirs:
            lo, hi = advertised[key]
            api = theirs[key]
            if hi == api.advertised_max:
                score += 1.0 if lo == api.min else 0.75
    return score / len(union)


def best_guess(
    advertised: dict[int, tuple[int, int]], keys: set[int] | None = None
) -> tuple[str, float] | None:
    """The release whose broker advertises most nearly what the target does, and the score.

    Ties go to the later release. None when the target advertised nothing.
    """
    if not advertised:
        return None
    best: tuple[str, float] | None = None
    for name, apis in load().items():
        score = similarity(advertised, apis, keys)
        if best is None or score >= best[1]:
            best = (name, score)
    return best


def dumps(data: dict[str, Any]) -> str:
    """The data file's text: one API per line, so a diff between regenerations reads well."""
    lines = ["{", f' "about": {json.dumps(data["about"])},', ' "releases": [']
    for i, release in enumerate(data["releases"]):
        lines.append(f'  {{"release": {json.dumps(release["release"])}, "apis": [')
        apis = [f"   {json.dumps(a)}" for a in release["apis"]]
        lines.append(",\n".join(apis))
        lines.append("  ]}" + ("," if i < len(data["releases"]) - 1 else ""))
    lines += [" ]", "}", ""]
    return "\n".join(lines)


def cached_jars() -> list[Path] | str:
    """The kafka-clients jars of :data:`JAR_RELEASES` in the Kafka cache, or what is missing."""
    from conformance.targets.maven import cached_broker

    jars, missing = [], []
    for version in JAR_RELEASES:
        libs = cached_broker(version)
        jar = libs / f"kafka-clients-{version}.jar" if libs else None
        if jar is None or not jar.is_file():
            missing.append(f"kafka-conformance fetch kafka:{version}")
        else:
            jars.append(jar)
    return jars if not missing else "not cached; run: " + "; ".join(missing)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    root = Path(args[0]) if args else DEFAULT_SPECS_ROOT
    if not root.is_dir():
        print(f"{root}: not a folder of Kafka release specs", file=sys.stderr)
        return 2
    jars = [Path(a) for a in args[1:]] or cached_jars()
    if isinstance(jars, str):
        print(f"kafka-clients jars of {', '.join(JAR_RELEASES)} {jars}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="kafka-releases-") as work:
        data = derive(root, [jar_specs(jar, Path(work)) for jar in jars])
    DATA_FILE.write_text(dumps(data), encoding="utf-8")
    print(f"wrote {DATA_FILE} ({len(data['releases'])} releases)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


#: the implementations that are Apache Kafka itself (the kafka:VERSION target), and the listener
#: whose APIs their brokers advertise to clients
KAFKA_IMPLEMENTATIONS = {"apache-kafka": "broker", "apache-kafka-zookeeper": "zkBroker"}


def table_check(
    implementation: str, version: str, advertised: dict[int, tuple[int, int]]
) -> dict[str, Any] | None:
    """Our table of a Kafka release against what a real broker of it advertised: the APIs on
    its client listener whose ranges differ (None when the target is not Apache Kafka or the
    table has no release of its line)."""
    listener = KAFKA_IMPLEMENTATIONS.get(implementation)
    releases = load()
    release = release_of(version, releases) if listener else None
    if release is None:
        return None
    table = {
        k: (a.min, a.advertised_max)
        for k, a in releases[release].items()
        if (a.listeners is None or listener in a.listeners)
        # an API whose every version is still unstable is not advertised by default
        and not (a.latest_unstable and a.max == a.min)
    }
    differences = [
        {
            "api_key": k,
            "name": releases[release][k].name if k in table else None,
            "advertised": list(advertised[k]) if k in advertised else None,
            "table": list(table[k]) if k in table else None,
        }
        for k in sorted(set(table) | set(advertised))
        if table.get(k) != advertised.get(k)
    ]
    return {"release": release, "listener": listener, "differences": differences}
