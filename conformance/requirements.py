"""The requirements the suite checks, loaded from ``specs/requirements/*.json``.

Every test names requirement ids; results are recorded per (test, requirement) and carry the
requirement's level, so the files here decide what a failure means (FAIL for MUST, NONSTRICT for
SHOULD and MAY). Each file is validated against ``specs/schema/requirements.schema.json``, the ids
are checked for uniqueness, and the feature name must be the file's stem in upper case (one name
per feature: ``kip-78.json`` holds ``KIP-78.R1``...).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from conformance import specs
from conformance.protocol.errors import SpecError
from conformance.protocol.versions import Versions

KIPS_DIR = specs.REQUIREMENTS
KIP_SCHEMA = specs.SCHEMA / "requirements.schema.json"


@dataclass(frozen=True)
class ApiRef:
    api: str
    key: int
    versions: Versions


@dataclass(frozen=True)
class Requirement:
    id: str
    feature: str
    level: str
    statement: str
    basis: str
    listener: str
    apis: tuple[ApiRef, ...] = ()
    proposal: bool = False
    status: str = "adopted"
    reading: str | None = None
    #: the stem of the feature file (kip-78, protocol ...), the ``feature`` of result records
    file: str = ""

    @property
    def api_names(self) -> tuple[str, ...]:
        return tuple(a.api for a in self.apis)


@dataclass(frozen=True)
class Feature:
    name: str
    title: str
    status: str
    source: str
    path: Path
    raw: dict = field(repr=False, compare=False)


class Requirements:
    """All requirements of a folder of feature files, by id."""

    def __init__(self, features: list[Feature], reqs: list[Requirement]) -> None:
        self.features = {f.name: f for f in features}
        self.by_id = {r.id: r for r in reqs}

    def __getitem__(self, req_id: str) -> Requirement:
        try:
            return self.by_id[req_id]
        except KeyError:
            raise KeyError(f"unknown requirement id {req_id!r}") from None

    def __contains__(self, req_id: object) -> bool:
        return req_id in self.by_id

    def __iter__(self):
        return iter(self.by_id.values())

    def __len__(self) -> int:
        return len(self.by_id)


@cache
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(KIP_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def load_feature(path: Path) -> tuple[Feature, list[Requirement]]:
    """One feature file, validated; raises SpecError naming the file and the JSON path."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SpecError(str(path), "$", f"not JSON: {e.msg} at line {e.lineno}") from None
    errors = sorted(_validator().iter_errors(obj), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in e.path)
        raise SpecError(str(path), where, e.message)
    if obj["feature"] != path.stem.upper():
        raise SpecError(
            str(path), "$.feature", f"{obj['feature']} is not the file's stem in upper case"
        )
    feature = Feature(obj["feature"], obj["title"], obj["status"], obj["source"], path, obj)
    reqs: list[Requirement] = []
    for i, r in enumerate(obj["requirements"]):
        prefix = r["id"].rsplit(".", 1)[0]
        if prefix != feature.name:
            raise SpecError(
                str(path),
                f"$.requirements[{i}].id",
                f"{r['id']} does not start with {feature.name}.",
            )
        apis = tuple(ApiRef(a["api"], a["key"], Versions.parse(a["versions"])) for a in r["apis"])
        reqs.append(
            Requirement(
                id=r["id"],
                feature=feature.name,
                level=r["level"],
                statement=r["statement"],
                basis=r["basis"],
                listener=r["listener"],
                apis=apis,
                proposal=r.get("proposal", feature.status == "proposal"),
                status=feature.status,
                reading=r.get("reading"),
                file=path.stem,
            )
        )
    return feature, reqs


def load_requirements(kips_dir: Path | str | None = None) -> Requirements:
    """Every feature file of ``kips_dir`` (the project's ``specs/requirements`` by default)."""
    folder = Path(kips_dir) if kips_dir is not None else KIPS_DIR
    features: list[Feature] = []
    reqs: list[Requirement] = []
    seen: dict[str, Path] = {}
    for path in sorted(folder.glob("*.json")):
        feature, items = load_feature(path)
        features.append(feature)
        for r in items:
            if r.id in seen:
                raise SpecError(
                    str(path), "$.requirements", f"{r.id} already defined in {seen[r.id]}"
                )
            seen[r.id] = path
            reqs.append(r)
    return Requirements(features, reqs)


#: the fields of a requirement the report shows beside its id, as written in its file
TEXT_FIELDS = ("level", "statement", "basis", "listener", "apis", "proposal", "reading", "note")


def requirement_texts(folder: Path | str | None = None) -> dict[str, dict[str, Any]]:
    """requirement id -> its ``TEXT_FIELDS`` and its feature's (``feature``: the file stem,
    ``feature_title``, ``status``, ``source``), from the same validated files as everything
    else. A missing folder has no texts; a malformed file raises SpecError."""
    out: dict[str, dict[str, Any]] = {}
    for feature in load_requirements(folder).features.values():
        for req in feature.raw["requirements"]:
            entry = {k: req[k] for k in TEXT_FIELDS if k in req}
            entry.update(
                feature=feature.path.stem,
                feature_title=feature.title,
                status=feature.status,
                source=feature.source,
            )
            out[req["id"]] = entry
    return out


@cache
def requirements() -> Requirements:
    """The project's requirements, loaded once per process."""
    return load_requirements()
