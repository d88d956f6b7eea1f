"""Durability scenarios, each on a fresh topic (one partition, three replicas), each with its
faults undone before it ends (``Faults``: every broker serves again), bounded in time: at most
a few thousand batches and a minute or two per scenario. Disruptive: they run after every other
test of a run.

Each scenario runs the steady idempotent acks=all producer of ``history``, injects its faults,
undoes them, reads the partition back and judges the history (DURABILITY.R1-R4).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.durability.faults import Faults, create_topic
from conformance.suite.durability.history import History, conclude, judge, read_partition
from conformance.suite.durability.refusals import within_appended
from conformance.suite.durability.shared import committed_offsets
from conformance.suite.groups.commits import Offsets, commit
from conformance.suite.groups.members import find_coordinator
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import batch_bytes, now_ms
from conformance.suite.kit.safety import fresh_name

HISTORY = ("DURABILITY.R1", "DURABILITY.R2", "DURABILITY.R3", "DURABILITY.R4")
#: acknowledgements wanted between two faults, and how long they may take (a new leader is
#: elected within a broker session; a JVM broker restarts in seconds)
STEP = 200
STEP_WITHIN = 60.0
#: how long a killed follower may stay in the ISR (a ZooKeeper-mode Kafka drops it when its
#: ZooKeeper session expires, 18 s by default) and how long a follower started again may take to
#: catch up and rejoin it; where the target states its failure detection (its test-run
#: settings), the first is bounded by that instead (``isr_shrink``)
ISR_SHRINK = 45.0
ISR_BACK = 10.0
#: acks=all batches sent while the leader has not yet applied the smaller ISR, and its answers
#: to them: it waited for the dead follower, or appended and saw the ISR shrink after. Each
#: such batch waits REFUSED_WAIT_MS at the leader (its Produce TimeoutMs: Kafka 4.4.0 answered
#: the first batch after the shrink so, once per run), so NOT_YET of them cover at least
#: NOT_YET seconds of a leader that has not applied the shrink (as 3 more batches of 5 s did)
NOT_YET = 20
REFUSED_WAIT_MS = 1000
NOT_YET_APPLIED = (ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
#: SIGSTOP of a leader: until its partition has another leader (its broker session ended)
#: and a second more, at most this long where the target does not state its failure detection
#: (else twice that and 2 s, ``Faults.within``)
PAUSE = 8.0


def isr_shrink(faults: Faults) -> float:
    """How long a killed follower may stay in the ISR: three failure detections and 10 s
    where the target states its own, else ISR_SHRINK (Kafka's defaults)."""
    return faults.within(3, 10, ISR_SHRINK)


def scenario(harness: Harness, what: str, min_isr: int = 2) -> tuple[Faults, str]:
    faults = Faults(harness)
    faults.need_brokers(3)
    topic = fresh_name(f"durability-{what}")
    create_topic(faults, topic, 3, min_isr)
    return faults, topic


def finish(history: History, reqs: tuple[str, ...]) -> None:
    history.stop()
    log = read_partition(history, reqs)
    conclude(judge(history, log, reqs))


def around_the_leader(
    harness: Harness, what: str, tag: str, act: Callable[[Faults, History, int], None]
) -> None:
    """The steady producer, ``act`` on the partition's leader, more records, the faults
    undone, the history judged."""
    faults, topic = scenario(harness, what)
    with faults:
        h = History(faults, topic, tag).start()
        h.wait_acks(STEP, STEP_WITHIN, *HISTORY)
        old = faults.partition(topic)
        assert old is not None
        act(faults, h, old.leader)
        view = faults.partition(topic)
        faults.note(f"leader now {view.leader if view else '?'}")
        h.more(STEP, STEP_WITHIN, "DURABILITY.R1")
        faults.restore()
        finish(h, HISTORY)


@conformance(
    "durability/leader-kill/idempotent-producer", *HISTORY, api=ApiKey.PRODUCE, disruptive=True
)
def test_leader_kill_under_an_idempotent_producer(harness: Harness) -> None:
    def kill(faults: Faults, h: History, leader: int) -> None:
        faults.kill(leader)
        h.more(STEP, STEP_WITHIN, "DURABILITY.R1")  # a new leader took over
        faults.start(leader)

    around_the_leader(harness, "leader-kill", "lk", kill)


FOLLOWER = (*HISTORY, "DURABILITY.R6")
CLUSTER = (*HISTORY, "DURABILITY.R5")


@conformance("durability/follower-kill/isr-shrinks-and-grows", *FOLLOWER, disruptive=True)
def test_follower_kill_and_return(harness: Harness) -> None:
    reqs = FOLLOWER
    faults, topic = scenario(harness, "follower-kill")
    with faults:
        h = History(faults, topic, "fk").start()
        h.wait_acks(STEP, STEP_WITHIN, *HISTORY)
        before = faults.partition(topic)
        assert before is not None
        follower = next(r for r in before.replicas if r != before.leader)
        faults.kill(follower)
        try:
            shrunk = faults.wait_partition(
                topic,
                lambda v: follower not in v.isr,
                f"ISR without {follower}",
                isr_shrink(faults),
            )
            verify.check(
                shrunk.leader == before.leader,
                f"{topic}-0: killing follower {follower} moved the leader from "
                f"{before.leader} to {shrunk.leader}",
                "DURABILITY.R6",
            )
        except TimeoutError as e:
            raise verify.Failed(
                f"{topic}-0: follower {follower} killed: {e}", "DURABILITY.R6"
            ) from None
        h.more(STEP, STEP_WITHIN, "DURABILITY.R1")
        faults.start(follower)
        try:
            faults.wait_partition(
                topic,
                lambda v: sorted(v.isr) == sorted(before.replicas),
                f"ISR back to {sorted(before.replicas)}",
                ISR_BACK,
            )
            verify.check(True, "the ISR shrank without the follower and grew back", "DURABILITY.R6")
        except TimeoutError as e:
            raise verify.Failed(
                f"{topic}-0: follower {follower} started again: {e}", "DURABILITY.R6"
            ) from None
        h.more(STEP, STEP_WITHIN, "DURABILITY.R1")
        faults.restore()
        finish(h, reqs)


@conformance("durability/leader-pause/sigstop", *HISTORY, api=ApiKey.PRODUCE, disruptive=True)
def test_leader_paused_longer_than_its_session(harness: Harness) -> None:
    def pause(faults: Faults, h: History, leader: int) -> None:
        faults.pause_leader(h.topic, leader, faults.within(2, 2, PAUSE))

    around_the_leader(harness, "leader-pause", "lp", pause)


@conformance("durability/cluster-kill/restart", *CLUSTER, api=ApiKey.PRODUCE, disruptive=True)
def test_whole_cluster_kill_and_restart(harness: Harness) -> None:
    reqs = CLUSTER
    faults = Faults(harness)
    topic = fresh_name("durability-cluster-kill")
    replicas = min(3, len(faults.brokers))
    create_topic(faults, topic, replicas, min(2, replicas))
    group = fresh_name("durability-group")
    committed: Offsets = {(topic, 0): (7, "durability")}
    where = find_coordinator(harness, group, harness.pick_version(ApiKey.FIND_COORDINATOR))
    codes = commit(harness, harness.connect(where.endpoint), group, committed)
    verify.check(set(codes.values()) == {ErrorCode.NONE}, f"OffsetCommit: {codes}", "DURABILITY.R5")
    with faults:
        h = History(faults, topic, "ck").start()
        h.wait_acks(STEP, STEP_WITHIN, *HISTORY)
        for node in faults.brokers:
            faults.kill(node)
        for node in faults.target.fault_nodes("controller"):
            faults.kill(node)
        h.stop()
        faults.restore()
        log = read_partition(h, reqs)
        failed = judge(h, log, reqs)
        have = committed_offsets(harness, group, topic)
        if have == committed:
            verify.check(True, "committed offsets read back", "DURABILITY.R5")
        else:
            failed.append(
                (
                    "DURABILITY.R5",
                    f"DURABILITY.R5: after every broker was killed and started again, "
                    f"OffsetFetch of {group} gives {have}; committed {committed}",
                )
            )
        conclude(failed)


@conformance(
    "durability/controller-kill/failover-after", *HISTORY, api=ApiKey.PRODUCE, disruptive=True
)
def test_controller_kill(harness: Harness) -> None:
    faults, topic = scenario(harness, "controller-kill")
    with faults:
        controllers = faults.controllers()
        h = History(faults, topic, "cc").start()
        h.wait_acks(STEP, STEP_WITHIN, *HISTORY)
        for node in controllers:
            faults.kill(node)
        h.more(STEP // 2, STEP_WITHIN, "DURABILITY.R1")
        for node in controllers:
            faults.start(node)
        faults.restore()
        h.more(STEP // 2, STEP_WITHIN, "DURABILITY.R1")
        # the controller back: a leader's loss is handled again
        view = faults.partition(topic)
        assert view is not None
        faults.kill(view.leader)
        h.more(STEP, STEP_WITHIN, "DURABILITY.R1")
        faults.restore()
        finish(h, HISTORY)


@conformance(
    "durability/min-isr/not-enough-replicas", "DURABILITY.R7", api=ApiKey.PRODUCE, disruptive=True
)
def test_not_enough_replicas_appends_nothing(harness: Harness) -> None:
    # one broker cannot show it: Apache Kafka caps a partition's effective min.insync.replicas
    # at its replica count (Partition.effectiveMinIsr), so one replica always suffices
    faults, topic = scenario(harness, "min-isr", min_isr=3)
    with faults:
        h = History(faults, topic, "ne")
        h.start()
        h.wait_acks(20, STEP_WITHIN, "DURABILITY.R7")
        h.stop()
        wire = faults.wire
        # every batch answered, all acknowledged: the log's end, at least as far as both show
        hw = h.high_watermark(wire)
        end = max(hw if hw is not None else -1, max(h.acked.values(), default=-1) + 1)
        before = faults.partition(topic)
        assert before is not None
        follower = next(r for r in before.replicas if r != before.leader)
        faults.kill(follower)
        leader = before.brokers[before.leader]
        try:  # as the leader sees it: it refuses acks=all batches once it applied the shrink
            faults.wait_partition(
                topic,
                lambda v: follower not in v.isr,
                f"ISR without {follower}",
                isr_shrink(faults),
                at=leader,
            )
        except TimeoutError as e:
            raise verify.Failed(f"{topic}-0: {e}", "DURABILITY.R7") from None
        # the leader may apply the smaller ISR a moment after its Metadata shows it (Kafka
        # 3.4-3.6 under load: its AlterPartition answer arrives later; Partition.PendingShrinkIsr):
        # a batch it appended before is answered REQUEST_TIMED_OUT, or
        # NOT_ENOUGH_REPLICAS_AFTER_APPEND once the shrink lets the high watermark pass it. Each
        # such batch is followed by another, as another record, at most NOT_YET times. Those
        # records may be committed at any time after, even while a later batch is refused
        # NOT_ENOUGH_REPLICAS: the high watermark is judged against the attempts that may have
        # appended (``refusals``), the refused batches' records by their values once back
        answers: list[int] = []
        sent: list[bytes] = []
        for attempt in range(NOT_YET + 1):
            sent.append(b"refused-%d" % attempt)
            code = refused_produce(faults, topic, leader, sent[-1])
            answers.append(code)
            if code not in NOT_YET_APPLIED:
                break
        hw_after = h.high_watermark(wire)
        verify.check(
            code == ErrorCode.NOT_ENOUGH_REPLICAS,
            f"{topic}-0 (min.insync.replicas 3, follower {follower} killed): acks=all Produce "
            f"answered {answers} to {len(answers)} batches, expected 19 (NOT_ENOUGH_REPLICAS) "
            f"once the leader applied the smaller ISR (7 or 20 before, at most {NOT_YET} times)",
            "DURABILITY.R7",
        )
        held, why = within_appended(end, answers, hw_after)
        verify.check(held, f"{topic}-0: {why}", "DURABILITY.R7")
        faults.restore()
        faults.wait_partition(
            topic, lambda v: sorted(v.isr) == sorted(before.replicas), "ISR back", STEP_WITHIN
        )
        log = read_partition(h, ("DURABILITY.R7",))
        refused = {
            v for v, c in zip(sent, answers, strict=True) if c == ErrorCode.NOT_ENOUGH_REPLICAS
        }
        there = [(o, v) for o, v in log if v in refused]
        verify.check(
            not there,
            f"{topic}-0: batches refused NOT_ENOUGH_REPLICAS are in the partition (offset, "
            f"value) {there} once the replicas are back (answers {answers})",
            "DURABILITY.R7",
        )


def refused_produce(faults: Faults, topic: str, leader: Any, value: bytes = b"refused") -> int:
    """An acks=all batch of one record ``value`` to the leader: its error code."""
    batch = batch_bytes([(now_ms(), None, value)])
    body = {
        "TransactionalId": None,
        "Acks": -1,
        "TimeoutMs": REFUSED_WAIT_MS,
        "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": batch}]}],
    }
    version = faults.harness.pick_version(ApiKey.PRODUCE, "3-12")
    answer = faults.wire.request(leader, ApiKey.PRODUCE, version, body, timeout=10)
    return answer["Responses"][0]["PartitionResponses"][0]["ErrorCode"]


#: how long the suite watches a partition whose in-sync replicas are all down while replicas
#: that left the ISR are back: a clean controller elects none of them. Where the target states
#: its failure detection, the watch ends that long after every such replica is listed among the
#: brokers again (registered: an unclean controller would elect it then), within this bound,
#: and UNCLEAN_SETTLED after Metadata shows both the partition leaderless (its last in-sync
#: replica noticed dead) and every such replica listed: an unclean controller elects one as
#: soon as both hold, in the same metadata change (the reference) or the next
UNCLEAN_WATCH = 8.0
UNCLEAN_SETTLED = 1.0


@conformance(
    "durability/unclean-election/off-by-default",
    "DURABILITY.R1",
    "DURABILITY.R8",
    api=ApiKey.METADATA,
    disruptive=True,
)
def test_no_unclean_leader_election(harness: Harness) -> None:
    reqs = ("DURABILITY.R1", "DURABILITY.R8")
    faults, topic = scenario(harness, "unclean", min_isr=1)
    with faults:
        h = History(faults, topic, "ue").start()
        h.wait_acks(STEP // 2, STEP_WITHIN, *reqs)
        first = faults.partition(topic)
        assert first is not None
        leader = first.leader
        gone = [r for r in first.replicas if r != leader]
        for follower in gone:  # together: one failure detection for both
            faults.kill(follower)
        try:
            faults.wait_partition(
                topic,
                lambda v: not set(gone) & set(v.isr),
                f"ISR without {gone}",
                isr_shrink(faults),
            )
        except TimeoutError as e:
            raise verify.Failed(f"{topic}-0: {e}", "DURABILITY.R8") from None
        h.more(STEP // 2, STEP_WITHIN, *reqs)  # acknowledged by the leader alone
        h.stop()
        faults.kill(leader)  # the last in-sync replica
        killed = time.monotonic()
        faults.start_all(gone)
        faults.note(f"only {gone} (out of sync) running")
        deadline = time.monotonic() + UNCLEAN_WATCH
        known = faults.target.failure_detection_s
        listed = leaderless = False
        elected: list[int] = []
        while time.monotonic() < deadline and not elected:
            view = faults.partition(topic)
            if view is not None and view.leader in gone:
                elected.append(view.leader)
            elif known is not None and view is not None:
                leaderless = leaderless or view.leader == -1
                if not listed and set(gone) <= set(view.brokers):
                    # the out-of-sync replicas are registered again: an unclean controller
                    # elects one once it notices the leader dead (one detection after the
                    # kill); watched one detection past both
                    listed = True
                    deadline = min(deadline, max(killed + 2 * known, time.monotonic() + known))
                if listed and leaderless:
                    deadline = min(deadline, time.monotonic() + UNCLEAN_SETTLED)
            time.sleep(0.2)
        faults.restore()
        log = read_partition(h, reqs)
        failed = judge(h, log, ("DURABILITY.R1",))
        if elected:
            failed.append(
                (
                    "DURABILITY.R8",
                    f"DURABILITY.R8: {topic}-0: with its last in-sync replica {leader} down, "
                    f"replica {elected[0]}, which had left the ISR, was elected leader "
                    f"(faults: {'; '.join(faults.log)})",
                )
            )
        else:
            verify.check(True, "no out-of-sync replica elected", "DURABILITY.R8")
        conclude(failed)
