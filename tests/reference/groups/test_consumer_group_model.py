"""KIP-848 consumer groups as a state machine (hypothesis), on the coordinator library with a
manual clock: simulated members join, heartbeat (acting on each answer as a consumer does:
what it owns is what it was last given), change subscriptions, leave, crash, and time passes
(session 1 s, rebalance timeout 0.5 s) while topics grow. After every step:

* no partition is owned by two members, on the coordinator (assigned or pending revocation)
  nor among the live members (heartbeated within the session timeout, not removed meanwhile);
* a member's epoch never goes back while it stays in the group;
* after the live members heartbeat for a while (crashed ones' sessions end meanwhile), the group
  is Stable and every partition of the subscribed topics is owned by exactly one member
  subscribed to its topic.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from conformance.protocol import ErrorCode as E
from reference_impl.groups.consumer import HeartbeatRequest, HeartbeatResult
from reference_impl.groups.coordinator import GroupConfig, GroupCoordinator
from reference_impl.groups.scheduler import ManualScheduler
from reference_impl.groups.store import MemoryOffsetsStore

SESSION_MS, REBALANCE_MS = 1000, 500
NAMES = ("m1", "m2", "m3")
SUBSCRIPTIONS = (("t",), ("t", "u"), ("u",))


@dataclass
class Client:
    name: str
    joined: bool = False
    member_id: str = ""
    epoch: int = 0
    topics: tuple[str, ...] = ("t",)
    owned: dict[uuid.UUID, set[int]] = field(default_factory=dict)
    last_ok_ms: int = -(10**9)


class ConsumerGroupMachine(RuleBasedStateMachine):
    @initialize(
        assignor=st.sampled_from([None, "uniform", "range"]),
        interval=st.sampled_from([0, 1000]),
    )
    def start(self, assignor: str | None, interval: int) -> None:
        self.clock = ManualScheduler()
        self.topics = {"t": (uuid.UUID(int=1), 3), "u": (uuid.UUID(int=2), 2)}
        cfg = GroupConfig(
            offsets_topic_partitions=1,
            consumer_session_timeout_ms=SESSION_MS,
            consumer_assignment_interval_ms=interval,
        )
        store = MemoryOffsetsStore(self.clock.wall_ms)
        self.c = GroupCoordinator(self.clock, store, cfg, topics=lambda: dict(self.topics))
        self.c.finish_loading(0, self.c.start_loading(0), [])
        self.assignor = assignor
        self.clients = {n: Client(n) for n in NAMES}
        self.ids = 0

    def _send(self, client: Client, epoch: int, **fields) -> HeartbeatResult:
        req = HeartbeatRequest(
            "g", client.member_id, epoch, server_assignor=self.assignor, **fields
        )
        got: list[HeartbeatResult] = []
        self.c.consumer.heartbeat(req, got.append)
        assert len(got) == 1
        return got[0]

    def _apply(self, client: Client, r: HeartbeatResult) -> None:
        if r.error in (E.FENCED_MEMBER_EPOCH, E.UNKNOWN_MEMBER_ID):
            client.joined, client.owned = False, {}  # it abandons its partitions
            return
        assert r.error == 0, r
        assert r.member_epoch >= client.epoch, (client, r)
        client.epoch = r.member_epoch
        if r.assignment is not None:
            client.owned = {t: set(ps) for t, ps in r.assignment.items() if ps}
        client.last_ok_ms = self.clock.now_ms()

    @rule(name=st.sampled_from(NAMES), topics=st.sampled_from(SUBSCRIPTIONS))
    def join(self, name: str, topics: tuple[str, ...]) -> None:
        client = self.clients[name]
        if client.joined:
            return
        self.ids += 1
        client.member_id, client.epoch, client.topics = f"{name}-{self.ids}", 0, topics
        r = self._send(
            client,
            0,
            rebalance_timeout_ms=REBALANCE_MS,
            subscribed_topic_names=list(topics),
            topic_partitions=[],
        )
        client.joined = True
        self._apply(client, r)

    @rule(name=st.sampled_from(NAMES))
    def heartbeat(self, name: str) -> None:
        client = self.clients[name]
        if client.joined:
            owned = [(t, sorted(ps)) for t, ps in client.owned.items()]
            self._apply(client, self._send(client, client.epoch, topic_partitions=owned))

    @rule(name=st.sampled_from(NAMES), topics=st.sampled_from(SUBSCRIPTIONS))
    def resubscribe(self, name: str, topics: tuple[str, ...]) -> None:
        client = self.clients[name]
        if client.joined:
            client.topics = topics
            owned = [(t, sorted(ps)) for t, ps in client.owned.items()]
            r = self._send(
                client, client.epoch, subscribed_topic_names=list(topics), topic_partitions=owned
            )
            self._apply(client, r)

    @rule(name=st.sampled_from(NAMES))
    def leave(self, name: str) -> None:
        client = self.clients[name]
        if client.joined:
            r = self._send(client, -1)
            assert r.error in (0, E.UNKNOWN_MEMBER_ID), r
            client.joined, client.owned, client.epoch = False, {}, 0

    @rule(name=st.sampled_from(NAMES))
    def crash(self, name: str) -> None:
        client = self.clients[name]
        client.joined, client.owned, client.epoch = False, {}, 0  # the coordinator is not told

    @rule(ms=st.integers(0, 1200))
    def time_passes(self, ms: int) -> None:
        self.clock.advance(ms)

    @precondition(lambda self: self.topics["t"][1] < 6)
    @rule()
    def grow(self) -> None:
        tid, count = self.topics["t"]
        self.topics["t"] = (tid, count + 1)

    @rule()
    def settle(self) -> None:
        # the live members heartbeat every 300 ms for 3 s: crashed ones' sessions end
        for _ in range(10):
            for client in [c for c in self.clients.values() if c.joined]:
                self.heartbeat(client.name)
            self.clock.advance(300)
        for client in [c for c in self.clients.values() if c.joined]:
            self.heartbeat(client.name)
        live = [c for c in self.clients.values() if c.joined]
        if not live:
            return
        group = self.c.groups["g"]
        assert group.state == "Stable", (group.state, group.to_json())
        ids = {name: tid for name, (tid, _) in self.topics.items()}
        counts = {tid: n for tid, n in self.topics.values()}
        wanted = {(ids[t], p) for c in live for t in c.topics for p in range(counts[ids[t]])}
        got = [(t, p) for c in live for t, ps in c.owned.items() for p in ps]
        assert sorted(got) == sorted(wanted), (got, wanted)
        for c in live:
            assert all(t in {ids[n] for n in c.topics} for t in c.owned), c

    @invariant()
    def owned_once_on_the_coordinator(self) -> None:
        if not hasattr(self, "c") or "g" not in self.c.groups:
            return
        seen: set = set()
        for m in self.c.groups["g"].members.values():
            for t, ps in m.owns().items():
                for p in ps:
                    assert (t, p) not in seen, (t, p)
                    seen.add((t, p))

    @invariant()
    def owned_once_among_live_members(self) -> None:
        if not hasattr(self, "clients"):
            return
        now = self.clock.now_ms()
        members = self.c.groups["g"].members if "g" in self.c.groups else {}
        seen: set = set()
        for c in self.clients.values():
            # a member the coordinator removed (session or rebalance timeout) is a zombie until
            # its next heartbeat tells it so; Kafka's clients stop fetching on their own timers
            if not c.joined or now - c.last_ok_ms > SESSION_MS or c.member_id not in members:
                continue
            for t, ps in c.owned.items():
                for p in ps:
                    assert (t, p) not in seen, (c, t, p)
                    seen.add((t, p))


ConsumerGroupMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=30, deadline=None
)
test_consumer_group_state_machine = ConsumerGroupMachine.TestCase
