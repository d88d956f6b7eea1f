"""What the tests that run Kafka's Java consumers against the reference share: the harness
compiled against the cached kafka-clients release (the test is skipped where no JDK or jar is at
hand), a topic of numbered records, and one harness JVM."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest


def harness(version: str, source: Path) -> tuple[Path, Path]:
    """(compiled classes, the release's libs folder), or the test is skipped."""
    from conformance.targets.java_client import fetch_client, harness_classes

    try:
        return harness_classes(version, source), fetch_client(version)
    except Exception as e:  # no JDK, no network for the jar
        pytest.skip(f"kafka-clients {version} harness unavailable: {e}")


def numbered_topic(bootstrap: str, topic: str, records: int, partitions: int = 3) -> None:
    """A topic whose record i (value ``str(i)``) is on partition i % partitions."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)], operation_timeout=10)[topic].result(15)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(records):
        producer.produce(topic, value=str(i).encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def start_jvm(classes: Path, libs: Path, args: list[str], out: Path, log: Path) -> subprocess.Popen:
    """``java`` with the harness on its classpath: stdout into ``out``, stderr into ``log``."""
    cmd = ["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", f"{classes}:{libs}/*", *args]
    with open(out, "w") as sink, open(log, "w") as err:
        return subprocess.Popen(cmd, stdout=sink, stderr=err, stdin=subprocess.DEVNULL)


def stop_jvms(stop: Path, procs: list[subprocess.Popen]) -> None:
    """Touch the harnesses' stop file and wait for each (killed after 30 s)."""
    stop.touch()
    for p in procs:
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait(10)
