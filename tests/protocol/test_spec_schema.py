"""The message-spec schema and spec checker: every real spec passes, every broken one fails with
one line naming the file, the JSON path and the rule."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from conformance.protocol.errors import SpecError
from conformance.protocol.spec import SPEC_DIR
from conformance.protocol.spec_check import (
    SCHEMA_PATH,
    check_spec_dir,
    check_spec_file,
    validator,
)
from tests.conftest import KAFKA_SPECS, kafka_release_dirs

OUR_FILES = sorted(SPEC_DIR.glob("*.json"))
RELEASES = kafka_release_dirs()

#: A small valid spec; each broken case below changes one thing in a copy of it.
BASE: dict[str, Any] = {
    "apiKey": 99,
    "type": "request",
    "name": "Sample",
    "validVersions": "0-3",
    "flexibleVersions": "2+",
    "fields": [
        {"name": "Count", "type": "int32", "versions": "0+"},
        {"name": "Label", "type": "string", "versions": "1+", "nullableVersions": "1+",
         "default": "null"},
        {"name": "Topics", "type": "[]Topic", "versions": "0+", "fields": [
            {"name": "Name", "type": "string", "versions": "0+"},
            {"name": "Id", "type": "uuid", "versions": "3+"},
        ]},
        {"name": "Extra", "type": "Common", "versions": "0+"},
        {"name": "Hint", "type": "int8", "versions": "2+", "taggedVersions": "2+", "tag": 0},
    ],
    "commonStructs": [
        {"name": "Common", "versions": "0+", "fields": [
            {"name": "Limit", "type": "int64", "versions": "0+", "default": "-1"},
        ]},
    ],
}  # fmt: skip


def write_spec(folder: Path, obj: Any, name: str = "Sample") -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(obj, indent=2) if not isinstance(obj, str) else obj)
    return path


def spec_error(path: Path, strict: bool = True) -> SpecError:
    with pytest.raises(SpecError) as info:
        check_spec_file(path, strict=strict)
    return info.value


def test_schema_is_a_valid_draft_2020_12_schema() -> None:
    schema = json.loads(SCHEMA_PATH.read_text())
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    Draft202012Validator.check_schema(schema)
    assert validator().is_valid(BASE)


def test_base_sample_is_valid(tmp_path: Path) -> None:
    check_spec_file(write_spec(tmp_path, BASE))


def test_project_specs_folder_is_not_empty() -> None:
    assert len(OUR_FILES) >= 80, f"expected the project's message specs in {SPEC_DIR}"


@pytest.mark.parametrize("path", OUR_FILES, ids=lambda p: p.name)
def test_project_spec_validates(path: Path) -> None:
    check_spec_file(path)


def test_project_spec_dir_has_no_errors() -> None:
    assert [str(e) for e in check_spec_dir(SPEC_DIR)] == []


@pytest.mark.corpus
@pytest.mark.parametrize(
    "release", RELEASES or [KAFKA_SPECS], ids=lambda p: p.name if RELEASES else "absent"
)
def test_every_upstream_release_validates(release: Path) -> None:
    if not release.is_dir():
        pytest.skip(f"upstream spec corpus not found at {release}")
    files = sorted(release.glob("*.json"))
    assert files, f"no specs in {release}"
    # Lenient like Kafka's generator: one release ships a file with content after the object.
    assert [str(e) for e in check_spec_dir(release, strict=False)] == []


@pytest.mark.corpus
def test_strict_mode_reports_content_after_the_object() -> None:
    path = KAFKA_SPECS / "2.8.2" / "DescribeProducersRequest.json"
    if not path.is_file():
        pytest.skip(f"upstream file not found: {path}")
    err = spec_error(path, strict=True)
    assert (err.file, err.json_path) == (str(path), "$")
    assert "after the top-level object" in err.rule
    check_spec_file(path, strict=False)


def _drop(key: str, where: str = "$") -> Any:
    def change(o: dict) -> None:
        target = o if where == "$" else o["fields"][int(where)]
        del target[key]

    return change


def _set(index: int, **values: Any) -> Any:
    return lambda o: o["fields"][index].update(values)


BROKEN: list[tuple[str, Any, str, str]] = [
    ("missing name", _drop("name"), "$", "missing required key 'name'"),
    ("missing field name", _drop("name", "0"), "$.fields[0]", "missing required key 'name'"),
    ("missing apiKey", _drop("apiKey"), "$", "missing required key 'apiKey'"),
    ("missing field versions", _drop("versions", "0"), "$.fields[0]", "'versions'"),
    ("bad version range 1-", _set(0, versions="1-"), "$.fields[0].versions", "version range"),
    ("descending range", _set(0, versions="3-1"), "$.fields[0].versions", "upper bound below"),
    ("unknown primitive type", _set(0, type="int33"), "$.fields[0].type", "is not a field type"),
    ("unknown struct type", _set(0, type="Missing"), "$.fields[0].type", "unknown type"),
    ("default null on non-nullable", _set(0, default="null"), "$.fields[0].default", "null"),
    ("default out of range", _set(4, default="300"), "$.fields[4].default", "outside the range"),
    ("duplicate tag", _set(0, tag=0, taggedVersions="2+"), "$.fields[4].tag", "duplicate tag 0"),
    ("tag without taggedVersions", _set(0, tag=1), "$.fields[0].tag", "'taggedVersions'"),
    ("tagged but not flexible", _set(4, taggedVersions="1+", versions="1+"),
     "$.fields[4].taggedVersions", "flexible versions"),
    ("unknown field key", _set(0, foo=1), "$.fields[0].foo", "unknown key 'foo'"),
    ("unknown top key", lambda o: o.update(about="x"), "$.about", "unknown key 'about'"),
    ("unknown listener", lambda o: o.update(listeners=["broker", "zk"]), "$.listeners[1]",
     "listener name"),
    ("nested bad versions", lambda o: o["fields"][2]["fields"][1].update(versions=3),
     "$.fields[2].fields[1].versions", "version range"),
    ("common struct unknown key", lambda o: o["commonStructs"][0].update(tag=1),
     "$.commonStructs[0].tag", "unknown key 'tag'"),
    ("name differs from file", lambda o: o.update(name="Other"), "$.name", "file name"),
    ("nullable int", _set(0, nullableVersions="0+"), "$.fields[0].nullableVersions",
     "cannot be null"),
]  # fmt: skip


@pytest.mark.parametrize(("change", "path", "rule"), [b[1:] for b in BROKEN],
                         ids=[b[0] for b in BROKEN])  # fmt: skip
def test_broken_spec_gives_one_line(tmp_path: Path, change: Any, path: str, rule: str) -> None:
    obj = copy.deepcopy(BASE)
    change(obj)
    file = write_spec(tmp_path, obj)
    err = spec_error(file)
    assert err.file == str(file)
    assert err.json_path == path
    assert rule in err.rule
    line = str(err)
    assert "\n" not in line
    assert line == f"{file}: {path}: {err.rule}"
    assert [str(e) for e in check_spec_dir(tmp_path)] == [line]


@pytest.mark.parametrize(
    ("text", "rule"),
    [('{"name": ', "not JSON"), ("[1, 2]", "must be an object"), ("{} ]", "after the top")],
)
def test_unparsable_file_gives_one_line(tmp_path: Path, text: str, rule: str) -> None:
    file = write_spec(tmp_path, text)
    err = spec_error(file)
    assert (err.file, err.json_path) == (str(file), "$")
    assert rule in err.rule and "\n" not in str(err)


def test_spec_dir_reports_duplicate_api_and_missing_folder(tmp_path: Path) -> None:
    write_spec(tmp_path, BASE)
    write_spec(tmp_path, {**BASE, "name": "Twin"}, name="Twin")
    errors = check_spec_dir(tmp_path)
    assert [(Path(e.file).name, e.json_path) for e in errors] == [("Twin.json", "$.apiKey")]
    assert "already defined by Sample.json" in errors[0].rule
    missing = check_spec_dir(tmp_path / "nowhere")
    assert [e.rule for e in missing] == ["not a folder of message specs"]


VERSION_KEYS = [
    (("validVersions",), "$.validVersions"),
    (("fields", 0, "versions"), "$.fields[0].versions"),
    (("fields", 1, "nullableVersions"), "$.fields[1].nullableVersions"),
    (("fields", 2, "fields", 0, "versions"), "$.fields[2].fields[0].versions"),
    (("commonStructs", 0, "versions"), "$.commonStructs[0].versions"),
]
VALID_RANGE = re.compile(r"^(none|\d+|\d+-\d+|\d+\+)$")


@given(
    where=st.sampled_from(VERSION_KEYS),
    text=st.one_of(
        st.text(alphabet="0123456789-+ nonex", max_size=7),
        st.from_regex(r"\A(none|[0-9]{1,3}|[0-9]{1,3}-[0-9]{1,3}|[0-9]{1,3}\+)\Z"),
    ),
)
def test_mutated_version_strings(tmp_path_factory: pytest.TempPathFactory, where: Any,
                                 text: str) -> None:  # fmt: skip
    keys, path = where
    obj = copy.deepcopy(BASE)
    target = obj
    for k in keys[:-1]:
        target = target[k]
    target[keys[-1]] = text
    file = write_spec(tmp_path_factory.mktemp("v"), obj)
    m = VALID_RANGE.match(text)
    bounds = re.findall(r"\d+", text)
    if m and not (len(bounds) == 2 and int(bounds[1]) < int(bounds[0])):
        check_spec_file(file)
    else:
        err = spec_error(file)
        assert (err.file, err.json_path) == (str(file), path)
        assert "version range" in err.rule or "upper bound below" in err.rule
