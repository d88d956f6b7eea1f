"""DURABILITY as a state machine: hypothesis draws a sequence of faults (kill -9 of the leader
or of a follower, a SIGSTOP of the leader, every dead broker started again, a group offset
committed, more records) while the steady idempotent acks=all producer of ``history`` runs; the
consumer's view is an invariant after every step (nothing read is replaced or gone), and the
whole history is judged once the faults are undone (DURABILITY.R1-R5). The run's seed draws the
sequence (recorded in the results), so a failing history replays with ``--seed``.

Bounded: one example of at most STEPS steps by default (``--examples`` raises it), each step a
few seconds at most; at most one broker down at a time, so the partition (three replicas,
min.insync.replicas 2) always keeps an in-sync replica.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.durability.faults import Faults, create_topic
from conformance.suite.durability.history import History, conclude, judge, read_partition
from conformance.suite.durability.shared import committed_offsets
from conformance.suite.groups.commits import commit
from conformance.suite.groups.members import find_coordinator
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.models import run_machine
from conformance.suite.kit.safety import fresh_name

REQS = ("DURABILITY.R1", "DURABILITY.R2", "DURABILITY.R3", "DURABILITY.R4", "DURABILITY.R5")
STEPS = 6
#: records wanted after each step, and how long they may take
MORE = 60
MORE_WITHIN = 60.0
#: a SIGSTOP of the leader in the model: until the partition has another leader (past the
#: broker's session) and a second more, at most this long (``Faults.pause_leader``; bounded by
#: twice the target's failure detection and 2 s where it states one)
PAUSE = 5.0


def durability_machine(harness: Harness) -> type:
    from hypothesis.stateful import (
        RuleBasedStateMachine,
        initialize,
        invariant,
        precondition,
        rule,
    )

    class DurabilityMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.runner = SimpleNamespace(on_failure=lambda e: None)
            self.faults = Faults(harness)
            self.faults.need_brokers(3)
            self.topic = fresh_name("durability-model")
            create_topic(self.faults, self.topic, 3, 2)
            self.group = fresh_name("durability-model-group")
            self.committed: dict[tuple[str, int], tuple[int, str | None]] = {}
            self.history = History(self.faults, self.topic, "sm").start()
            self.history.wait_acks(MORE, MORE_WITHIN, "DURABILITY.R1")

        def _guard(self, step: Any) -> None:
            try:
                step()
            except BaseException as e:
                self.runner.on_failure(e)
                raise

        def _down(self) -> bool:
            return bool(self.faults.dead or self.faults.paused)

        def _leader(self) -> int:
            view = self.faults.wait_partition(
                self.topic, lambda v: v.leader >= 0, "a leader", MORE_WITHIN
            )
            return view.leader

        @initialize()
        def a_first_fault(self) -> None:
            """Every example meets a fault, whatever the seed draws after it (a history of
            produce and commit steps alone would judge nothing of durability)."""
            self._kill(lambda leader: leader)

        def _kill(self, pick: Any) -> None:
            def step() -> None:
                self.faults.kill(pick(self._leader()))
                self.history.more(MORE, MORE_WITHIN, "DURABILITY.R1")

            self._guard(step)

        @precondition(lambda self: not self._down())
        @rule()
        def kill_leader(self) -> None:
            self._kill(lambda leader: leader)

        @precondition(lambda self: not self._down())
        @rule()
        def kill_follower(self) -> None:
            self._kill(lambda leader: next(b for b in self.faults.brokers if b != leader))

        @precondition(lambda self: not self._down())
        @rule()
        def pause_leader(self) -> None:
            def step() -> None:
                leader = self._leader()
                self.faults.pause_leader(self.topic, leader, self.faults.within(2, 2, PAUSE))
                self.history.more(MORE, MORE_WITHIN, "DURABILITY.R1")

            self._guard(step)

        @precondition(lambda self: bool(self.faults.dead))
        @rule()
        def restart(self) -> None:
            def step() -> None:
                for node in sorted(self.faults.dead):
                    self.faults.start(node)
                self.history.more(MORE, MORE_WITHIN, "DURABILITY.R1")

            self._guard(step)

        @precondition(lambda self: not self._down())  # FindCoordinator asks the bootstrap
        @rule()
        def commit_offset(self) -> None:
            def step() -> None:
                offset = len(self.history.acked)
                where = find_coordinator(
                    harness, self.group, harness.pick_version(ApiKey.FIND_COORDINATOR)
                )
                wanted = {(self.topic, 0): (offset, f"step {len(self.faults.log)}")}
                codes = commit(harness, harness.connect(where.endpoint), self.group, wanted)
                if set(codes.values()) == {ErrorCode.NONE}:
                    self.committed = wanted
                    self.faults.note(f"committed offset {offset}")

            self._guard(step)

        @invariant()
        def consumer_never_goes_back(self) -> None:
            def check() -> None:
                went = self.history.went_back
                verify.check(
                    not went,
                    f"{self.topic}-0 (faults: {'; '.join(self.faults.log)}): the consumer "
                    f"saw the partition go back: {went[:3]}",
                    "DURABILITY.R3",
                )

            self._guard(check)

        def teardown(self) -> None:
            def judge_all() -> None:
                try:
                    self.faults.restore()
                finally:
                    self.history.stop()
                log = read_partition(self.history, REQS)
                failed = judge(self.history, log, REQS)
                if self.committed:
                    have = committed_offsets(harness, self.group, self.topic)
                    if have == self.committed:
                        verify.check(True, "committed offsets read back", "DURABILITY.R5")
                    else:
                        failed.append(
                            (
                                "DURABILITY.R5",
                                f"DURABILITY.R5: OffsetFetch of {self.group} gives {have}; "
                                f"last committed {self.committed} (faults: "
                                f"{'; '.join(self.faults.log)})",
                            )
                        )
                conclude(failed)

            try:
                self._guard(judge_all)
            finally:
                self.faults.wire.close()

    return DurabilityMachine


@conformance("durability/state-machine", *REQS, api=ApiKey.PRODUCE, disruptive=True)
def test_durability_state_machine(harness: Harness) -> None:
    Faults(harness).need_brokers(3)
    examples = max(1, harness.examples // 5)  # the suite's default of 5 examples: one history
    run_machine(harness, durability_machine(harness), examples=examples, steps=STEPS)
