"""Real transactional clients in a read-process-write loop, with a kill -9 of the coordinator.

What exactly-once means to a user, checked end to end with released clients (issue 28): an input
topic filled by a transactional producer (every few of its transactions aborted, so the input
itself holds records a ``read_committed`` reader must skip) is copied to an output topic by a
worker that reads with ``isolation.level=read_committed``, writes in a transaction, adds its
consumer offsets to the same transaction and commits, aborting every k-th transaction on purpose
(and rewinding to where that transaction began). Mid-way, with a transaction open and its
records and offsets written, the broker coordinating the transactional id (FindCoordinator key
type 1) is killed with SIGKILL and started again; the worker, as a crashed worker would, starts
a new producer with the same transactional id (which fences the old one and aborts its open
transaction) and a new consumer in the same group (which resumes at the committed offsets). The
old producer's commit must then be refused.

A ``read_committed`` reader of the output must then see every committed input record exactly
once, in input order per partition, and no record written by a transaction that did not commit
(each output value names the transaction that wrote it). A ``read_uncommitted`` reader shows
that aborted records are in the log (the aborts were real, not skipped).

Other kill points (:attr:`LoopPlan.kill_mode`): as soon as a transaction's EndTxn is answered,
its markers perhaps still being written, or a little later, the next transaction's requests in
flight; the same producer then goes on. :attr:`LoopPlan.pause` pauses the broker (SIGSTOP, then
SIGCONT) instead: a coordinator that comes back after its leadership moved.

The workers: confluent-kafka (librdkafka) in this process, and Java's kafka-clients in
``tests/java/TxnLoopHarness.java`` (compiled as the KIP-42 harness is), which stops at the kill
point and waits for a line on its stdin. Everything is bounded by :attr:`LoopPlan.deadline`.
Full-size runs: ``python -m tests.txn_loop --target kafka:3.9.1 --client python --client
java:3.9.1 --records 2000 --kill-at 10`` (one JSON line of counts per client; see ``--help``).
"""

from __future__ import annotations

import asyncio
import json
import queue
import signal
import subprocess
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, Codec
from conformance.targets.base import Target

#: the Java worker's source (test code: not shipped with the wheel)
JAVA_SOURCE = Path(__file__).with_name("java") / "TxnLoopHarness.java"
OP_TIMEOUT = 10.0  # seconds for each client call that takes a timeout
MAX_FAILURES = 10  # failed transactions in a row that end a worker
_CODEC: Codec | None = None


@dataclass(frozen=True)
class LoopPlan:
    """The size of one loop and its deadline."""

    records: int = 2000  # committed input records
    partitions: int = 3
    batch: int = 50  # input records per worker transaction, at most
    abort_every: int = 5  # every k-th worker transaction is aborted on purpose
    fill_batch: int = 100
    fill_abort_every: int = 4  # every k-th fill transaction is aborted
    kill_at: int = 0  # the worker transaction during which the coordinator is killed (0: none)
    #: "open": with that transaction's records and offsets sent, then a new worker instance
    #: fences the old; "ended": as soon as its EndTxn is answered (markers perhaps still being
    #: written), the same instance going on; "later": ``kill_delay`` seconds after it ended,
    #: wherever the worker then is (the next transaction's requests in flight)
    kill_mode: str = "open"
    kill_delay: float = 0.2
    pause: float = 0.0  # > 0: the coordinator's broker is paused (SIGSTOP) so long, not killed
    deadline: float = 240.0  # seconds for the whole loop, fill and check included


@dataclass
class WorkerLog:
    """What a worker says it did: transactions by label and outcome."""

    committed: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    #: transactions aborted because an operation failed (not on purpose), with the error
    failed: list[str] = field(default_factory=list)
    instances: int = 1
    #: what the old producer's commit got after a new one with its id was initialised
    zombie: str = ""
    copied: int = 0
    failed_at_commit: int = 0  # len(failed) at the last commit (failures in a row since)


@dataclass
class LoopResult:
    client: str
    target: str
    records: int = 0  # committed input records
    committed_txns: int = 0
    aborted_txns: int = 0
    failed_txns: int = 0
    instances: int = 0
    output_committed: int = 0  # records a read_committed reader of the output sees
    output_in_log: int = 0  # records a read_uncommitted reader sees (aborted ones included)
    duplicates: int = 0
    lost: int = 0
    out_of_order: int = 0  # partitions whose records are not in input order
    from_open_or_aborted: int = 0  # visible records written by a transaction that did not commit
    killed: str = ""  # "broker N (pid P)" killed at the kill point
    zombie: str = ""
    failures: list[str] = field(default_factory=list)  # transactions that failed, and why
    fill_failures: list[str] = field(default_factory=list)  # input transactions written again
    wall: float = 0.0
    phases: dict[str, float] = field(default_factory=dict)  # seconds of each step
    problems: list[str] = field(default_factory=list)

    def ok(self) -> bool:
        return not self.problems

    def line(self) -> str:
        return json.dumps(asdict(self))


def _codec() -> Codec:
    global _CODEC
    if _CODEC is None:
        _CODEC = Codec.from_specs()
    return _CODEC


# -- the cluster side --------------------------------------------------------------------------


def txn_coordinator(target: Target, transactional_id: str, timeout: float = 20.0) -> int:
    """The node id a broker of the target names for ``transactional_id`` (FindCoordinator v3,
    key type 1), asking each broker in turn until one answers."""

    async def ask(host: str, port: int) -> int:
        async with await Connection.open(host, port, codec=_codec(), timeout=5) as conn:
            body = {"Key": transactional_id, "KeyType": 1}
            r = (await conn.request(ApiKey.FIND_COORDINATOR, 3, body, timeout=5)).body
            return r["NodeId"] if r["ErrorCode"] == 0 else -1

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for ep in target.bootstrap:
            try:
                node = asyncio.run(ask(ep.host, ep.port))
            except (OSError, ConnectionError, TimeoutError):
                continue
            if node >= 0:
                return node
        time.sleep(0.2)
    raise AssertionError(f"no broker named the transaction coordinator of {transactional_id}")


class Killer:
    """Kills the coordinator of a transactional id with SIGKILL and starts it again in a
    thread of its own (the worker goes on meanwhile); :meth:`join` waits for the restart."""

    def __init__(
        self, target: Target, transactional_id: str, delay: float = 0.0, pause: float = 0.0
    ) -> None:
        self.target, self.transactional_id, self.delay = target, transactional_id, delay
        #: > 0: SIGSTOP instead of SIGKILL, SIGCONT that many seconds later (a coordinator that
        #: comes back after its leadership moved, instead of a restart)
        self.pause = pause
        self.node = -1
        self.what = ""
        self._thread: threading.Thread | None = None
        self.error: BaseException | None = None

    def __call__(self) -> None:
        """Kill now, or with a delay after ``delay`` seconds while the caller goes on."""
        self.node = txn_coordinator(self.target, self.transactional_id)
        self.what = f"broker {self.node}" + (f" {self.delay:.2f} s later" if self.delay else "")
        self.what += f", paused {self.pause:.1f} s" if self.pause else ""
        if not self.delay:
            self._kill()
        self._thread = threading.Thread(target=self._restart, name="restart", daemon=True)
        self._thread.start()

    def _kill(self) -> None:
        if self.pause:
            self.target.signal_node(self.node, signal.SIGSTOP)
            return
        self.target.signal_node(self.node, signal.SIGKILL)
        assert not self.target.node_running(self.node)

    def _restart(self) -> None:
        try:
            if self.delay:
                time.sleep(self.delay)
                self._kill()
            if self.pause:
                time.sleep(self.pause)
                self.target.signal_node(self.node, signal.SIGCONT)
                return
            time.sleep(1.0)  # down long enough for its sessions to be seen as lost
            self.target.start_node(self.node)
        except BaseException as e:  # reported by join
            self.error = e

    def join(self, timeout: float = 120.0) -> None:
        if self._thread is None:
            return
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"broker {self.node} was not started again in {timeout:.0f} s")
        if self.error is not None:
            raise self.error


def create_topics(bootstrap: str, names: list[str], partitions: int, replicas: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(n, partitions, replicas) for n in names], operation_timeout=15
    )
    for f in futures.values():
        f.result(30)
    deadline = time.monotonic() + 30
    for name in names:
        while True:
            md = admin.list_topics(name, timeout=5).topics[name]
            if len(md.partitions) == partitions and all(
                p.leader >= 0 for p in md.partitions.values()
            ):
                break
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} has no leader for every partition")
            time.sleep(0.1)


# -- the input ---------------------------------------------------------------------------------


def _retry(deadline: float, call: Callable[..., object], *args: object) -> object:
    """``call(*args)`` again while it fails with an error librdkafka calls retriable."""
    from confluent_kafka import KafkaException

    while True:
        try:
            return call(*args)
        except KafkaException as e:
            err = e.args[0]
            if not err.retriable() or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def fill_input(
    bootstrap: str, topic: str, plan: LoopPlan, deadline: float, failures: list[str]
) -> list[list[bytes]]:
    """Write the input transactionally: ``r<n>`` committed (round robin over the partitions),
    ``a<txn>-<j>`` in the transactions aborted. The committed values per partition, in order.
    A transaction that fails is written again by a new producer (the failure is noted in
    ``failures``; had it committed after all, the copy's check finds duplicates)."""
    from confluent_kafka import KafkaException

    expected: list[list[bytes]] = [[] for _ in range(plan.partitions)]
    n, txn, p = 0, 0, None
    try:
        while n < plan.records:
            if time.monotonic() > deadline or len(failures) > MAX_FAILURES:
                raise AssertionError(f"the input was not written: {failures[-3:]}")
            if p is None:
                p = _fill_producer(bootstrap, topic, deadline)
            txn += 1
            abort = txn % plan.fill_abort_every == 0
            if abort:
                values = [f"a{txn}-{j}".encode() for j in range(plan.fill_batch)]
            else:
                top = min(plan.records, n + plan.fill_batch)
                values = [f"r{i}".encode() for i in range(n, top)]
            try:
                p.begin_transaction()
                for i, value in enumerate(values):
                    p.produce(topic, value, partition=(n + i) % plan.partitions)
                    p.poll(0)
                _retry(deadline, p.abort_transaction if abort else p.commit_transaction, OP_TIMEOUT)
            except KafkaException as e:
                err = e.args[0]
                failures.append(f"fill {txn}: {err.name()} {err.str()}")
                _close(p)
                p, txn = None, txn - 1
                continue
            if not abort:
                for i, value in enumerate(values):
                    expected[(n + i) % plan.partitions].append(value)
                n += len(values)
    finally:
        if p is not None:
            _close(p)
    return expected


def _fill_producer(bootstrap: str, topic: str, deadline: float):
    from confluent_kafka import Producer

    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": f"fill-{topic}",
            "transaction.timeout.ms": 30000,
            "linger.ms": 5,
        }
    )
    _retry(deadline, p.init_transactions, OP_TIMEOUT)
    return p


# -- the confluent-kafka worker ----------------------------------------------------------------


class PythonWorker:
    """confluent-kafka's transactional producer and read_committed consumer."""

    def __init__(
        self,
        bootstrap: str,
        names: dict[str, str],
        plan: LoopPlan,
        on_kill: Callable[[], None],
        log: WorkerLog,
    ) -> None:
        self.bootstrap, self.names, self.plan, self.on_kill = bootstrap, names, plan, on_kill
        self.log = log
        self.deadline = 0.0

    def _instance(self) -> tuple:
        from confluent_kafka import Consumer, Producer

        producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "transactional.id": self.names["tid"],
                "transaction.timeout.ms": 20000,
                "message.timeout.ms": 20000,
                "linger.ms": 5,
            }
        )
        _retry(self.deadline, producer.init_transactions, OP_TIMEOUT)
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.names["group"],
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
            }
        )
        consumer.subscribe([self.names["input"]])
        return producer, consumer

    def run(self, expected: int, deadline: float) -> WorkerLog:
        from confluent_kafka import KafkaException, TopicPartition

        self.deadline = deadline
        producer, consumer = self._instance()
        letter, txn = "a", 0
        try:
            while self.log.copied < expected:
                _bounded(self.log, expected, deadline)
                msgs = consumer.consume(self.plan.batch, 1.0)
                for m in msgs:
                    if m.error() is not None and m.error().fatal():
                        raise KafkaException(m.error())
                msgs = [m for m in msgs if m.error() is None]  # passing ones: asked again
                if not msgs:
                    continue
                txn += 1
                label = f"p{letter}{txn}"
                first: dict[int, int] = {}
                last: dict[int, int] = {}
                try:
                    producer.begin_transaction()
                    for m in msgs:
                        first.setdefault(m.partition(), m.offset())
                        last[m.partition()] = m.offset()
                        value = m.value() + b"|" + label.encode()
                        producer.produce(self.names["output"], value, partition=m.partition())
                        producer.poll(0)
                    offsets = [
                        TopicPartition(self.names["input"], part, off + 1)
                        for part, off in last.items()
                    ]
                    meta = consumer.consumer_group_metadata()
                    _retry(
                        deadline, producer.send_offsets_to_transaction, offsets, meta, OP_TIMEOUT
                    )
                    if txn == self.plan.kill_at and self.plan.kill_mode == "open":
                        producer.flush(OP_TIMEOUT)
                        self.on_kill()
                        letter = chr(ord(letter) + 1)
                        producer, consumer = self._fence(producer, consumer, label)
                        continue
                    if txn % self.plan.abort_every == 0:
                        # sent first: an abort purges messages still queued, and an abort whose
                        # records never reached the log would prove nothing
                        producer.flush(OP_TIMEOUT)
                        _retry(deadline, producer.abort_transaction, OP_TIMEOUT)
                        self.log.aborted.append(label)
                        self._rewind(consumer, first)
                    else:
                        _retry(deadline, producer.commit_transaction, OP_TIMEOUT)
                        self.log.committed.append(label)
                        self.log.copied += len(msgs)
                        self.log.failed_at_commit = len(self.log.failed)
                    if txn == self.plan.kill_at:  # kill_mode "ended" or "later"
                        self.on_kill()
                except KafkaException as e:
                    err = e.args[0]
                    self.log.failed.append(f"{label}: {err.name()} {err.str()}")
                    if err.txn_requires_abort():
                        _retry(deadline, producer.abort_transaction, OP_TIMEOUT)
                        self._rewind(consumer, first)
                    else:  # fatal: start again as a new instance, from the committed offsets
                        consumer.close()
                        _close(producer)
                        letter = chr(ord(letter) + 1)
                        self.log.instances += 1
                        producer, consumer = self._instance()
        finally:
            consumer.close()
            _close(producer)
        return self.log

    def _fence(self, zombie, consumer, label: str) -> tuple:
        """A new instance while the old producer's transaction is open; then the old one's
        commit, which the new instance's InitProducerId must have fenced."""
        from confluent_kafka import KafkaException

        consumer.close()
        self.log.instances += 1
        producer, consumer = self._instance()
        try:
            zombie.commit_transaction(OP_TIMEOUT)
            self.log.zombie = "COMMITTED (the fenced producer's commit was accepted)"
            self.log.committed.append(label)
        except KafkaException as e:
            err = e.args[0]
            self.log.zombie = f"{err.name()}{' (fatal)' if err.fatal() else ''}"
            self.log.aborted.append(label)
        _close(zombie)
        return producer, consumer

    def _rewind(self, consumer, first: dict[int, int]) -> None:
        """Back to where the aborted transaction began reading."""
        from confluent_kafka import KafkaException, TopicPartition

        for part, off in first.items():
            try:
                consumer.seek(TopicPartition(self.names["input"], part, off))
            except KafkaException:  # no longer assigned: the group's committed offset rules
                pass


def _bounded(log: WorkerLog, expected: int, deadline: float) -> None:
    """Stop a worker past its deadline or after too many failed transactions in a row."""
    streak = len(log.failed) - log.failed_at_commit
    if time.monotonic() > deadline or streak >= MAX_FAILURES:
        raise AssertionError(
            f"the worker copied {log.copied} of {expected} records, {len(log.failed)} "
            f"transactions failed, the last: {log.failed[-3:]}"
        )


def _close(producer) -> None:
    """Close a producer; one that met a fatal error (fenced) says so again on close."""
    from confluent_kafka import KafkaException

    try:
        producer.flush(1)
        producer.close()
    except KafkaException:
        pass


# -- the Java worker ---------------------------------------------------------------------------


def java_classes(version: str) -> Path:
    """The Java worker compiled against kafka-clients ``version`` (as the KIP-42 harness)."""
    from conformance.targets.java_client import harness_classes

    return harness_classes(version, JAVA_SOURCE)


def run_java_worker(
    version: str,
    bootstrap: str,
    names: dict[str, str],
    plan: LoopPlan,
    expected: int,
    on_kill: Callable[[], None],
    deadline: float,
    log_path: Path,
    log: WorkerLog,
) -> WorkerLog:
    """Run the Java worker, kill at its kill point (it waits on stdin), read its events."""
    from conformance.targets.java_client import fetch_client

    classes = java_classes(version)
    classpath = f"{classes}:{fetch_client(version) / '*'}"
    seconds = max(5, int(deadline - time.monotonic()))
    cmd = ["java", "-XX:TieredStopAtLevel=1", "-Xmx256m", "-cp", classpath, "TxnLoopHarness"]
    cmd += [bootstrap, names["input"], names["output"], names["group"], names["tid"]]
    cmd += [str(x) for x in (expected, plan.batch, plan.abort_every, plan.kill_at, seconds)]
    cmd.append("open" if plan.kill_mode == "open" else "ended")
    lines: queue.Queue[str | None] = queue.Queue()
    with log_path.open("w") as err:
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
        )
        reader = threading.Thread(target=_pump, args=(proc, lines), daemon=True)
        reader.start()
        try:
            done = False
            while not done:
                _bounded(log, expected, deadline)
                left = deadline - time.monotonic()
                try:
                    line = lines.get(timeout=max(0.1, min(left, 5.0)))
                except queue.Empty:
                    continue
                if line is None:
                    break
                event = json.loads(line)
                done = _java_event(event, log, proc, on_kill)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
            reader.join(5)
    if proc.returncode != 0 or not done:
        tail = log_path.read_text(errors="replace")[-600:]
        raise AssertionError(f"the Java worker exited {proc.returncode}: {tail}")
    return log


def _pump(proc: subprocess.Popen, lines: queue.Queue) -> None:
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("{"):
            lines.put(line)
    lines.put(None)


def _java_event(event: dict, log: WorkerLog, proc: subprocess.Popen, on_kill) -> bool:
    kind = event["event"]
    if kind == "commit":
        log.committed.append(event["label"])
        log.copied += event["records"]
        log.failed_at_commit = len(log.failed)
    elif kind == "abort":
        log.aborted.append(event["label"])
    elif kind == "failed":
        log.failed.append(f"{event['label']}: {event['error']}")
    elif kind == "instance":
        log.instances = event["n"]
    elif kind == "kill-point":
        on_kill()
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    elif kind == "zombie":
        log.zombie = event["outcome"]
        (log.committed if event["outcome"] == "COMMITTED" else log.aborted).append(event["label"])
    return kind == "done"


# -- the check ---------------------------------------------------------------------------------


def read_all(
    bootstrap: str, topic: str, partitions: int, isolation: str, deadline: float, at_least: int
) -> list[list[bytes]]:
    """Every record of ``topic`` a reader with ``isolation`` sees, per partition in order: read
    until each position reaches the high watermark, or nothing more came for 1 s once there
    are ``at_least`` (3 s before: a control batch last in a partition leaves the position
    short of the high watermark)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex[:8]}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    tps = [TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)]
    got: list[list[bytes]] = [[] for _ in range(partitions)]
    try:
        c.assign(tps)
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            msgs = c.consume(500, 0.5)
            for m in msgs:
                if m.error() is None:
                    got[m.partition()].append(m.value())
            if msgs:
                quiet_since = time.monotonic()
                continue
            quiet = 1.0 if sum(map(len, got)) >= at_least else 3.0
            if time.monotonic() - quiet_since > quiet:
                break
            ends = [c.get_watermark_offsets(tp, 5, cached=False)[1] for tp in tps]
            positions = [tp.offset for tp in c.position(tps)]
            if all(pos >= end for pos, end in zip(positions, ends, strict=True)):
                break
    finally:
        c.close()
    return got


def judge(
    result: LoopResult,
    expected: list[list[bytes]],
    committed: list[list[bytes]],
    in_log: list[list[bytes]],
    log: WorkerLog,
) -> LoopResult:
    """Compare what a read_committed reader saw with the committed input; fill the counts."""
    good = set(log.committed)
    result.records = sum(map(len, expected))
    result.committed_txns, result.aborted_txns = len(log.committed), len(log.aborted)
    result.failed_txns, result.instances, result.zombie = len(log.failed), log.instances, log.zombie
    result.failures = log.failed[:10]
    result.output_committed = sum(map(len, committed))
    result.output_in_log = sum(map(len, in_log))
    for want, seen in zip(expected, committed, strict=True):
        values = [v.rpartition(b"|")[0] for v in seen]
        labels = [v.rpartition(b"|")[2].decode() for v in seen]
        result.from_open_or_aborted += sum(label not in good for label in labels)
        result.duplicates += len(values) - len(set(values))
        result.lost += len(set(want) - set(values))
        if _dedup(values) != want:
            result.out_of_order += 1
    if result.duplicates:
        result.problems.append(f"{result.duplicates} duplicate records")
    if result.lost:
        result.problems.append(f"{result.lost} lost records")
    if result.out_of_order:
        result.problems.append(f"{result.out_of_order} partitions out of input order")
    if result.from_open_or_aborted:
        result.problems.append(f"{result.from_open_or_aborted} records of uncommitted txns seen")
    if log.zombie.startswith("COMMITTED"):
        result.problems.append("the fenced producer committed")
    if log.aborted and result.output_in_log <= result.output_committed:
        result.problems.append("no aborted record in the output log: the aborts were not real")
    return result


def _dedup(values: list[bytes]) -> list[bytes]:
    seen: set[bytes] = set()
    return [v for v in values if not (v in seen or seen.add(v))]


# -- one loop ----------------------------------------------------------------------------------


def run_loop(target: Target, client: str, plan: LoopPlan, work: Path) -> LoopResult:
    """One loop against a started target: ``client`` is ``python`` or ``java:VERSION``."""
    started = time.monotonic()
    deadline = started + plan.deadline
    run = uuid.uuid4().hex[:8]
    names = {
        "input": f"txn-in-{run}",
        "output": f"txn-out-{run}",
        "group": f"txn-group-{run}",
        "tid": f"txn-worker-{run}",
    }
    bootstrap = ",".join(map(str, target.bootstrap))
    result = LoopResult(client=client, target=target.kind)
    create_topics(
        bootstrap, [names["input"], names["output"]], plan.partitions, min(3, len(target.bootstrap))
    )
    result.phases["topics"] = _lap(started)
    expected = fill_input(bootstrap, names["input"], plan, deadline, result.fill_failures)
    result.phases["fill"] = _lap(started, result.phases)
    delay = plan.kill_delay if plan.kill_mode == "later" else 0.0
    killer = Killer(target, names["tid"], delay, plan.pause)
    total = sum(map(len, expected))
    log = WorkerLog()
    try:
        if client == "python":
            PythonWorker(bootstrap, names, plan, killer, log).run(total, deadline)
        else:
            version = client.partition(":")[2]
            java_log = work / f"java-worker-{run}.log"
            run_java_worker(version, bootstrap, names, plan, total, killer, deadline, java_log, log)
    except AssertionError as e:  # the worker did not finish: said, and the output still judged
        result.problems.append(f"worker: {e}")
    result.phases["worker"] = _lap(started, result.phases)
    try:
        killer.join(max(10.0, deadline - time.monotonic()))
    except Exception as e:  # the restart failing is a finding, said in the result
        result.problems.append(f"restart of the killed broker: {e!r}")
    result.phases["restart"] = _lap(started, result.phases)
    result.killed = killer.what
    check_deadline = max(deadline, time.monotonic() + 30)
    out, parts = names["output"], plan.partitions
    committed = read_all(bootstrap, out, parts, "read_committed", check_deadline, total)
    in_log = read_all(bootstrap, out, parts, "read_uncommitted", check_deadline, total)
    result.phases["check"] = _lap(started, result.phases)
    judge(result, expected, committed, in_log, log)
    if plan.kill_at and not result.killed:
        result.problems.append("the coordinator was not killed (the loop ended before kill_at)")
    result.wall = round(time.monotonic() - started, 1)
    return result


def _lap(started: float, phases: dict[str, float] | None = None) -> float:
    """Seconds since ``started`` less those of the phases already timed."""
    return round(time.monotonic() - started - sum((phases or {}).values()), 1)


def main(argv: list[str] | None = None) -> int:
    """The full-size loops: ``python -m tests.txn_loop --target kafka:3.9.1 --client python
    --client java:3.9.1``; one JSON line of counts per client, exit 1 when one has problems."""
    import argparse
    import tempfile
    import traceback

    from conformance.targets import TargetOptions, make_target

    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("--target", default="reference")
    ap.add_argument("--client", action="append", default=[], help="python or java:VERSION")
    ap.add_argument("--records", type=int, default=LoopPlan.records)
    ap.add_argument("--batch", type=int, default=LoopPlan.batch)
    ap.add_argument("--abort-every", type=int, default=LoopPlan.abort_every)
    ap.add_argument("--kill-at", type=int, default=10, help="0: no kill")
    ap.add_argument("--kill-mode", choices=("open", "ended", "later"), default="open")
    ap.add_argument("--kill-delay", type=float, default=LoopPlan.kill_delay)
    ap.add_argument("--pause", type=float, default=0.0, help="SIGSTOP so long instead of kill")
    ap.add_argument("--deadline", type=float, default=LoopPlan.deadline)
    args = ap.parse_args(argv)
    plan = LoopPlan(
        records=args.records,
        batch=args.batch,
        abort_every=args.abort_every,
        kill_at=args.kill_at,
        kill_mode=args.kill_mode,
        kill_delay=args.kill_delay,
        pause=args.pause,
        deadline=args.deadline,
    )
    target = make_target(TargetOptions(target=args.target))
    failed = False
    with tempfile.TemporaryDirectory(prefix="txn-loop-") as work:
        started = time.monotonic()
        target.start()
        print(f"# {target.describe()} started in {time.monotonic() - started:.1f} s", flush=True)
        try:
            for client in args.client or ["python"]:
                try:
                    result = run_loop(target, client, plan, Path(work))
                except Exception as e:  # the next client still runs; the traceback on stderr
                    traceback.print_exc()
                    result = LoopResult(client, target.kind, problems=[f"loop broke: {e!r}"])
                print(result.line(), flush=True)
                failed |= not result.ok()
            served = versions_served(target)
            if served:
                print(f"# transaction requests served (api v version: count): {served}")
        finally:
            target.stop()
    return 1 if failed else 0


#: the APIs whose versions show which transaction protocol a client spoke
TXN_APIS = (
    "InitProducerId",
    "AddPartitionsToTxn",
    "AddOffsetsToTxn",
    "Produce",
    "EndTxn",
    "TxnOffsetCommit",
)


def versions_served(target: Target) -> dict[str, int]:
    """The reference's brokers' request counters (``kafka_network_requests_total``) for the
    transaction APIs, summed over the brokers now running (a restarted broker counts from its
    restart); {} for other targets."""
    import re
    import urllib.request

    cluster = getattr(target, "_cluster", None)
    if cluster is None:
        return {}
    out: dict[str, int] = {}
    line = re.compile(r'kafka_network_requests_total\{request="(\w+)",version="(\d+)"\} (\S+)')
    for node in cluster.broker_nodes():
        url = f"http://127.0.0.1:{node.config.metrics_port}/metrics"
        try:
            text = urllib.request.urlopen(url, timeout=5).read().decode()
        except OSError:
            continue
        for api, version, count in line.findall(text):
            if api in TXN_APIS:
                key = f"{api} v{version}"
                out[key] = out.get(key, 0) + int(float(count))
    return dict(sorted(out.items()))


if __name__ == "__main__":
    raise SystemExit(main())
