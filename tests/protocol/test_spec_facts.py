"""The project's message specs state Kafka's facts, version by version, in the project's own words.

Our specs cover the union of Kafka 3.9.0's and 4.4.0's versions: 4.0 removed old versions that
3.x brokers still speak, and added versions and APIs. Each version of a message is compared with
the newest of those releases that defines it (its *authority*): 4.4.0's jar for what 4.4.0
defines, 3.9.0 for the versions only 3.9 has. Per version, every field present (recursively,
common structs included) must have the authority's name, type, nullability and tagging in that
version, tag and default; the message must be flexible where the authority is, deprecated where
it is. Version-independent annotations of a field (ignorable, mapKey, entityType, zeroCopy) are
those of the newest release that has the field. The valid versions are the union, the listeners
too, and ``latestVersionUnstable`` is the newest release's. The files must cover every API key of
those releases and must not carry upstream comments or ``about`` prose.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.protocol.spec import (
    SPEC_DIR,
    FieldSpec,
    MessageSpec,
    SpecSet,
    load_spec,
    parse_spec,
    read_spec_json,
    strip_comments,
)
from tests.conftest import KAFKA_SPECS
from tests.kafka_jars import LATEST, extract_specs, require_clients_jar

UPSTREAM = KAFKA_SPECS / "3.9.0"
OUR_FILES = sorted(SPEC_DIR.glob("*.json"))

#: The scope: every api key of Kafka 3.9's specs (0-87) and 4.4's (88-94), request and response.
SCOPE_KEYS = list(range(95))
HEADERS = ["RequestHeader", "ResponseHeader"]
#: (attribute, spec key) of the facts a field has in one version
VERSION_FACTS = (
    ("type", "type"),
    ("nullable", "nullableVersions"),
    ("tagged", "taggedVersions"),
    ("tag", "tag"),
    ("default", "default"),
    ("flexible", "flexibleVersions"),
)
#: (attribute, spec key) of a field's annotations, which hold for all its versions
ANNOTATIONS = (
    ("ignorable", "ignorable"),
    ("map_key", "mapKey"),
    ("entity_type", "entityType"),
    ("zero_copy", "zeroCopy"),
)


@dataclass(frozen=True)
class Release:
    """One Kafka release's message specs, looked up as the project's files are."""

    label: str
    by_file: dict[str, MessageSpec]

    @classmethod
    def load(cls, label: str, folder: Path) -> Release:
        specs: dict[str, MessageSpec] = {}
        for path in sorted(folder.glob("*.json")):
            obj = read_spec_json(path, strict=False)
            if obj.get("type") not in ("request", "response", "header"):
                continue
            obj.setdefault("fields", [])  # 4.x keeps removed APIs as "validVersions": "none"
            spec = parse_spec(obj, str(path))
            specs[spec.name] = spec
        return cls(label, specs)

    def counterpart(self, ours: MessageSpec) -> MessageSpec | None:
        """The release's spec of the same api key and kind (names change: 4.1 renamed
        ListClientMetricsResources to ListConfigResources), or of the same header."""
        for spec in self.by_file.values():
            if ours.api_key is None and spec.name == ours.name:
                return spec
            if ours.api_key is not None and (spec.api_key, spec.type) == (
                ours.api_key,
                ours.type,
            ):
                return spec
        return None


def _show(value: Any) -> str:
    return repr(str(value) if value.__class__.__name__ == "Versions" else value)


def _fields(spec: MessageSpec) -> Iterator[tuple[str, FieldSpec]]:
    """Every field with its name path ($.Topics.Partitions.Index), common structs resolved."""

    def walk(fields: list[FieldSpec], path: str, depth: int) -> Iterator[tuple[str, FieldSpec]]:
        for f in fields:
            yield f"{path}.{f.name}", f
            if f.struct is not None and depth < 16:
                yield from walk(f.struct.fields, f"{path}.{f.name}", depth + 1)

    return walk(spec.fields, "$", 0)


def version_facts(spec: MessageSpec, version: int) -> dict[str, dict[str, Any]]:
    """The fields present in ``version``, each with its facts in that version."""
    out: dict[str, dict[str, Any]] = {}
    present = {"$"}
    for path, f in _fields(spec):
        if path.rsplit(".", 1)[0] not in present or version not in f.versions:
            continue
        present.add(path)
        tagged = f.tagged_in(version)
        out[path] = {
            "type": f.type,
            "nullable": f.nullable_in(version),
            "tagged": tagged,
            "tag": f.tag if tagged else None,
            "default": f.default,
            "flexible": None if f.flexible_versions is None else version in f.flexible_versions,
        }
    return out


def annotations(spec: MessageSpec) -> dict[str, dict[str, Any]]:
    return {path: {a: getattr(f, a) for a, _ in ANNOTATIONS} for path, f in _fields(spec)}


def fact_differences(ours: MessageSpec, releases: list[tuple[str, MessageSpec]]) -> list[str]:
    """One line per fact that differs from its authority, naming the path, both values and
    the release. ``releases`` go oldest first; each may lack the message (None skipped)."""
    out: list[str] = []
    union = sorted({v for _, r in releases for v in r.valid_versions})
    newest_label, newest = next(
        ((label, r) for label, r in reversed(releases) if not r.valid_versions.empty),
        releases[-1],
    )
    span = f"{union[0]}-{union[-1]}" if union else "none"
    if list(ours.valid_versions) != union:
        out.append(f"$.validVersions: ours {_show(ours.valid_versions)} upstream union {span}")
    for attr in ("api_key", "type", "name", "latest_version_unstable"):
        a, b = getattr(ours, attr), getattr(newest, attr)
        if a != b:
            out.append(f"$.{attr}: ours {a!r} {newest_label} {b!r}")
    listeners = sorted({x for _, r in releases for x in r.listeners})
    if sorted(ours.listeners) != listeners:
        out.append(f"$.listeners: ours {sorted(ours.listeners)} upstream union {listeners}")
    for v in ours.valid_versions:
        label, auth = next(
            ((label, r) for label, r in reversed(releases) if v in r.valid_versions),
            (None, None),
        )
        if auth is None:
            continue
        for what, a, b in (
            ("flexible", ours.flexible(v), auth.flexible(v)),
            ("deprecated", v in ours.deprecated_versions, v in auth.deprecated_versions),
        ):
            if a != b:
                out.append(f"v{v} $ {what}: ours {a} {label} {b}")
        mine, theirs = version_facts(ours, v), version_facts(auth, v)
        if list(mine) != list(theirs):
            gone = [p for p in theirs if p not in mine]
            extra = [p for p in mine if p not in theirs]
            out.append(f"v{v} fields: missing {gone} extra {extra} order ours {list(mine)}")
            continue
        for path, facts in mine.items():
            for attr, key in VERSION_FACTS:
                a, b = facts[attr], theirs[path][attr]
                if a != b or type(a) is not type(b):
                    out.append(f"v{v} {path}.{key}: ours {_show(a)} {label} {_show(b)}")
    theirs_by_release = [(label, annotations(r)) for label, r in reversed(releases)]
    for path, facts in annotations(ours).items():
        owner = next(((label, t[path]) for label, t in theirs_by_release if path in t), None)
        if owner is None:
            continue
        for attr, key in ANNOTATIONS:
            if facts[attr] != owner[1][attr]:
                out.append(f"{path}.{key}: ours {facts[attr]!r} {owner[0]} {owner[1][attr]!r}")
    return out


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> list[Release]:
    """Kafka 3.9.0 (the shared spec corpus) and 4.4.0 (the cached jar), oldest first."""
    if not UPSTREAM.is_dir():
        pytest.skip(f"upstream Kafka 3.9.0 specs not found at {UPSTREAM}")
    jar = require_clients_jar(LATEST)
    latest = extract_specs(jar, tmp_path_factory.mktemp(f"kafka-{LATEST}"))
    return [Release.load("3.9.0", UPSTREAM), Release.load(LATEST, latest)]


@pytest.mark.corpus
@pytest.mark.parametrize("path", OUR_FILES, ids=lambda p: p.stem)
def test_facts_match_kafka(path: Path, releases: list[Release]) -> None:
    ours = load_spec(path)
    theirs = [(r.label, s) for r in releases if (s := r.counterpart(ours)) is not None]
    assert theirs, f"{path.name}: no Kafka release has this message"
    diffs = fact_differences(ours, theirs)
    assert not diffs, f"{path.name}: {len(diffs)} facts differ from Kafka:\n" + "\n".join(diffs)


def test_every_message_of_the_latest_release_is_ours(releases: list[Release]) -> None:
    """Nothing 4.4.0 defines is missing from our specs (renamed messages match by api key)."""
    ours = SpecSet.load(SPEC_DIR)
    missing = [
        name
        for name, spec in releases[-1].by_file.items()
        if not spec.valid_versions.empty
        and (
            ours.by_name.get(name)
            if spec.api_key is None
            else ours.by_key.get((spec.api_key, spec.type))
        )
        is None
    ]
    assert not missing, f"Kafka {LATEST} messages without a spec of ours: {missing}"


def test_comparison_reports_path_and_both_values(tmp_path: Path) -> None:
    """The fact comparison notices a changed fact in one version, naming path, values, release."""
    original = read_spec_json(SPEC_DIR / "MetadataResponse.json")
    changed = json.loads(json.dumps(original))
    partitions = changed["fields"][4]["fields"][4]
    partitions["fields"][3]["default"] = "-2"
    changed["fields"][1]["fields"][3]["nullableVersions"] = "2+"
    (tmp_path / "MetadataResponse.json").write_text(json.dumps(changed))
    ours = load_spec(SPEC_DIR / "MetadataResponse.json")
    diffs = fact_differences(load_spec(tmp_path / "MetadataResponse.json"), [("K", ours)])
    assert "v1 $.Brokers.Rack.nullableVersions: ours False K True" in diffs
    assert "v0 $.Topics.Partitions.LeaderEpoch.default: ours -2 K -1" not in diffs  # v7+ only
    assert "v7 $.Topics.Partitions.LeaderEpoch.default: ours -2 K -1" in diffs
    assert fact_differences(ours, [("K", ours)]) == []


def test_authority_is_the_newest_release_defining_a_version() -> None:
    """A version only the old release has is judged by it; the others by the new one."""
    base = read_spec_json(SPEC_DIR / "ApiVersionsRequest.json")
    old = parse_spec({**base, "validVersions": "0-4"}, "old")
    new = parse_spec({**base, "validVersions": "2-5", "fields": [*base["fields"][:1]]}, "new")
    ours = parse_spec({**base, "validVersions": "0-5"}, "ours")
    diffs = fact_differences(ours, [("old", old), ("new", new)])
    assert any(
        d.startswith("v3 fields: missing [] extra ['$.ClientSoftwareVersion'") for d in diffs
    )
    assert not any(d.startswith(("v0", "v1")) for d in diffs), diffs


def test_scope_has_a_request_and_a_response_per_api() -> None:
    specs = SpecSet.load(SPEC_DIR)
    missing = [
        f"{kind} {key}"
        for key in SCOPE_KEYS
        for kind in ("request", "response")
        if (key, kind) not in specs.by_key
    ]
    missing += [h for h in HEADERS if specs.by_name.get(h, None) is None]
    assert not missing, f"no spec in {SPEC_DIR} for: {', '.join(missing)}"
    assert {specs.by_name[h].type for h in HEADERS} == {"header"}


def _normalise(text: str) -> str:
    return re.sub(r"[\s.]+", " ", text).strip().lower()


def _abouts(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        found = {_normalise(obj["about"])} if isinstance(obj.get("about"), str) else set()
        return found.union(*(_abouts(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_abouts(v) for v in obj))
    return set()


@pytest.mark.parametrize("path", OUR_FILES, ids=lambda p: p.stem)
def test_no_comments(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert strip_comments(text) == text, f"{path.name} contains a // or /* */ comment"
    assert "Licensed to the Apache Software Foundation" not in text


@pytest.mark.corpus
@pytest.mark.parametrize("path", OUR_FILES, ids=lambda p: p.stem)
def test_no_upstream_about_prose(path: Path, releases: list[Release]) -> None:
    ours = load_spec(path)
    upstream = [s.path for r in releases if (s := r.counterpart(ours)) is not None]
    theirs = set().union(*(_abouts(read_spec_json(Path(p), strict=False)) for p in upstream))
    copied = _abouts(read_spec_json(path)) & theirs
    assert not copied, f"{path.name} repeats upstream about text: {sorted(copied)}"


def test_about_detection_sees_nested_prose() -> None:
    obj = {"fields": [{"about": "x"}, {"fields": [{"about": "The  Topic name."}]}]}
    assert _abouts(obj) == {"x", "the topic name"}
