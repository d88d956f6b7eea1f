"""Kafka's Java KafkaShareConsumer 4.4.0 (KIP-932) against the reference: two members
(``tests/java/ShareHarness.java``, explicit acknowledgement) share a 3-partition topic of 60
records: a value ending in 0 is RELEASEd on its first delivery, one ending in 5 REJECTed, every
other delivery ACCEPTed. Every record not rejected is accepted exactly once, the released ones
on their second delivery, a rejected one never comes back. Kafka 4.4.0 gives the same counts
(issue 39). Marked ``java``; two JVMs: about 10 s.

The same members across a kill -9 of partition 0's leader and the group's coordinator
(``tests/share_loop.py``; ``python -m tests.share_loop --target kafka:4.4.0`` for Kafka's
counts): about a minute each (a lost acknowledgement's record waits out a 15 s acquisition
lock), so publication runs them; the loop FAILs on brokers that keep their share state in memory
only (``forget_share_state``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.protocol import ApiKey
from reference_impl.launcher import Cluster
from tests.reference.groups.test_clients import ask, wait_until
from tests.reference.groups.test_consumer_protocol_client import cluster  # noqa: F401
from tests.share_loop import SharePlan, run_loop
from tests.support.java_members import harness, numbered_topic, start_jvm, stop_jvms

VERSION = "4.4.0"
SOURCE = Path(__file__).resolve().parents[2] / "java" / "ShareHarness.java"
TOPIC, GROUP, RECORDS = "share-java", "share-java-group", 60


@pytest.mark.java
def test_java_share_consumers_accept_release_and_reject(
    cluster: Cluster,  # noqa: F811
    tmp_path: Path,
) -> None:
    classes, libs = harness(VERSION, SOURCE)
    bootstrap = cluster.bootstrap_servers
    config = {"Name": "share.auto.offset.reset", "ConfigOperation": 0, "Value": "earliest"}
    body = {
        "Resources": [{"ResourceType": 32, "ResourceName": GROUP, "Configs": [config]}],
        "ValidateOnly": False,
    }
    answer = ask(cluster, "broker-1", ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert answer is not None and answer["Responses"][0]["ErrorCode"] == 0
    numbered_topic(bootstrap, TOPIC, RECORDS)

    stop = tmp_path / "stop"
    procs = []
    for name in ("a", "b"):
        args = ["ShareHarness", bootstrap, TOPIC, GROUP, name, str(stop), "60"]
        out, log = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.log"
        procs.append(start_jvm(classes, libs, args, out, log))

    def deliveries() -> list[dict]:
        out = []
        for name in ("a", "b"):
            path = tmp_path / f"{name}.jsonl"
            text = path.read_text() if path.exists() else ""
            out += [json.loads(x) for x in text.splitlines() if x.startswith('{"partition')]
        return out

    wanted = {str(i) for i in range(RECORDS) if not str(i).endswith("5")}
    try:
        wait_until(
            "every record not rejected is accepted",
            lambda: {d["value"] for d in deliveries() if d["action"] == "accept"} >= wanted,
            timeout=60,
        )
    finally:
        stop_jvms(stop, procs)
    got = deliveries()
    accepted = [d["value"] for d in got if d["action"] == "accept"]
    assert sorted(accepted) == sorted(wanted)  # each exactly once
    rejected = [d for d in got if d["value"].endswith("5")]
    assert len(rejected) == RECORDS // 10 and all(d["delivery"] == 1 for d in rejected)
    released = sorted(
        (d["value"], d["delivery"], d["action"]) for d in got if d["value"].endswith("0")
    )
    assert released == sorted(
        (str(i), n, a) for i in range(0, RECORDS, 10) for n, a in ((1, "release"), (2, "accept"))
    )


@pytest.mark.java
@pytest.mark.publication
@pytest.mark.parametrize(
    ("spec", "fault"),
    [("reference", ""), ("reference:zookeeper", ""), ("reference", "forget_share_state")],
)
def test_java_share_consumers_across_a_broker_kill(tmp_path: Path, spec: str, fault: str) -> None:
    from conformance.targets.reference import ReferenceTarget

    harness(VERSION, SOURCE)  # skipped without a JDK or the jar
    target = ReferenceTarget.from_spec(spec)
    if fault:
        target.broker_overrides = {"settings": {"faults": {fault: True}}}
    with target:
        result = run_loop(target, SharePlan(), tmp_path)
    print(result.line())  # the counts (pytest -s)
    assert result.killed and result.not_delivered_at_kill, result.line()  # mid-stream
    if fault:
        assert result.after_final or result.duplicated_accepted, result.line()
    else:
        assert result.ok(), result.line()
