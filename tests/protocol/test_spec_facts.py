"""The project's message specs state Kafka 3.9's facts, fact by fact, in the project's own words.

Per file: the message's api key, type, name, version ranges and listeners, and for every field
(recursively, common structs included) its name, type, version ranges, tag, parsed default and
flags must equal upstream 3.9.0's. The files must cover ARCHITECTURE.md's scope and must not carry
upstream comments or ``about`` prose.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from conformance.protocol.spec import (
    SPEC_DIR,
    FieldSpec,
    MessageSpec,
    SpecSet,
    load_spec,
    read_spec_json,
    strip_comments,
)
from conformance.protocol.spec_check import inline_fields
from tests.conftest import KAFKA_SPECS

UPSTREAM = KAFKA_SPECS / "3.9.0"
OUR_FILES = sorted(SPEC_DIR.glob("*.json"))

#: The scope: every api key of Kafka 3.9's specs (0-87), request and response.
SCOPE_KEYS = list(range(88))
HEADERS = ["RequestHeader", "ResponseHeader"]

#: Model attribute -> the spec key it comes from (named in failure messages).
MESSAGE_FACTS = {
    "api_key": "apiKey",
    "type": "type",
    "name": "name",
    "valid_versions": "validVersions",
    "flexible_versions": "flexibleVersions",
    "deprecated_versions": "deprecatedVersions",
    "latest_version_unstable": "latestVersionUnstable",
}
FIELD_FACTS = {
    "name": "name",
    "type": "type",
    "versions": "versions",
    "nullable_versions": "nullableVersions",
    "tagged_versions": "taggedVersions",
    "tag": "tag",
    "default": "default",
    "ignorable": "ignorable",
    "map_key": "mapKey",
    "entity_type": "entityType",
    "zero_copy": "zeroCopy",
    "flexible_versions": "flexibleVersions",
}


def upstream_dir() -> Path:
    if not UPSTREAM.is_dir():
        pytest.skip(f"upstream Kafka 3.9.0 specs not found at {UPSTREAM}")
    return UPSTREAM


def _show(value: Any) -> str:
    return repr(str(value) if value.__class__.__name__ == "Versions" else value)


def _compare_fields(
    ours: list[FieldSpec], theirs: list[FieldSpec], path: str, out: list[str]
) -> None:
    names = [f.name for f in ours], [f.name for f in theirs]
    if names[0] != names[1]:
        out.append(f"{path}.fields: names ours {names[0]} upstream {names[1]}")
        return
    for mine, up in zip(ours, theirs, strict=True):
        for attr, key in FIELD_FACTS.items():
            a, b = getattr(mine, attr), getattr(up, attr)
            if a != b or type(a) is not type(b):
                out.append(f"{mine.json_path}.{key}: ours {_show(a)} upstream {_show(b)}")
        _compare_fields(inline_fields(mine), inline_fields(up), mine.json_path, out)


def fact_differences(ours: MessageSpec, theirs: MessageSpec) -> list[str]:
    """One line per fact that differs: the JSON path, our value and upstream's."""
    out: list[str] = []
    for attr, key in MESSAGE_FACTS.items():
        a, b = getattr(ours, attr), getattr(theirs, attr)
        if a != b:
            out.append(f"$.{key}: ours {_show(a)} upstream {_show(b)}")
    if sorted(ours.listeners) != sorted(theirs.listeners):
        out.append(f"$.listeners: ours {list(ours.listeners)} upstream {list(theirs.listeners)}")
    _compare_fields(ours.fields, theirs.fields, "$", out)
    common = list(ours.common_structs), list(theirs.common_structs)
    if common[0] != common[1]:
        out.append(f"$.commonStructs: names ours {common[0]} upstream {common[1]}")
        return out
    for i, name in enumerate(common[0]):
        mine, up = ours.common_structs[name], theirs.common_structs[name]
        path = f"$.commonStructs[{i}]"
        if mine.versions != up.versions:
            out.append(
                f"{path}.versions: ours {_show(mine.versions)} upstream {_show(up.versions)}"
            )
        _compare_fields(mine.fields, up.fields, path, out)
    return out


@pytest.mark.corpus
@pytest.mark.parametrize("path", OUR_FILES, ids=lambda p: p.stem)
def test_facts_match_kafka_3_9(path: Path) -> None:
    upstream = upstream_dir() / path.name
    assert upstream.is_file(), f"{path.name}: Kafka 3.9.0 has no file of that name"
    diffs = fact_differences(load_spec(path), load_spec(upstream, strict=False))
    assert not diffs, f"{path.name}: {len(diffs)} facts differ from Kafka 3.9.0:\n" + "\n".join(
        diffs
    )


def test_comparison_reports_path_and_both_values(tmp_path: Path) -> None:
    """The fact comparison itself notices a changed fact, naming the path and both values."""
    original = read_spec_json(SPEC_DIR / "MetadataResponse.json")
    changed = json.loads(json.dumps(original))
    partitions = changed["fields"][4]["fields"][4]
    partitions["fields"][3]["default"] = "-2"
    changed["fields"][1]["fields"][3]["nullableVersions"] = "2+"
    (tmp_path / "MetadataResponse.json").write_text(json.dumps(changed))
    diffs = fact_differences(
        load_spec(tmp_path / "MetadataResponse.json"), load_spec(SPEC_DIR / "MetadataResponse.json")
    )
    assert diffs == [
        "$.fields[1].fields[3].nullableVersions: ours '2+' upstream '1+'",
        "$.fields[4].fields[4].fields[3].default: ours -2 upstream -1",
    ]


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
def test_no_upstream_about_prose(path: Path) -> None:
    upstream = upstream_dir() / path.name
    if not upstream.is_file():
        pytest.skip(f"Kafka 3.9.0 has no {path.name} to compare with")
    copied = _abouts(read_spec_json(path)) & _abouts(read_spec_json(upstream, strict=False))
    assert not copied, f"{path.name} repeats upstream about text: {sorted(copied)}"


def test_about_detection_sees_nested_prose() -> None:
    obj = {"fields": [{"about": "x"}, {"fields": [{"about": "The  Topic name."}]}]}
    assert _abouts(obj) == {"x", "the topic name"}
