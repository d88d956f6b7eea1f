"""The generated ApiKey and ErrorCode tables are current, and say what the data says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance import specs
from conformance.protocol import ApiKey, ErrorCode, KafkaError, SpecSet, gen_tables


@pytest.mark.parametrize("path", sorted(gen_tables.generated()), ids=lambda p: p.name)
def test_generated_files_are_current(path: Path) -> None:
    """Regenerated in memory, each file is byte for byte what is checked in."""
    expected = gen_tables.generated()[path]
    actual = path.read_text(encoding="utf-8") if path.exists() else None
    assert actual == expected, (
        f"{path} is stale: run `python -m conformance.protocol.gen_tables` and commit the result"
    )


def test_api_keys_are_the_request_specs() -> None:
    apis = SpecSet.load().apis()
    assert {int(k): k.api_name for k in ApiKey} == apis
    assert ApiKey.DESCRIBE_CLUSTER == 60 and ApiKey(18).name == "API_VERSIONS"


def test_error_codes_are_the_data() -> None:
    rows = json.loads(specs.ERROR_CODES.read_text())["codes"]
    assert [(c.value, c.name, c.retriable, c.message) for c in ErrorCode] == [
        (r["code"], r["name"], r["retriable"], r["message"]) for r in rows
    ]
    assert ErrorCode.NOT_LEADER_OR_FOLLOWER.retriable and not ErrorCode.INVALID_REQUEST.retriable


@pytest.mark.parametrize("key", ["code", "name"])
def test_a_repeated_code_or_name_is_refused(tmp_path: Path, key: str) -> None:
    rows = json.loads(specs.ERROR_CODES.read_text())
    twin = dict(rows["codes"][5])
    twin["name" if key == "code" else "code"] = "TWIN" if key == "code" else 30000
    rows["codes"].append(twin)
    bad = tmp_path / "error_codes.json"
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match=f"{key} repeated"):
        gen_tables.error_codes_source(bad)


def test_constant_names() -> None:
    assert gen_tables.constant_name("DescribeCluster") == "DESCRIBE_CLUSTER"
    assert gen_tables.constant_name("ApiVersions") == "API_VERSIONS"
    assert gen_tables.constant_name("LeaderAndIsr") == "LEADER_AND_ISR"


def test_kafka_error_names_any_code() -> None:
    e = KafkaError(ErrorCode.NOT_COORDINATOR, "moved", context="OffsetCommit")
    assert (e.code, e.retriable, str(e)) == (16, True, "OffsetCommit: NOT_COORDINATOR (16): moved")
    odd = KafkaError(30000)
    assert (odd.code, odd.name, odd.retriable) == (30000, "UNKNOWN_ERROR_CODE_30000", False)


def _redefinitions(path: Path) -> list[str]:
    """Module-level ``NAME = n`` (or ``A, B = n, m``) where NAME is an ApiKey or ErrorCode
    member of the same value: a second table of a fact the generated enums hold."""
    import ast

    known = {k.name: int(k) for k in ApiKey} | {e.name: int(e) for e in ErrorCode}
    found = []
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.Assign | ast.AnnAssign):
            continue
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            names = target.elts if isinstance(target, ast.Tuple) else [target]
            values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
            for name, value in zip(names, values, strict=False):
                if (
                    isinstance(name, ast.Name)
                    and isinstance(value, ast.Constant)
                    and name.id in known
                    and known[name.id] == value.value
                    and not isinstance(value.value, bool)
                ):
                    found.append(f"{path}:{node.lineno}: {name.id} = {value.value}")
    return found


def test_no_module_keeps_its_own_api_key_or_error_code_constants() -> None:
    """One table per fact: use ``ApiKey.METADATA`` / ``ErrorCode.NOT_CONTROLLER``."""
    root = Path(__file__).resolve().parents[2]
    files = [
        p
        for top in ("conformance", "reference_impl", "tests", "benchmarks")
        for p in sorted((root / top).rglob("*.py"))
        if "_generated" not in p.parts
    ]
    assert len(files) > 100
    found = [line for p in files for line in _redefinitions(p)]
    assert found == [], "\n".join(found)


def test_enums_are_the_data() -> None:
    """Each generated enum has the members of ``enums.json``, in order, with their ``since``."""
    from conformance.protocol._generated import enums

    rows = json.loads(specs.ENUMS.read_text())["enums"]
    for row in rows:
        enum = getattr(enums, row["name"])
        assert [(m.name, int(m), m.since) for m in enum] == [
            (r["name"], r["value"], r.get("since")) for r in row["members"]
        ]
    assert {r["name"] for r in rows} == {
        "ConfigResourceType",
        "ConfigOperation",
        "AclOperation",
        "AclResourceType",
        "AclPatternType",
        "AclPermissionType",
    }


def test_a_repeated_enum_value_is_refused(tmp_path: Path) -> None:
    rows = json.loads(specs.ENUMS.read_text())
    rows["enums"][0]["members"].append({"name": "TWIN", "value": 2})
    bad = tmp_path / "enums.json"
    bad.write_text(json.dumps(rows))
    with pytest.raises(ValueError, match="value repeated"):
        gen_tables.enums_source(bad)


def test_authorized_operations_unset_is_the_specs_default(tmp_path: Path) -> None:
    """Every ``*AuthorizedOperations`` field defaults to Integer.MIN_VALUE; a spec that says
    otherwise stops the generator instead of giving two values."""
    assert gen_tables.authorized_operations_unset() == -(2**31)
    for path in specs.MESSAGES.glob("*.json"):
        (tmp_path / path.name).write_text(path.read_text())
    spec = tmp_path / "DescribeClusterResponse.json"
    spec.write_text(spec.read_text().replace('"-2147483648"', '"0"'))
    with pytest.raises(ValueError, match="disagree"):
        gen_tables.authorized_operations_unset(tmp_path)
