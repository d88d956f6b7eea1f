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
