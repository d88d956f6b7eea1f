"""Kafka's Java KafkaShareConsumer 4.4.0 (KIP-932) against the reference: two members
(``tests/java/ShareHarness.java``, explicit acknowledgement) share a 3-partition topic of 60
records: a value ending in 0 is RELEASEd on its first delivery, one ending in 5 REJECTed, every
other delivery ACCEPTed. Every record not rejected is accepted exactly once, the released ones
on their second delivery, a rejected one never comes back. Kafka 4.4.0 gives the same counts
(issue 39). Marked ``java``; two JVMs: about 10 s.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from conformance.protocol import ApiKey
from reference_impl.launcher import Cluster
from tests.reference.groups.test_clients import ask, wait_until
from tests.reference.groups.test_consumer_protocol_client import cluster  # noqa: F401
from tests.support.java_members import harness, numbered_topic, start_jvm

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
        stop.touch()
        for p in procs:
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
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
