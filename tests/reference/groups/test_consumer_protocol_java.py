"""Kafka's Java consumer 4.4.0 with ``group.protocol=consumer`` against the reference: two
members (``tests/java/Kip848Harness.java``, compiled against the cached kafka-clients 4.4.0 as the
KIP-42 harness is) share a 3-partition topic, the second joining while the first consumes, the
first then leaving: every record consumed exactly once (commitSync after each poll). The
migration case starts the first with ``group.protocol=classic``: its classic group is upgraded
when the second joins with the consumer protocol, and the classic member then leaves the consumer
group (issue 38). Both on each metadata store (the ZooKeeper ones, and the migration, in the
publication run). Marked ``java`` (a JDK and the kafka-clients jar); two JVMs: about 15 s each.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.targets.zookeeper import ZooKeeperServer
from reference_impl.launcher import Cluster
from tests.reference.groups.test_clients import wait_until
from tests.reference.groups.test_consumer_protocol_client import (  # noqa: F401
    cluster,
    members,
    started,
)

VERSION = "4.4.0"
SOURCE = Path(__file__).resolve().parents[2] / "java" / "Kip848Harness.java"
#: records per case: the classic first member joins later (the classic group's initial
#: rebalance delay), so it gets more to be still consuming when the second arrives
RECORDS = {"consumer": 300, "classic": 900}


@pytest.fixture(scope="module")
def zookeeper_cluster(
    tmp_path_factory: pytest.TempPathFactory, zookeeper: ZooKeeperServer
) -> Iterator[Cluster]:
    """The ``cluster`` fixture's one broker, its metadata in ZooKeeper."""
    yield from started(tmp_path_factory.mktemp("kip848-zk") / "cluster", "zookeeper", zookeeper)


def harness_classpath() -> str:
    """Kip848Harness compiled against kafka-clients VERSION, with its jars (skips without a
    JDK or the jar)."""
    from conformance.targets.java_client import fetch_client, harness_classes

    try:
        classes = harness_classes(VERSION, SOURCE)
        libs = fetch_client(VERSION)
    except Exception as e:  # no JDK, no network for the jar
        pytest.skip(f"kafka-clients {VERSION} harness unavailable: {e}")
    return f"{classes}:{libs}/*"


PUBLICATION = pytest.mark.publication


@pytest.mark.java
# CI runs the consumer-protocol loop on the embedded store; each other one costs 15-30 s more
@pytest.mark.parametrize(
    ("first_protocol", "store"),
    [
        ("consumer", "embedded"),
        pytest.param("classic", "embedded", marks=PUBLICATION),
        pytest.param("consumer", "zookeeper", marks=PUBLICATION),
        pytest.param("classic", "zookeeper", marks=PUBLICATION),
    ],
)
def test_java_members_joining_and_leaving_consume_every_record_once(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    first_protocol: str,
    store: str,
) -> None:
    target: Cluster = request.getfixturevalue(
        "zookeeper_cluster" if store == "zookeeper" else "cluster"
    )
    topic, group = f"kip848-java-{first_protocol}", f"kip848-java-group-{first_protocol}"
    records = RECORDS[first_protocol]
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    classpath = harness_classpath()
    bootstrap = target.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 1)], operation_timeout=10)[topic].result(15)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(records):
        producer.produce(topic, value=str(i).encode(), partition=i % 3)
    assert producer.flush(30) == 0

    def start(name: str, protocol: str = "consumer") -> tuple[subprocess.Popen, Path, Path]:
        out, stop = tmp_path / f"{name}.jsonl", tmp_path / f"{name}.stop"
        cmd = ["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", classpath]
        cmd += ["Kip848Harness", bootstrap, topic, group, name, str(stop), "60", protocol]
        log = open(tmp_path / f"{name}.log", "w")
        with open(out, "w") as sink:
            proc = subprocess.Popen(cmd, stdout=sink, stderr=log, stdin=subprocess.DEVNULL)
        return proc, out, stop

    def lines(path: Path) -> list[dict]:
        text = path.read_text() if path.exists() else ""
        return [json.loads(line) for line in text.splitlines() if line.startswith("{")]

    first, first_out, first_stop = start("first", first_protocol)
    try:
        wait_until("the first member consumes", lambda: len(lines(first_out)) > 20, 40)
        second, second_out, second_stop = start("second")
        try:
            # the second is in the group (it may get no partition if the first consumed all)
            wait_until("the second member joins", lambda: members(target, group) == 2, 60)
            first_stop.touch()
            first.wait(30)

            def values() -> list[str]:
                return [
                    r["value"] for o in (first_out, second_out) for r in lines(o) if "value" in r
                ]

            wait_until("every record is consumed", lambda: len(set(values())) >= records, 60)
            second_stop.touch()
            second.wait(30)
        finally:
            second.kill()
    finally:
        first.kill()
    consumed = values()
    counts = {o.stem: sum("value" in r for r in lines(o)) for o in (first_out, second_out)}
    print(f"{store} store, first {first_protocol}: {len(consumed)} of {records} by {counts}")
    assert sorted(consumed, key=int) == [str(i) for i in range(records)], (
        f"lost or duplicated: {len(consumed)} consumed of {records}, by member {counts}"
    )
    assert {r["member"] for r in lines(first_out) + lines(second_out) if r.get("closed")} == {
        "first",
        "second",
    }
