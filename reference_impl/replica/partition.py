"""One partition replica on this broker: role, leader epoch, ISR, high watermark, waiters.

As leader it tracks each follower's log end offset (learnt from the offsets its fetches ask
for) and when it last caught up; the high watermark is the smallest log end offset in the
maximal ISR (the committed ISR plus members being added). ISR changes go to the controller
as AlterPartition; while one is in flight a shrink is not yet applied (the larger ISR still
bounds the high watermark) and an expansion already is (Kafka's maximal ISR).

Waiters: an acks=all produce waits for the high watermark to pass its last offset; a fetch
long-poll waits for anything to change (new data, a new high watermark, a new role).
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time
from dataclasses import dataclass

from conformance.protocol import ErrorCode, KafkaError
from conformance.protocol.spec import ZERO_UUID
from reference_impl.data_plane import PartitionState
from reference_impl.log import PartitionLog

NONE, LEADER, FOLLOWER = "none", "leader", "follower"
_tiebreak = itertools.count()


def now_ms() -> float:
    return time.monotonic() * 1000


@dataclass
class FollowerState:
    broker_id: int
    leo: int = -1
    last_fetch_ms: float = 0.0
    last_fetch_leader_leo: int = -1
    last_caught_up_ms: float = 0.0


class Partition:
    def __init__(self, topic: str, index: int, log: PartitionLog, node_id: int) -> None:
        self.topic, self.index, self.log, self.node_id = topic, index, log, node_id
        self.topic_id = ZERO_UUID
        self.role = NONE
        self.leader_id = -1
        self.leader_epoch = -1
        self.partition_epoch = -1
        self.replicas: tuple[int, ...] = ()
        self.isr: tuple[int, ...] = ()
        self.maximal_isr: tuple[int, ...] = ()
        #: an AlterPartition in flight: the ISR proposed
        self.pending_isr: tuple[int, ...] | None = None
        self.high_watermark = 0
        self.leader_epoch_start_offset = 0
        self.followers: dict[int, FollowerState] = {}
        #: followers whose last fetch showed them caught up while outside the ISR
        self.join_candidates: set[int] = set()
        self._acks: list[tuple[int, int, asyncio.Future]] = []
        self._watchers: set[asyncio.Future] = set()

    def __repr__(self) -> str:
        return f"Partition({self.topic}-{self.index} {self.role} epoch {self.leader_epoch})"

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.index

    @property
    def is_leader(self) -> bool:
        return self.role == LEADER

    @property
    def log_end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def last_stable_offset(self) -> int:
        """The first offset of the earliest transaction not yet complete and replicated, else
        the high watermark (never above it): what read_committed consumers may read."""
        hw = self.high_watermark
        first = self.log.producers.first_unstable_offset(hw)
        return hw if first is None or first >= hw else first

    # -- role changes (LeaderAndIsr) -------------------------------------------------------

    def is_newer(self, st: PartitionState) -> bool:
        return (st.leader_epoch, st.partition_epoch) > (self.leader_epoch, self.partition_epoch)

    def make_leader(self, st: PartitionState) -> None:
        new_term = self.role != LEADER or st.leader_epoch != self.leader_epoch
        self._apply(st)
        if new_term:
            self.role = LEADER
            self.log.epochs.assign(st.leader_epoch, self.log.log_end_offset)
            self.leader_epoch_start_offset = self.log.log_end_offset
            t = now_ms()
            self.followers = {
                b: FollowerState(b, last_caught_up_ms=t if b in st.isr else 0.0)
                for b in st.replicas
                if b != self.node_id
            }
        else:
            for b in st.replicas:
                if b != self.node_id and b not in self.followers:
                    self.followers[b] = FollowerState(b)
            for b in list(self.followers):
                if b not in st.replicas:
                    del self.followers[b]
        self.pending_isr = None
        self.maximal_isr = self.isr
        self.join_candidates = set()
        self.maybe_increment_high_watermark()
        self.wake()

    def make_follower(self, st: PartitionState) -> None:
        was_leader = self.role == LEADER
        self._apply(st)
        self.role = FOLLOWER
        self.followers = {}
        self.pending_isr = None
        self.maximal_isr = self.isr
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)
        if was_leader:
            self.fail_waiters(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self.wake()

    def make_offline(self) -> None:
        self.role = NONE
        self.followers = {}
        self.fail_waiters(ErrorCode.NOT_LEADER_OR_FOLLOWER)
        self.wake()

    def _apply(self, st: PartitionState) -> None:
        self.topic_id = st.topic_id
        self.leader_id = st.leader
        self.leader_epoch = st.leader_epoch
        self.partition_epoch = st.partition_epoch
        self.replicas = tuple(st.replicas)
        self.isr = tuple(st.isr)

    def isr_committed(self, isr: tuple[int, ...], leader_epoch: int, partition_epoch: int) -> None:
        """The controller accepted an AlterPartition (its answer carries the new state)."""
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            return
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch
        self.pending_isr = None
        self.maximal_isr = self.isr
        self.maybe_increment_high_watermark()
        self.complete_acks()

    def isr_refused(self) -> None:
        self.pending_isr = None
        self.maximal_isr = self.isr
        self.complete_acks()

    # -- leader: followers ------------------------------------------------------------------

    def record_follower_fetch(self, replica_id: int, fetch_offset: int) -> None:
        """A follower asked for ``fetch_offset``: everything below it is in its log."""
        f = self.followers.get(replica_id)
        if f is None:
            return
        t = now_ms()
        leo = self.log.log_end_offset
        if fetch_offset >= leo:
            f.last_caught_up_ms = t
        elif fetch_offset >= f.last_fetch_leader_leo >= 0:
            f.last_caught_up_ms = max(f.last_caught_up_ms, f.last_fetch_ms)
        f.leo = min(fetch_offset, leo)
        f.last_fetch_leader_leo = leo
        f.last_fetch_ms = t
        self.maybe_increment_high_watermark()
        if replica_id not in self.maximal_isr and replica_id in self.ready_to_join():
            self.join_candidates.add(replica_id)

    def maybe_increment_high_watermark(self) -> bool:
        if self.role != LEADER:
            return False
        hw = self.log.log_end_offset
        for b in self.maximal_isr:
            if b == self.node_id:
                continue
            f = self.followers.get(b)
            hw = min(hw, f.leo if f is not None else -1)
        if hw > self.high_watermark:
            self.high_watermark = hw
            self.complete_acks()
            self.wake()
            return True
        return False

    def out_of_sync(self, lag_ms: float) -> list[int]:
        """ISR members that have not caught up with the log end for ``lag_ms``."""
        t = now_ms()
        return [
            b
            for b in self.isr
            if b != self.node_id
            and b in self.followers
            and t - self.followers[b].last_caught_up_ms > lag_ms
        ]

    def ready_to_join(self) -> list[int]:
        """Replicas outside the ISR whose log reaches the high watermark and this epoch (only
        those that fetched since are proposed: see ``join_candidates``)."""
        return [
            b
            for b, f in self.followers.items()
            if b not in self.maximal_isr
            and f.leo >= self.high_watermark
            and f.leo >= self.leader_epoch_start_offset
        ]

    def propose_isr(self, isr: tuple[int, ...]) -> None:
        self.pending_isr = isr
        # an expansion counts at once; a shrink only once the controller has committed it
        self.maximal_isr = tuple(sorted(set(self.isr) | set(isr)))

    # -- waiters ----------------------------------------------------------------------------

    def wait_committed(self, offset: int) -> asyncio.Future:
        """Resolves (with an error code) once the high watermark reaches ``offset``."""
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._acks, (offset, next(_tiebreak), fut))
        self.complete_acks()
        return fut

    def complete_acks(self) -> None:
        while self._acks and self._acks[0][0] <= self.high_watermark:
            _, _, fut = heapq.heappop(self._acks)
            if not fut.done():
                fut.set_result(ErrorCode.NONE)

    def fail_waiters(self, code: ErrorCode) -> None:
        acks, self._acks = self._acks, []
        for _, _, fut in acks:
            if not fut.done():
                fut.set_result(code)

    def watch(self, fut: asyncio.Future) -> None:
        self._watchers.add(fut)

    def unwatch(self, fut: asyncio.Future) -> None:
        self._watchers.discard(fut)

    def wake(self) -> None:
        if self._watchers:
            watchers, self._watchers = self._watchers, set()
            for fut in watchers:
                if not fut.done():
                    fut.set_result(None)

    # -- checks ----------------------------------------------------------------------------

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """Kafka's fencing of requests that name a leader epoch (-1: not named)."""
        if current_leader_epoch < 0 or current_leader_epoch == self.leader_epoch:
            return
        if current_leader_epoch < self.leader_epoch:
            raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, "leader epoch is older")
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, "leader epoch is newer")
