"""A run's content key (issue 41): what its verdicts depend on, so that publication can tell
a run it may keep from one it must redo.

The key names the target as it was asked for (``kafka:3.9.1?store=zookeeper``), the run's
seed and options, the environment that draws the examples (Python, hypothesis), and sha-256
digests of the files the run loaded, in three tiers:

- ``shared``: what every test runs on, in four parts: ``kernel`` (the wire client, the codec,
  the specs but for the requirement and model files), ``kit`` (the suite's shared machinery, its
  own modules, the hypothesis strategies), ``runner`` (the plugin, ``run``, the results package,
  the requirements loader) and ``targets``. A change in any of them redoes the whole run.
- ``reference_impl``: the bundled cluster's files, for a reference target only.
- ``release_table``: for a reference target made to speak an Apache Kafka release
  (``reference?release=3.9.1``) only, that release's entry in the release table
  (``conformance/matrix/kafka_releases.json``): no other run reads the table (a ``kafka:V`` run
  talks to the release itself; the report's API support, which reads it, is rebuilt at every
  publication), and a change to one release's entry redoes only the runs speaking that release.
- ``features``: per feature the run exercised (a test id's first segment), its suite folder,
  the folders of the features it imports (``txn`` uses ``groups`` and ``log``), its
  requirement file and its models. A change here redoes only that feature's tests.

What reads runs and makes none (``conformance.matrix``, ``conformance.report``,
``conformance.diff``) is in no tier: a change in the report redoes no run.

The files are read from where the run imported them (a checkout or the installed wheel); a
directory's digest is over its files' relative paths and contents, caches left out.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

#: the key's layout; a key of another format is never equal to this one's
KEY_FORMAT = 1
#: the packages of ``conformance`` that read runs and make none: in no tier of the key
READERS = ("matrix", "report", "diff")
#: features whose suite folder is not the file stem turned into a Python name
RENAMED = {"protocol": "protocol_basics"}
#: the suite's folders that are no feature
KIT = "kit"
_IMPORT = re.compile(r"^\s*(?:from|import)\s+conformance\.suite\.([A-Za-z0-9_]+)", re.MULTILINE)
_SKIP = ("__pycache__", ".pyc", ".pyo")


def feature_folder(feature: str) -> str:
    """``kip-78`` -> ``kip78``, ``broker-registration`` -> ``broker_registration``,
    ``protocol`` -> ``protocol_basics``."""
    return RENAMED.get(feature) or re.sub(r"^kip-", "kip", feature).replace("-", "_")


@dataclass(frozen=True)
class Sources:
    """Where a run's files are: the ``conformance`` package, the specs (``conformance.specs``),
    the reference cluster's package (None where it is not installed)."""

    package: Path
    specs: Path
    reference: Path | None

    @classmethod
    def installed(cls) -> Sources:
        import conformance
        from conformance import specs

        found = find_spec("reference_impl")  # located, not imported (the layers' contract)
        reference = (
            Path(found.origin).parent if found is not None and found.origin is not None else None
        )
        return cls(Path(conformance.__file__).parent, specs.ROOT, reference)


def _files(root: Path) -> Iterable[Path]:
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        return
    for p in sorted(root.rglob("*")):
        if p.is_file() and not any(s in p.parts or p.name.endswith(s) for s in _SKIP):
            yield p


def digest(paths: Iterable[Path]) -> str:
    """sha-256 over the files under ``paths`` (files or folders): each file's path from its
    root's parent (``protocol/codec.py``, the same in a checkout and in the wheel) and content."""
    h = hashlib.sha256()
    seen: set[Path] = set()
    for root in paths:
        for p in _files(root):
            if p in seen:
                continue
            seen.add(p)
            h.update(p.relative_to(root.parent).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def features(src: Sources) -> list[str]:
    """The features, one per requirement file."""
    return sorted(p.stem for p in (src.specs / "requirements").glob("*.json"))


def _imports(folder: Path) -> set[str]:
    found: set[str] = set()
    for p in _files(folder):
        if p.suffix == ".py":
            found |= set(_IMPORT.findall(p.read_text(encoding="utf-8")))
    return found


def feature_uses(src: Sources) -> dict[str, set[str]]:
    """Per feature, the suite folders its tests load: its own and, transitively, those of the
    features it imports (the kit is shared, so not counted)."""
    suite = src.package / "suite"
    direct = {f: _imports(suite / feature_folder(f)) - {KIT} for f in features(src)}
    out = {}
    for f in direct:
        seen, todo = {feature_folder(f)}, list(direct[f])
        while todo:
            folder = todo.pop()
            if folder not in seen:
                seen.add(folder)
                todo += _imports(suite / folder) - {KIT}
        out[f] = seen
    return out


def _models(src: Sources, feature: str, all_features: list[str]) -> list[Path]:
    """A feature's models: ``<feature>-<what>.json``, where no longer feature name fits."""
    out = []
    for p in sorted((src.specs / "models").glob("*.json")):
        owners = [f for f in all_features if p.stem.startswith(f + "-")]
        if owners and max(owners, key=len) == feature:
            out.append(p)
    return out


def shared_parts(src: Sources) -> dict[str, str]:
    pkg, specs = src.package, src.specs
    suite = pkg / "suite"
    feature_dirs = {feature_folder(f) for f in features(src)}
    kit = [suite / KIT, pkg / "strategies"] + [
        p
        for p in sorted(suite.iterdir())
        if p.is_file() or p.name not in feature_dirs | {KIT, "__pycache__"}
    ]
    kernel = [pkg / "client", pkg / "protocol"] + [
        p for p in sorted(specs.iterdir()) if p.name not in ("requirements", "models")
    ]
    known = {"client", "protocol", "suite", "strategies", "results", "targets", *READERS}
    # a package added later counts as the runner's until it is placed in a tier
    runner = [pkg / "results"] + [
        p
        for p in sorted(pkg.iterdir())
        if p.is_file() or (p.name not in known and p != specs and p.name != "__pycache__")
    ]
    return {
        "kernel": digest(kernel),
        "kit": digest(kit),
        "runner": digest(runner),
        "targets": digest([pkg / "targets"]),
    }


def feature_digests(src: Sources) -> dict[str, str]:
    every = features(src)
    uses = feature_uses(src)
    suite = src.package / "suite"
    out = {}
    for f in every:
        h = hashlib.sha256()
        h.update(digest([suite / d for d in sorted(uses[f])]).encode())
        h.update(
            digest([src.specs / "requirements" / f"{f}.json", *_models(src, f, every)]).encode()
        )
        out[f] = h.hexdigest()
    return out


def is_reference(target: str) -> bool:
    return target == "reference" or target.startswith(("reference:", "reference?"))


#: the release table's place in the ``conformance`` package
RELEASE_TABLE = ("matrix", "kafka_releases.json")


def release_entry(target: str, src: Sources) -> str | None:
    """sha-256 of the release table's entry a ``reference?release=V`` target speaks (the line's
    newest patch in the table stands for ``V``, as ``broker_settings`` takes it; ``absent`` when
    the table has none); None for every other target, which never reads the table."""
    from conformance.protocol.releases import release_of

    if not is_reference(target) or "?" not in target:
        return None
    asked = parse_qs(target.split("?", 1)[1]).get("release")
    if not asked:
        return None
    try:
        table = json.loads(src.package.joinpath(*RELEASE_TABLE).read_text(encoding="utf-8"))
    except OSError:
        return "absent"
    entries = {r["release"]: r for r in table["releases"]}
    name = release_of(asked[-1], entries)
    if name is None:
        return "absent"
    text = json.dumps(entries[name], sort_keys=True).encode()
    return hashlib.sha256(text).hexdigest()


def environment() -> dict[str, str]:
    """What draws a run's examples besides its seed: Python's and hypothesis's versions."""
    try:
        hyp = version("hypothesis")
    except PackageNotFoundError:
        hyp = "absent"
    return {"python": f"{sys.version_info.major}.{sys.version_info.minor}", "hypothesis": hyp}


def content_key(
    target: str,
    *,
    seed: int | None,
    options: Mapping[str, Any],
    src: Sources | None = None,
    only: Iterable[str] | None = None,
) -> dict[str, Any]:
    """The key of a run of ``target`` at ``seed`` with ``options`` (examples, strict, clients,
    spec_dir, select), over the features ``only`` (every feature when None)."""
    src = src or Sources.installed()
    key: dict[str, Any] = {
        "format": KEY_FORMAT,
        "target": target,
        "seed": seed,
        "options": dict(sorted(options.items())),
        "environment": environment(),
        "shared": shared_parts(src),
        "reference_impl": (
            digest([src.reference]) if is_reference(target) and src.reference is not None else None
        ),
        "features": feature_digests(src),
    }
    entry = release_entry(target, src)
    if entry is not None:  # only then: every other key is as before
        key["release_table"] = entry
    return key if only is None else narrowed(key, only)


def run_options(
    *,
    examples: int | None,
    strict: bool,
    clients: list[str] | None,
    spec_dir: str | None,
    select: str | None,
) -> dict[str, Any]:
    """The options a key names: those that change what a run sends or how it judges (not
    ``--jobs``: a concurrent run gives a one-process run's verdicts)."""
    return {
        "examples": examples,
        "strict": strict,
        "clients": sorted(clients) if clients else ["python"],
        "spec_dir": spec_dir,
        "select": select,
    }


def differences(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> tuple[list[str], set]:
    """What makes ``old`` unusable for ``new`` as a whole (reasons, empty when none), and the
    features whose tests must be redone (those whose digest changed, or that ``old`` lacks)."""
    if not old:
        return ["no content key"], set(new["features"])
    whole = []
    if old.get("format") != new["format"]:
        whole.append("key format changed")
    for name in ("target", "seed"):
        if old.get(name) != new[name]:
            whole.append(f"{name} changed")
    for name, value in new["options"].items():
        if (old.get("options") or {}).get(name) != value:
            whole.append(f"option {name} changed")
    for name, value in new["environment"].items():
        if (old.get("environment") or {}).get(name) != value:
            whole.append(f"{name} changed")
    for part, value in new["shared"].items():
        if (old.get("shared") or {}).get(part) != value:
            whole.append(f"{part} changed")
    if old.get("reference_impl") != new["reference_impl"]:
        whole.append("reference_impl changed")
    if old.get("release_table") != new.get("release_table"):
        whole.append("release table entry changed")
    if whole:
        return whole, set(new["features"])
    before = old.get("features") or {}
    return [], {f for f, d in new["features"].items() if before.get(f) != d}


def narrowed(key: Mapping[str, Any] | None, only: Iterable[str]) -> dict[str, Any] | None:
    """``key`` over the features ``only`` (those whose tests recorded in the run)."""
    if key is None:
        return None
    wanted = set(only)
    return {**key, "features": {f: d for f, d in key["features"].items() if f in wanted}}
