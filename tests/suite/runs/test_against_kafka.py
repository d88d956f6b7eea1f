"""A subset of the suite against Apache Kafka 3.9.1 itself (KRaft, three brokers and a controller
of its own, jars from Maven Central): every verdict that is not PASS is explained by a row of
``reports/kafka-truth-table/``, no row of the judged requirements is stale, and the run stops
every Kafka process it started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.results import truth_table
from tests.support import early
from tests.support.runs import only_run

ROOT = Path(__file__).resolve().parents[3]
TABLE = ROOT / "reports" / "kafka-truth-table"
TARGET = "apache-kafka 3.9.1"


@pytest.fixture(scope="module")
def kafka_run():
    run = early.take(Path(__file__).name)
    proc, wall = run.result(timeout=900)
    print(f"suite subset against Apache Kafka 3.9.1: {wall:.1f} s wall (started early)")
    return proc, only_run(run.dir / "results")


def test_the_run_judged_apache_kafka(kafka_run) -> None:
    proc, run = kafka_run
    assert not run.problems, run.problems[:3]
    m = run.manifest
    assert (m["target_name"], m["target_version"]) == ("apache-kafka", "3.9.1"), proc.stderr[-2000:]
    assert m["target_kind"] == "kafka:3.9.1"
    # ApiVersions as Kafka 3.9 advertises it on a KRaft broker's client listener
    assert m["api_versions"]["18"] == [0, 4] and m["api_versions"]["3"][1] == 12
    features = {r["feature"] for r in run.records}
    assert {"kip-78", "broker-registration", "log", "protocol"} <= features
    assert sum(r["verdict"] == "PASS" for r in run.records) > 50


def test_apache_kafka_passes_every_transaction_requirement(kafka_run) -> None:
    """Kafka is the oracle of the TXN readings: every classic TXN check holds against it; the
    transactions v2 requirements (R15-R18, EndTxn v5) are UNSUPPORTED on 3.9.1, which advertises
    EndTxn 0-4 (reports/kafka-truth-table/txn.json)."""
    _, run = kafka_run
    txn = [r for r in run.records if r["feature"] == "txn"]
    assert {r["requirement_id"] for r in txn} == {f"TXN.R{i}" for i in range(1, 19)}
    v2 = {f"TXN.R{i}" for i in range(15, 19)}
    assert [r for r in txn if r["requirement_id"] not in v2 and r["verdict"] != "PASS"] == []
    for r in txn:
        if r["requirement_id"] in v2:
            assert r["verdict"] == "UNSUPPORTED" and "EndTxn" in r["message"], r


def test_every_verdict_that_is_not_pass_is_explained(kafka_run) -> None:
    _, run = kafka_run
    rows = truth_table.load(TABLE)
    missing = truth_table.unexplained(run.records, TARGET, rows)
    assert not missing, "\n".join(
        f"{r['requirement_id']} {r['verdict']} {r['test_id']}: {r['message'][:200]}"
        for r in missing[:10]
    )


def test_no_row_of_a_judged_test_is_stale(kafka_run) -> None:
    """Rows that name one test exactly (a subset cannot judge the wider patterns: the whole-suite
    runs of conformance/matrix/explain_kafka.py list those)."""
    _, run = kafka_run
    rows = [r for r in truth_table.load(TABLE) if not set("*?[") & set(r.tests)]
    stale = truth_table.unused(run.records, TARGET, rows)
    assert not stale, [(r.feature, r.requirement, r.tests, r.verdict) for r in stale]


def test_the_brokers_logs_and_settings_are_kept_with_the_run(kafka_run) -> None:
    _, run = kafka_run
    folder = Path(run.dir) / "kafka"
    names = sorted(p.name for p in folder.iterdir())
    assert "controller-1000.properties" in names and "broker-3.log" in names, names
    settings = (folder / "broker-1.properties").read_text()
    assert "group.initial.rebalance.delay.ms=0" in settings
    assert "listeners=PLAINTEXT://127.0.0.1:" in settings


def test_no_kafka_process_outlives_the_run(kafka_run) -> None:
    _, run = kafka_run
    marker = str(Path(run.dir) / "kafka")
    alive = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if marker in cmdline:
                alive.append(proc.name)
    assert not alive


def test_truth_table_rows_are_well_formed() -> None:
    rows = truth_table.load(TABLE)
    for row in rows:
        assert row.requirement.startswith(row.feature.upper() + ".R"), row
        if row.kind == "kafka-differs":
            evidence = ROOT / row.evidence.split()[0].rstrip(";,")
            assert evidence.exists(), row
    for path in TABLE.glob("*.json"):
        assert set(json.loads(path.read_text())) == {"rows"}, path
