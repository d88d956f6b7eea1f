"""Checking message-spec files: first their shape against the JSON Schema of the dialect, then the
rules that need the whole file (the model load), then a few cross-field rules of Kafka's own
generator. Every failure is one :class:`SpecError` naming the file, the JSON path and the rule, so
a user pointing the suite at their own Kafka checkout learns exactly which line to fix.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError, best_match

from conformance import specs
from conformance.protocol.errors import SpecError
from conformance.protocol.spec import FieldSpec, MessageSpec, parse_spec, read_spec_json
from conformance.protocol.versions import Versions

SCHEMA_PATH = specs.SCHEMA / "message-spec.schema.json"

#: Why a conditionally required key is required (the schema's if/then rules).
_REQUIRED_BECAUSE = {
    "apiKey": "requests and responses need one",
    "versions": "a field that is not tagged needs one",
}


@cache
def validator() -> Draft202012Validator:
    """The compiled message-spec schema (loaded once per process)."""
    schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def _describe(error: ValidationError) -> tuple[str, str]:
    """The JSON path and a human phrasing of the rule one schema error breaks."""
    path, kind, expected = error.json_path, error.validator, error.validator_value
    what = error.schema.get("description") if isinstance(error.schema, dict) else None
    instance = error.instance
    if kind == "required":
        key = next(k for k in expected if k not in instance)
        because = _REQUIRED_BECAUSE.get(key) if "then" in error.schema_path else None
        return path, f"missing required key {key!r}" + (f" ({because})" if because else "")
    if kind == "additionalProperties":
        allowed = error.schema.get("properties", {})
        extra = sorted(k for k in instance if k not in allowed)
        return f"{path}.{extra[0]}", f"unknown key {extra[0]!r} (allowed: {', '.join(allowed)})"
    if kind == "dependentRequired":
        for key, needed in expected.items():
            missing = [k for k in needed if key in instance and k not in instance]
            if missing:
                return f"{path}.{key}", f"{key!r} needs {missing[0]!r} beside it"
    if kind == "uniqueItems":
        return path, "an item is listed twice"
    if what:
        return path, f"{_show(instance)} is not {what}"
    return path, error.message.splitlines()[0]


def schema_errors(obj: Any) -> Iterator[ValidationError]:
    """Every schema error of one parsed spec object (for callers that want them all)."""
    return validator().iter_errors(obj)


def _check_schema(obj: Any, file: str) -> None:
    error = best_match(schema_errors(obj))
    if error is not None:
        path, rule = _describe(error)
        raise SpecError(file, path, rule)


def inline_fields(fs: FieldSpec) -> list[FieldSpec]:
    """The fields a field declares inline (not those of a commonStruct it refers to)."""
    st = fs.struct
    if st is None or not st.fields or not st.fields[0].json_path.startswith(fs.json_path + "."):
        return []
    return st.fields


def _check_tagging(fields: list[FieldSpec], flexible: Versions, file: str) -> None:
    """Tagged fields exist only where they are tagged and only in flexible versions."""
    for fs in fields:
        flex = fs.flexible_versions if fs.flexible_versions is not None else flexible
        tagged = fs.tagged_versions
        if not tagged.empty:
            if tagged.intersect(fs.versions) != tagged:
                raise SpecError(
                    file,
                    f"{fs.json_path}.taggedVersions",
                    f"tagged versions {tagged} are not within the field's versions {fs.versions}",
                )
            if tagged.intersect(flex) != tagged:
                raise SpecError(
                    file,
                    f"{fs.json_path}.taggedVersions",
                    f"tagged versions {tagged} are not within the flexible versions {flex}",
                )
        _check_tagging(inline_fields(fs), flex, file)


def check_spec(obj: Any, file: str) -> MessageSpec:
    """Check one parsed spec object and return its model; raises :class:`SpecError`."""
    _check_schema(obj, file)
    spec = parse_spec(obj, file)
    _check_tagging(spec.fields, spec.flexible_versions, file)
    for struct in spec.common_structs.values():
        _check_tagging(struct.fields, spec.flexible_versions, file)
    return spec


def load_checked(path: Path | str, *, strict: bool = True) -> MessageSpec:
    """Read, check and model one file. ``strict=False`` tolerates content after the top-level
    object, as Kafka's generator does."""
    path = Path(path)
    file = str(path)
    try:
        obj = read_spec_json(path, strict=strict)
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(file, "$", f"cannot read the file: {e}") from None
    spec = check_spec(obj, file)
    if spec.name != path.stem:
        raise SpecError(file, "$.name", f"name {spec.name!r} differs from the file name")
    return spec


def check_spec_file(path: Path | str, strict: bool = True) -> None:
    """Raise :class:`SpecError` when the file breaks a rule of the dialect."""
    load_checked(path, strict=strict)


def check_spec_dir(spec_dir: Path | str, strict: bool = True) -> list[SpecError]:
    """Check every ``*.json`` file of a folder; also that no two files define the same API
    message. Returns the errors, one per bad file, in file-name order."""
    folder = Path(spec_dir)
    if not folder.is_dir():
        return [SpecError(str(folder), "$", "not a folder of message specs")]
    files = sorted(folder.glob("*.json"))
    if not files:
        return [SpecError(str(folder), "$", "no *.json message specs in this folder")]
    errors: list[SpecError] = []
    seen: dict[tuple[int, str], str] = {}
    for path in files:
        try:
            spec = load_checked(path, strict=strict)
        except SpecError as e:
            errors.append(e)
            continue
        if spec.api_key is not None and spec.type in ("request", "response"):
            other = seen.setdefault((spec.api_key, spec.type), path.name)
            if other != path.name:
                errors.append(
                    SpecError(
                        str(path),
                        "$.apiKey",
                        f"api key {spec.api_key} {spec.type} is already defined by {other}",
                    )
                )
    return errors
