"""A KIP-848 consumer KILLED mid-stream (kill -9 of its process) against the reference (both
metadata stores): confluent-kafka, and Kafka's Java consumer 4.4.0, with
``group.protocol=consumer``, each member a process of its own.

The first member consumes a 3-partition topic, committing every few records (and what it has
read of a partition when the partition is revoked); a second joins; the first is then killed
with records still to read. Once its session times out its partitions move to the second,
which resumes from the killed member's last commits. Counted: every record consumed at least
once; the records the killed member read after its last commit of their partition and the
survivor read again are the allowed duplicates (counted apart); any other record read twice
(by one member, or by both) is a failure; a third member reads the committed offsets back.
Publication (about 15 s a client and store): CI's real-consumer loop is
test_consumer_protocol_client's.

Run as ``python -m tests.reference.groups.test_consumer_protocol_kill BOOTSTRAP GROUP TOPIC
OUT STOP PACE`` it is one member: it writes ``C partition offset`` per record consumed and ``K
partition offset`` per commit (the next offset to read) to OUT, until the file STOP exists.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from reference_impl.launcher import Cluster
from tests.reference.groups.test_clients import wait_until
from tests.reference.groups.test_consumer_protocol_client import (
    consumer,
    filled_topic,
    members,
    started,
)

RECORDS, PARTITIONS = 600, 3
#: records between a member's commits (the killed member's uncommitted ones are re-read)
COMMIT_EVERY = 7
ROOT = Path(__file__).resolve().parents[3]
MODULE = "tests.reference.groups.test_consumer_protocol_kill"


@pytest.fixture(params=["embedded", "zookeeper"])
def cluster(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Cluster]:
    """One broker of each metadata store (test_consumer_protocol_client's settings: 3 s
    consumer sessions)."""
    store = request.param
    zookeeper = request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    yield from started(tmp_path / "cluster", store, zookeeper)


def member_main(bootstrap: str, group: str, topic: str, out: Path, stop: Path, pace: float) -> None:
    """One member's loop (the child process), ``pace`` seconds a record."""
    from confluent_kafka import TopicPartition

    sink = out.open("a", buffering=1)
    pending: dict[int, int] = {}

    def commit(partitions: list[int]) -> None:
        done = [TopicPartition(topic, p, pending[p] + 1) for p in partitions if p in pending]
        if done:
            c.commit(offsets=done, asynchronous=False)
            for tp in done:
                sink.write(f"K {tp.partition} {tp.offset}\n")
                del pending[tp.partition]

    def revoked(_c, partitions) -> None:
        commit([tp.partition for tp in partitions])

    c = consumer(bootstrap, group)
    c.subscribe([topic], on_revoke=revoked)
    read = 0
    try:
        while not stop.exists():
            m = c.poll(0.2)
            if m is None or m.error():
                continue
            sink.write(f"C {m.partition()} {m.offset()}\n")
            pending[m.partition()] = m.offset()
            read += 1
            if read % COMMIT_EVERY == 0:
                commit(list(pending))
            time.sleep(pace)
        commit(list(pending))
    finally:
        c.close()
        sink.close()


def lines(path: Path) -> list[tuple[str, int, int]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        parts = line.split()
        if len(parts) == 3:  # a line cut by the kill is not a record
            rows.append((parts[0], int(parts[1]), int(parts[2])))
    return rows


def java_lines(path: Path) -> list[tuple[str, int, int]]:
    """``lines`` of a Kip848Harness member: its records, and after each commitSync (which
    commits every record read so far) a commit of each partition read."""
    rows: list[tuple[str, int, int]] = []
    read: dict[int, int] = {}
    text = path.read_text() if path.exists() else ""
    for line in text.splitlines():
        try:
            r = json.loads(line)
        except ValueError:
            continue  # a line cut by the kill
        if "offset" in r:
            rows.append(("C", r["partition"], r["offset"]))
            read[r["partition"]] = r["offset"]
        elif r.get("committed"):
            rows += [("K", p, o + 1) for p, o in sorted(read.items())]
    return rows


Reader = Callable[[Path], list[tuple[str, int, int]]]
#: starts a member (name, out file, stop file) writing what ``Reader`` reads
Spawn = Callable[[str, Path, Path], subprocess.Popen]


@pytest.mark.publication
def test_a_killed_member_loses_no_record_and_rereads_only_its_uncommitted_ones(
    cluster: Cluster, tmp_path: Path
) -> None:
    killed_loop(cluster.bootstrap_servers, lambda group: members(cluster, group), tmp_path, 3, 0.02)


def killed_loop(
    bootstrap: str,
    members: Callable[[str], int],
    tmp_path: Path,
    session_s: float,
    pace: float,
    spawn: Spawn | None = None,
    read: Reader = lines,
    records: int = RECORDS,
) -> None:
    """The loop on any target (``members``: how many members a group has; ``session_s``: the
    target's consumer session timeout, after which the killed member's partitions move;
    ``pace``: seconds a member takes per record, slow enough that the first is mid-stream when
    the second is given partitions; ``spawn``/``read``: another client's members, by default
    this module's confluent-kafka one; ``records``: how many, a multiple of PARTITIONS)."""
    from confluent_kafka import TopicPartition

    topic, group = "kip848-kill", "kip848-group-kill"
    filled_topic(bootstrap, topic, PARTITIONS, records)

    procs: dict[str, subprocess.Popen] = {}

    def consumed(path: Path) -> list[tuple[int, int]]:
        return [(p, o) for kind, p, o in read(path) if kind == "C"]

    def start(name: str) -> Path:
        out, stop = tmp_path / f"{name}.out", tmp_path / f"{name}.stop"
        if spawn is not None:
            procs[name] = spawn(name, out, stop)
            return out
        cmd = [
            sys.executable,
            "-m",
            MODULE,
            bootstrap,
            group,
            topic,
            str(out),
            str(stop),
            str(pace),
        ]
        procs[name] = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        return out

    try:
        first = start("first")
        wait_until("the first member consumes", lambda: len(consumed(first)) > 30, 60)
        second = start("second")
        wait_until("the second member joins", lambda: members(group) == 2, 30)
        wait_until("the second member consumes", lambda: len(consumed(second)) > 0, 60)
        at_join = len(consumed(first))
        wait_until("the first reads on", lambda: len(consumed(first)) >= at_join + 20, 30)
        # killed between commits if caught so within 10 s: its last line a record, not a commit
        past = time.monotonic() + 10
        while read(first)[-1][0] != "C" and time.monotonic() < past:
            time.sleep(0.005)
        os.kill(procs["first"].pid, signal.SIGKILL)
        procs["first"].wait(10)
        killed = read(first)
        wait_until(
            "every record is consumed",
            lambda: len(set(consumed(first)) | set(consumed(second))) >= records,
            session_s + records * pace + 30,
        )
        (tmp_path / "second.stop").touch()
        assert procs["second"].wait(30) == 0
    finally:
        for p in procs.values():
            if p.poll() is None:
                p.kill()
                p.wait(10)

    by_first, by_second = consumed(first), consumed(second)
    assert len(by_first) < records - 50, "the first member was not killed mid-stream"
    # the killed member's last commit per partition: the next offset a successor reads
    last_commit: dict[int, int] = {}
    for kind, p, o in killed:
        if kind == "K":
            last_commit[p] = o
    both = set(by_first) & set(by_second)
    allowed = {(p, o) for p, o in both if o >= last_commit.get(p, 0)}
    wanted = {(p, o) for p in range(PARTITIONS) for o in range(records // PARTITIONS)}
    print(
        f"killed member: {len(by_first)} read, last commits {dict(sorted(last_commit.items()))};"
        f" survivor: {len(by_second)} read; re-read after the kill (allowed): {len(allowed)};"
        f" distinct {len(set(by_first) | set(by_second))} of {records}"
    )
    assert set(by_first) | set(by_second) == wanted, "a record was lost"
    assert len(by_first) == len(set(by_first)), "the killed member read a record twice"
    assert len(by_second) == len(set(by_second)), "the survivor read a record twice"
    assert both == allowed, f"read by both though committed before the kill: {both - allowed}"
    third = consumer(bootstrap, group)
    try:
        got = third.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10)
        assert sorted(tp.offset for tp in got) == [records // PARTITIONS] * PARTITIONS
    finally:
        third.close()


if __name__ == "__main__":
    args = sys.argv[1:]
    member_main(args[0], args[1], args[2], Path(args[3]), Path(args[4]), float(args[5]))


@pytest.mark.java
@pytest.mark.publication
def test_a_killed_java_member_loses_no_record_and_rereads_only_its_uncommitted_ones(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The loop with Kafka's Java consumer 4.4.0 (``tests/java/Kip848Harness.java``, commitSync
    after each poll of at most 10 records, 200 ms apart): the first JVM is kill -9'd."""
    from tests.reference.groups.test_consumer_protocol_java import harness_classpath

    classpath = harness_classpath()
    bootstrap = cluster.bootstrap_servers

    def spawn(name: str, out: Path, stop: Path) -> subprocess.Popen:
        cmd = ["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", classpath]
        cmd += ["Kip848Harness", bootstrap, "kip848-kill", "kip848-group-kill", name, str(stop)]
        cmd += ["300", "consumer"]
        with open(out, "w") as sink, open(out.with_suffix(".log"), "w") as log:
            return subprocess.Popen(cmd, stdout=sink, stderr=log, stdin=subprocess.DEVNULL)

    def count(group: str) -> int:
        return members(cluster, group)

    killed_loop(bootstrap, count, tmp_path, 3, 0.02, spawn, java_lines)
