"""How the consumer-groups-members model (``specs/models/consumer-groups-members.json``) meets a
target.

The entity is a fresh suite consumer group over two suite topics ("one" and "two"). Its members
are ``shared.Member``s, each on its own connection to the coordinator, heartbeating with the
partitions it owns; a round (join, leave, subscription change, static rejoin) is the request and
then every member heartbeating until the assignment has settled. The binding reports a round as
the flat answer the model expects and, after every answer, looks for what would break the
group's invariants: a partition held by two members at once (a member holds its assignment and,
until its next heartbeat acknowledges a revocation, what it acknowledged before), an epoch that
went back, partitions not owned once or owned outside the owner's subscription. The view is
ConsumerGroupDescribe from the coordinator with those findings.
"""

from __future__ import annotations

import time
from typing import Any

from conformance.protocol import ErrorCode
from conformance.suite.consumer_groups.shared import (
    SETTLE,
    ConsumerGroup,
    Member,
    set_group_configs,
    topic_ids,
)
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.models import Binding, ModelRunner
from conformance.suite.kit.safety import fresh_name

Pair = tuple[Any, int]


class ConsumerGroupBinding(Binding):
    count = 1

    def __init__(self, harness: Harness, topics: dict[str, int]) -> None:
        self.harness = harness
        #: topic name -> partitions; the first is "one", the second "two"
        self.partitions = topics
        self.names = list(topics)
        self.ids = topic_ids(harness, self.names)
        self.group = ConsumerGroup(harness, self.names[:1], fresh_name("cg-model"))
        # the group's target computed in the heartbeat that changes it, not at most every second
        # (Kafka 4.4.0's group config; one it refuses keeps the interval): which heartbeat first
        # sees a new target is then no matter of each target's speed (diff --models)
        try:
            set_group_configs(harness, self.group.name, {"consumer.assignment.interval.ms": "0"})
        except Exception:  # no GROUP configs at all: the interval it has
            pass
        self.members: list[Member] = []
        self.away: Member | None = None
        self.group_epoch = -1
        #: the first finding of the current round, by kind (Overlap, EpochBack, Uncovered)
        self.found: dict[str, str | None] = {}

    def entity_id(self, index: int) -> str:
        return self.group.name

    def duration(self, name: str) -> float:
        if name == "settle":
            return SETTLE
        raise KeyError(name)

    # --- what the members hold ------------------------------------------------------------------

    def holders(self) -> list[tuple[str, Member]]:
        out = [(f"member {i} ({m.member_id})", m) for i, m in enumerate(self.members)]
        if self.away is not None:
            out.append((f"static member away ({self.away.member_id})", self.away))
        return out

    def want(self) -> set[Pair]:
        topics = {t for _, m in self.holders() for t in (m.topics or self.names[:1])}
        return {(self.ids[t], p) for t in topics for p in range(self.partitions[t])}

    def overlap(self) -> str | None:
        seen: dict[Pair, str] = {}
        for who, m in self.holders():
            for tp in m.owned_pairs() | m.acked:
                if tp in seen:
                    where = f"partition {tp[1]} of {self.topic_name(tp[0])}"
                    return f"{where} held by {seen[tp]} and {who}"
                seen[tp] = who
        return None

    def epoch_back(self) -> str | None:
        for who, m in self.holders():
            if m is not self.away and m.epochs != sorted(m.epochs):
                return f"{who} was given epochs {m.epochs}"
        return None

    def uncovered(self) -> str | None:
        owned = [tp for _, m in self.holders() for tp in m.owned_pairs()]
        want = self.want()
        if sorted(owned, key=str) != sorted(want, key=str):
            missing = sorted((self.topic_name(t), p) for t, p in want - set(owned))
            extra = sorted((self.topic_name(t), p) for t, p in set(owned) - want)
            twice = len(owned) - len(set(owned))
            return f"owned once: missing {missing}, not subscribed {extra}, {twice} owned twice"
        for who, m in self.holders():
            ids = {self.ids[t] for t in (m.topics or self.names[:1])}
            outside = sorted(p for t, p in m.owned_pairs() if t not in ids)
            if outside:
                return f"{who} owns partitions {outside} of a topic it does not subscribe to"
        return None

    def topic_name(self, tid: Any) -> str:
        return next((n for n, i in self.ids.items() if i == tid), str(tid))

    def note(self, kind: str, finding: str | None) -> None:
        if finding is not None and self.found.get(kind) is None:
            self.found[kind] = finding

    def beat(self, m: Member, **override: Any) -> dict:
        got = self.group.heartbeat(m, **override)
        self.note("Overlap", self.overlap())
        self.note("EpochBack", self.epoch_back())
        return got

    def reconcile(self) -> bool:
        """Every member heartbeats until the assignment has settled (every subscribed partition
        owned once, as acknowledged, every member at the assignment epoch, the target computed
        for the group epoch) or SETTLE passes: whether it settled."""
        if not self.members:  # nothing to assign (an empty group's target is not recomputed)
            return True
        deadline = time.monotonic() + SETTLE
        while True:
            for m in self.members:
                got = self.beat(m)
                if got["ErrorCode"] != ErrorCode.NONE:
                    self.note("Uncovered", f"a heartbeat answered {got['ErrorCode']}")
                    return False
            g = self.group.describe()
            epochs = {m.epoch for m in self.members}
            settled = (
                self.uncovered() is None
                and all(m.acked == m.owned_pairs() for m in self.members)
                and g.get("AssignmentEpoch") == g.get("GroupEpoch")
                and epochs <= {g.get("AssignmentEpoch")}
            )
            if settled:
                return True
            if time.monotonic() > deadline:
                self.note("Uncovered", self.uncovered() or f"member epochs {sorted(epochs)}")
                return False
            time.sleep(0.2)

    def summary(self, got: dict, settled: bool | None = None, **more: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "ErrorCode": got["ErrorCode"],
            "MemberEpoch": got.get("MemberEpoch"),
            "Reconciled": settled,
            "Statics": sum(1 for m in self.members if m.instance_id) + (self.away is not None),
            **more,
        }
        for kind in ("Overlap", "EpochBack", "Uncovered"):
            out[kind] = self.found.get(kind)
        return out

    # --- requests -------------------------------------------------------------------------------

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        self.found = {}
        g = self.group
        if name == "join":
            m = g.new_member(fresh_name("instance") if body.get("Static") else None)
            m.topics = self.names[:1]
            got = self.beat(m)
            if got["ErrorCode"] != ErrorCode.NONE:
                m.conn.close()
                return self.summary(got)
            self.members.append(m)
            return self.summary(got, self.reconcile())
        if name == "heartbeat":
            codes = [self.beat(m)["ErrorCode"] for m in self.members]
            code = next((c for c in codes if c != ErrorCode.NONE), ErrorCode.NONE)
            return self.summary({"ErrorCode": code})
        if name in ("leave", "static-leave"):
            statics = [m for m in self.members if m.instance_id]
            m = self.members[-1] if name == "leave" else statics[0]
            got = g.heartbeat(m, MemberEpoch=body["MemberEpoch"])
            if got["ErrorCode"] != ErrorCode.NONE:
                return self.summary(got)
            m.epochs.pop()  # the -1 or -2 of its leave: it left, not back in time
            self.members.remove(m)
            if name == "static-leave":
                self.away = m
                self.note("Overlap", self.overlap())
                self.note("EpochBack", self.epoch_back())
                return self.summary(got)
            m.conn.close()
            return self.summary(got, self.reconcile())
        if name == "static-rejoin":
            away = self.away
            assert away is not None
            m = g.new_member(away.instance_id)
            m.topics = away.topics
            got = self.beat(m)
            if got["ErrorCode"] != ErrorCode.NONE:
                m.conn.close()
                return self.summary(got)
            self.away = None
            away.conn.close()
            self.members.append(m)
            settled = self.reconcile()
            same = m.owned_pairs() == away.owned_pairs()
            return self.summary(got, settled, SameAssignment=same)
        if name == "subscribe":
            m = self.members[0]
            m.topics = self.names if body["SubscribedTopicNames"] == "both" else self.names[:1]
            got = self.beat(m, full=True)
            if got["ErrorCode"] != ErrorCode.NONE:
                return self.summary(got)
            return self.summary(got, self.reconcile())
        raise KeyError(name)

    # --- the view -------------------------------------------------------------------------------

    def observe(self, name: str) -> dict[str, Any]:
        if name != "group":
            raise KeyError(name)
        g = self.group.described("CONSUMER-GROUPS.R13")
        if g is None:
            return {"ConsumerGroupDescribe": {}}
        described = g.get("Members") or []
        epoch = g["GroupEpoch"]
        problems = [p for p in (self.overlap(), self.epoch_back(), self.uncovered()) if p]
        if epoch < self.group_epoch:
            problems.append(f"group epoch {epoch} after {self.group_epoch}")
        self.group_epoch = max(epoch, self.group_epoch)
        ahead = [x["MemberEpoch"] for x in described if x["MemberEpoch"] > epoch]
        ahead += [m.epoch for m in self.members if m.epoch > epoch]
        if ahead:
            problems.append(f"group epoch {epoch} below member epochs {sorted(ahead)}")
        record = {"Members": len(described), "Problems": "; ".join(problems) or "none"}
        return {"ConsumerGroupDescribe": {0: record}}

    def cleanup(self, runner: ModelRunner | None = None) -> None:
        for _, m in self.holders():
            try:
                if not m.conn.closed:
                    self.group.heartbeat(m, MemberEpoch=-1)
                m.conn.close()
            except Exception:
                pass
        self.group.delete_quietly()
