"""A steady idempotent acks=all producer and a consumer beside it, and the checks of what they
saw against the partition as it reads once the faults are undone (a Jepsen-style history).

The producer (a thread of its own) takes a producer id from InitProducerId and sends one batch
at a time to partition 0, sequences continuing, quickly while the test waits for acknowledgements
and at a trickle while it waits for the target; a batch that is not acknowledged is sent again
unchanged (same producer id, epoch, sequence) to whichever broker Metadata names as leader,
until it is acknowledged or RETRY_FOR is over (then the producer stops: its next sequence would
be a guess). After each acknowledgement it reads on from its consumer position, keeping what
each offset held and every high watermark it was given. Its values are unique
(``<tag>-<n>``), so a duplicate is a value read twice.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.records import CorruptRecordError
from conformance.suite.durability.faults import SHORT, Faults, Wire
from conformance.suite.idempotence.shared import NOT_READY_YET, idempotent
from conformance.suite.kit import verify
from conformance.suite.kit.partitions import FETCH_BYTES, PRODUCE_VERSIONS, records_of
from conformance.suite.kit.records_io import quiet_version

#: records per batch (a STEP of 200 acknowledgements is 20 batches: each batch, not each
#: record, costs a round of replication)
BATCH = 10
#: how long one batch is sent again before the producer gives up
RETRY_FOR = 45.0
#: answers after which the same batch is sent again (to the leader Metadata names then)
RETRIABLE = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.REQUEST_TIMED_OUT,
        ErrorCode.NOT_ENOUGH_REPLICAS,
        ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        ErrorCode.NETWORK_EXCEPTION,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.KAFKA_STORAGE_ERROR,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    }
)
#: most batches sent again after leader changes, per history
MAX_LATE = 3
#: a pause between batches while the test waits for acknowledgements (``wait_acks``), and
#: otherwise (while it waits for the target: an ISR shrink, an election, a node's start): a
#: stream that never stops, at a trickle that leaves the cores to the brokers (every batch is a
#: round of replication on each replica and a Fetch of the consumer)
PACE = 0.005
IDLE_PACE = 0.05
#: the producer's acks=all wait at the leader, and its own wait for the answer: a batch in
#: flight to a leader paused or killed meanwhile is given up after that and sent again, to
#: whichever broker Metadata names then (with 8 s, leader-pause on the reference waited 4 s
#: past the new leader's election, about one failure detection after the pause)
PRODUCE_TIMEOUT_MS = 3000
ANSWER_WITHIN = 4.0
#: a high watermark that has not moved for this long will not reach what was acknowledged
STILL = 5.0
#: most batches one history sends
MAX_BATCHES = 20_000
WIRE_ERRORS = (OSError, TimeoutError, ConnectionError)

Read = dict[int, bytes | None]


@dataclass
class History:
    """What was sent, acknowledged and read on one partition while the faults happened."""

    faults: Faults
    topic: str
    tag: str
    #: value -> offset its acknowledgement gave
    acked: dict[bytes, int] = field(default_factory=dict)
    #: batches acknowledged only after being sent more than once
    retried: int = 0
    #: why the producer stopped before it was told to (None: it was told)
    gave_up: str | None = None
    #: offset -> value, as the consumer read it during the faults
    seen: Read = field(default_factory=dict)
    #: the consumer's position and every high watermark it was given, in order
    position: int = 0
    watermarks: list[int] = field(default_factory=list)
    #: what the consumer saw that a partition must never show (a record replaced, a position
    #: refused as out of range)
    went_back: list[str] = field(default_factory=list)
    #: (first offset, offset answered) of each batch sent again after a leader change
    late_retries: list[tuple[int, int | None]] = field(default_factory=list)
    _routed: tuple[int, Any] | None = None
    _acked_by: int = -1
    #: acknowledgements the test waits for: the producer keeps PACE until there are as many
    _wanted: int = 0
    _hurry: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _error: BaseException | None = None

    # --- producing ----------------------------------------------------------------------------

    def __post_init__(self) -> None:
        harness = self.faults.harness
        self.produce_v = quiet_version(harness, ApiKey.PRODUCE, PRODUCE_VERSIONS)
        self.fetch_v = quiet_version(harness, ApiKey.FETCH, "4-12")
        self.wire = Wire(harness)  # the producer thread's own connections

    def high_watermark(self, wire: Wire) -> int | None:
        got = self.fetch(wire, 0)
        return got["HighWatermark"] if got is not None and got["ErrorCode"] == 0 else None

    def start(self) -> History:
        self.pid, self.epoch = self._producer_id()
        self._thread = threading.Thread(target=self._run, name="kc-durability", daemon=True)
        self._thread.start()
        return self

    def _producer_id(self) -> tuple[int, int]:
        """InitProducerId for idempotence, asked again while the answer is "not ready yet";
        the test cannot go on without an id (Failed: set-up, crediting nothing)."""
        harness = self.faults.harness
        version = quiet_version(harness, ApiKey.INIT_PRODUCER_ID)
        body = {
            "TransactionalId": None,
            "TransactionTimeoutMs": 60000,
            "ProducerId": -1,
            "ProducerEpoch": -1,
        }
        deadline = time.monotonic() + RETRY_FOR
        answer: dict[str, Any] = {}
        while time.monotonic() < deadline:
            ep = self.faults.live_endpoints()[0]
            try:
                answer = self.wire.request(ep, ApiKey.INIT_PRODUCER_ID, version, body)
            except WIRE_ERRORS:
                time.sleep(0.2)
                continue
            if answer["ErrorCode"] not in RETRIABLE | set(NOT_READY_YET):
                break
            time.sleep(0.2)
        if answer.get("ErrorCode") != ErrorCode.NONE or answer.get("ProducerId", -1) < 0:
            raise verify.Failed(
                f"InitProducerId v{version} gave no producer id ({answer}): the scenario "
                "needs an idempotent producer",
                "DURABILITY.R4",
            )
        return answer["ProducerId"], answer["ProducerEpoch"]

    def _route(self, refresh: bool) -> tuple[int, Any]:
        """The partition's leader and its endpoint, as Metadata last said (asked again when
        ``refresh``: after a failure, as a client does)."""
        if refresh or self._routed is None:
            view = self.faults.partition(self.topic, self.wire)
            self._routed = (view.leader, view.brokers.get(view.leader)) if view else (-1, None)
        return self._routed

    def _run(self) -> None:
        try:
            seq = 0
            previous: tuple[bytes, int, int] | None = None
            for _ in range(MAX_BATCHES):
                if self._stop.is_set():
                    return
                values = [f"{self.tag}-{seq + i}".encode() for i in range(BATCH)]
                batch = idempotent(self.pid, self.epoch, seq, values)
                base = self._send(batch)
                if base is None:
                    return
                for i, v in enumerate(values):
                    self.acked[v] = base + i
                if previous is not None and self._acked_by != previous[2]:
                    self._late_retry(*previous[:2])
                previous = (batch, base, self._acked_by)
                seq += BATCH
                self._consume()
                self._pause()
        except BaseException as e:  # the main thread reports it
            self._error = e

    def _pause(self) -> None:
        """PACE while the test waits for acknowledgements, else IDLE_PACE (cut short when it
        starts waiting)."""
        if len(self.acked) < self._wanted:
            time.sleep(PACE)
            return
        self._hurry.clear()
        if len(self.acked) >= self._wanted and not self._stop.is_set():
            self._hurry.wait(IDLE_PACE)

    def _late_retry(self, batch: bytes, base: int) -> None:
        """The batch acknowledged before the leader changed, sent again unchanged to the new
        leader (as a producer whose answer was lost does): a duplicate of one of the producer's
        last batches, which must be answered at its first offset and not appended again."""
        if len(self.late_retries) >= MAX_LATE:
            return
        again = self._send(batch)
        self.late_retries.append((base, again))

    def _send(self, batch: bytes) -> int | None:
        """The base offset the batch was acknowledged at; None once the producer gives up."""
        body = {
            "TransactionalId": None,
            "Acks": -1,
            "TimeoutMs": PRODUCE_TIMEOUT_MS,
            "TopicData": [{"Name": self.topic, "PartitionData": [{"Index": 0, "Records": batch}]}],
        }
        deadline = time.monotonic() + RETRY_FOR
        tries = 0
        last = "no leader"
        while time.monotonic() < deadline and not self._stop.is_set():
            tries += 1
            view_leader, ep = self._route(refresh=tries > 1)
            if ep is None:
                time.sleep(0.1)
                continue
            try:
                answer = self.wire.request(
                    ep, ApiKey.PRODUCE, self.produce_v, body, timeout=ANSWER_WITHIN
                )
            except WIRE_ERRORS as e:
                last = f"{ep}: {type(e).__name__} {e}"
                time.sleep(0.1)
                continue
            parts = [p for t in answer["Responses"] for p in t["PartitionResponses"]]
            if not parts:
                last = f"{ep}: an answer without the partition"
                time.sleep(0.1)
                continue
            part = parts[0]
            code = part["ErrorCode"]
            if code == ErrorCode.NONE:
                self.retried += tries > 1
                self._acked_by = view_leader
                return part["BaseOffset"]
            last = f"{ep}: error {code}"
            if code not in RETRIABLE:
                self.gave_up = f"a batch was refused with error {code}, not retriable"
                return None
            time.sleep(0.1)
        if not self._stop.is_set():
            self.gave_up = f"a batch was not acknowledged within {RETRY_FOR:.0f} s ({last})"
        return None

    # --- consuming ----------------------------------------------------------------------------

    def fetch(self, wire: Wire, offset: int, refresh: bool = False) -> dict[str, Any] | None:
        """Partition 0's Fetch entry from the leader at ``offset`` (None: no answer)."""
        _, ep = self._route(refresh)
        if ep is None:
            self._routed = None  # no leader yet: ask Metadata again next time
            return None
        part = {
            "Partition": 0,
            "FetchOffset": offset,
            "PartitionMaxBytes": FETCH_BYTES,
            "CurrentLeaderEpoch": -1,
            "LogStartOffset": -1,
            "LastFetchedEpoch": -1,
        }
        body = {
            "ReplicaId": -1,
            "MaxWaitMs": 0,
            "MinBytes": 0,
            "MaxBytes": FETCH_BYTES,
            "IsolationLevel": 0,
            "SessionId": 0,
            "SessionEpoch": -1,
            "Topics": [{"Topic": self.topic, "Partitions": [part]}],
            "ForgottenTopicsData": [],
            "RackId": "",
        }
        try:
            answer = wire.request(ep, ApiKey.FETCH, self.fetch_v, body, timeout=SHORT)
        except WIRE_ERRORS:
            self._routed = None
            return None
        parts = [p for t in answer["Responses"] for p in t["Partitions"]]
        return parts[0] if parts else None

    def _consume(self) -> None:
        got = self.fetch(self.wire, self.position)
        if got is None:
            return
        code = got["ErrorCode"]
        if code == ErrorCode.OFFSET_OUT_OF_RANGE:
            self.went_back.append(
                f"Fetch at offset {self.position}, the position after what was read, was "
                "refused OFFSET_OUT_OF_RANGE: the partition no longer holds what it gave"
            )
            return
        if code != ErrorCode.NONE:
            self._routed = None
            return
        self.watermarks.append(got["HighWatermark"])
        try:
            _, records = records_of(got["Records"])
        except CorruptRecordError:
            return
        for r in records:
            if r.offset < self.position:
                continue
            if r.offset in self.seen and self.seen[r.offset] != r.value:
                self.went_back.append(
                    f"offset {r.offset} held {self.seen[r.offset]!r}, later {r.value!r}"
                )
            self.seen[r.offset] = r.value
            self.position = r.offset + 1

    # --- the main thread's side ---------------------------------------------------------------

    def check_alive(self) -> None:
        if self._error is not None:
            raise self._error

    def wait_acks(self, n: int, timeout: float, *reqs: str) -> None:
        """Until ``n`` values are acknowledged; Failed naming ``reqs`` when the producer stops
        or the time is over."""
        self._wanted = max(self._wanted, n)
        self._hurry.set()
        deadline = time.monotonic() + timeout
        while len(self.acked) < n:
            self.check_alive()
            if self.gave_up is not None or time.monotonic() > deadline:
                why = self.gave_up or f"only {len(self.acked)} acknowledged in {timeout:.0f} s"
                raise verify.Failed(
                    f"{self.topic}-0: the acks=all producer wanted {n} acknowledged values: "
                    f"{why} (faults: {'; '.join(self.faults.log)})",
                    *reqs,
                )
            time.sleep(0.05)

    def more(self, n: int, timeout: float, *reqs: str) -> None:
        self.wait_acks(len(self.acked) + n, timeout, *reqs)

    def stop(self) -> None:
        self._stop.set()
        self._hurry.set()
        if self._thread is not None:
            self._thread.join(RETRY_FOR + 15)
        self.wire.close()
        self.check_alive()


def read_partition(history: History, reqs: tuple[str, ...], timeout: float = 60.0) -> list:
    """Every record of partition 0 from offset 0 up to a high watermark at least past every
    acknowledged offset (waited for: the ISR catches up after the faults), as (offset, value)."""
    wire = Wire(history.faults.harness)
    want = max(history.acked.values(), default=-1) + 1
    deadline = time.monotonic() + timeout
    out: list[tuple[int, bytes | None]] = []
    offset, hw = 0, -1
    moved: float | None = None  # when the high watermark last changed (first answer on)
    try:
        while True:
            got = history.fetch(wire, offset)
            if got is not None and got["ErrorCode"] == ErrorCode.NONE:
                if got["HighWatermark"] != hw:
                    hw, moved = got["HighWatermark"], time.monotonic()
                try:
                    _, records = records_of(got["Records"])
                except CorruptRecordError as e:
                    raise verify.Failed(
                        f"Fetch at {offset}: records do not decode: {e}", *reqs
                    ) from None
                new = [(r.offset, r.value) for r in records if r.offset >= offset]
                out.extend(new)
                if new:
                    offset = new[-1][0] + 1
                if offset >= hw >= want:
                    return out
            elif got is not None and got["ErrorCode"] != ErrorCode.OFFSET_OUT_OF_RANGE:
                history._routed = None  # not the leader (any more): ask Metadata again
            elif got is not None:
                raise verify.Failed(
                    f"{history.topic}-0: Fetch at offset {offset} refused OFFSET_OUT_OF_RANGE "
                    f"while {want} offsets were acknowledged",
                    *reqs,
                )
            if time.monotonic() > min(deadline, (moved or deadline) + STILL):
                return out
            time.sleep(0.1 if got is None or offset >= hw else 0)
    finally:
        wire.close()


def judge(history: History, log: list, reqs: tuple[str, ...]) -> list[tuple[str, str]]:
    """The history's checks of the requirements among ``reqs``: those that held are credited,
    those that failed returned as (requirement, message) for :func:`conclude`."""
    where = f"{history.topic}-0 (faults: {'; '.join(history.faults.log)})"
    failed: list[tuple[str, str]] = []

    def check(req: str, ok: bool, message: str) -> None:
        if req not in reqs or (ok and not log and req != "DURABILITY.R1"):
            return  # an empty partition shows nothing about order, duplicates or reads
        if req == "DURABILITY.R3" and ok and not history.seen:
            return  # the consumer read nothing (the target's Fetch gave no records): unjudged
        if ok:
            verify.check(True, message, req)
        else:
            failed.append((req, f"{req}: {message}"))

    offsets = [o for o, _ in log]
    gaps = [(a, b) for a, b in pairwise(offsets) if b != a + 1]
    start = offsets[0] if offsets else 0
    check(
        "DURABILITY.R2",
        not gaps and start == 0,
        f"read back {len(log)} records; offsets not contiguous from 0: first {start}, "
        f"breaks {gaps[:5]}",
    )
    at: dict[bytes | None, list[int]] = {}
    for o, v in log:
        at.setdefault(v, []).append(o)
    lost = {v: o for v, o in history.acked.items() if v not in at}
    moved = {v: (o, at[v]) for v, o in history.acked.items() if v in at and at[v] != [o]}
    check(
        "DURABILITY.R1",
        not lost and not moved,
        f"{len(history.acked)} values acknowledged (acks=all); {len(lost)} not read back "
        f"(e.g. {sorted(lost.items(), key=lambda x: x[1])[:3]}), {len(moved)} read elsewhere "
        f"than their acknowledged offset or more than once (e.g. {list(moved.items())[:3]})",
    )
    twice = {v: os_ for v, os_ in at.items() if len(os_) > 1}
    misplaced = [(a, b) for a, b in history.late_retries if a != b]
    check(
        "DURABILITY.R4",
        not twice and not misplaced,
        f"the idempotent producer's values appear more than once ({len(twice)}, e.g. "
        f"{list(twice.items())[:3]}); {history.retried} batches were retried; batches "
        f"acknowledged before a leader change and sent again after it (first offset, offset "
        f"answered): {history.late_retries}",
    )
    final = dict(log)
    replaced = [
        f"offset {o} read {v!r} during the faults, {final.get(o)!r} after"
        for o, v in history.seen.items()
        if o in final and final[o] != v
    ]
    vanished = [o for o in history.seen if o not in final]
    wm = history.watermarks
    backwards = [(a, b) for a, b in pairwise(wm) if b < a]
    check(
        "DURABILITY.R3",
        not (history.went_back or replaced or vanished or backwards),
        f"the consumer read {len(history.seen)} records during the faults; "
        f"{history.went_back[:3]} {replaced[:3]} {len(vanished)} offsets it read are gone "
        f"(e.g. {vanished[:3]}); high watermarks given lower than an earlier one "
        f"(earlier, later): {backwards[:3]}",
    )
    return [(r, f"{where}: {m}") for r, m in failed]


def conclude(failed: list[tuple[str, str]]) -> None:
    """Fail every requirement whose check failed, at once (none hiding another)."""
    if failed:
        raise verify.Failed(" | ".join(m for _, m in failed), *dict.fromkeys(r for r, _ in failed))
