"""A KIP-848 consumer group: its epochs, members, target assignment (bookkeeping only).

Kafka's ``ConsumerGroup`` / ``ConsumerGroupMember``: the group epoch advances when the members
or their subscriptions (or the subscribed topics' partitions) change; the assignment epoch is
the group epoch the target assignment was computed for; each member has its own epoch, which
reaches the assignment epoch once it is reconciled. A member owns its assigned partitions and
those pending revocation; a partition is given to a member only once no other member owns it.

States (``ConsumerGroup.ConsumerGroupState``): Empty (no member), Assigning (the target is
older than the group epoch), Reconciling (a member has not reached the target), Stable, Dead.
Member states (``MemberState``): stable, unrevoked_partitions (it must give partitions back
first), unreleased_partitions (it waits for partitions another member still owns).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from reference_impl.groups.group_types import BaseGroup

#: topic id -> partitions
Partitions = dict[uuid.UUID, set[int]]

STABLE = "stable"
UNREVOKED = "unrevoked_partitions"
UNRELEASED = "unreleased_partitions"

#: the member epochs of a leaving member (-1) and of a static member leaving for now (-2)
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


def copy_partitions(p: Partitions) -> Partitions:
    return {t: set(ps) for t, ps in p.items() if ps}


def partitions_json(p: Partitions) -> dict[str, list[int]]:
    return {str(t): sorted(ps) for t, ps in p.items() if ps}


def partitions_from_json(d: dict[str, list[int]]) -> Partitions:
    return {uuid.UUID(t): set(ps) for t, ps in d.items()}


@dataclass(eq=False)
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: list[str] = field(default_factory=list)
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: str = STABLE
    assigned: Partitions = field(default_factory=dict)
    pending_revocation: Partitions = field(default_factory=dict)
    #: topic id -> partition -> the member epoch it was given to the member at (KIP-1251)
    epochs: dict[uuid.UUID, dict[int, int]] = field(default_factory=dict)
    session_timer: object | None = None
    rebalance_timer: object | None = None

    def note_epochs(self) -> None:
        """Partitions it newly owns get the member's epoch; those it gave back are forgotten."""
        owned = self.owns()
        self.epochs = {
            t: {p: self.epochs.get(t, {}).get(p, self.member_epoch) for p in ps}
            for t, ps in owned.items()
        }

    def owns(self) -> Partitions:
        """Assigned and pending revocation: what the member may still be consuming."""
        out = copy_partitions(self.assigned)
        for t, ps in self.pending_revocation.items():
            out.setdefault(t, set()).update(ps)
        return out

    def to_json(self) -> dict:
        return {
            "member_id": self.member_id,
            "instance_id": self.instance_id,
            "rack_id": self.rack_id,
            "client_id": self.client_id,
            "client_host": self.client_host,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "subscribed_topic_names": list(self.subscribed_topic_names),
            "subscribed_topic_regex": self.subscribed_topic_regex,
            "server_assignor": self.server_assignor,
            "member_epoch": self.member_epoch,
            "previous_member_epoch": self.previous_member_epoch,
            "state": self.state,
            "assigned": partitions_json(self.assigned),
            "pending_revocation": partitions_json(self.pending_revocation),
            "epochs": {str(t): {str(p): e for p, e in ps.items()} for t, ps in self.epochs.items()},
        }

    @classmethod
    def from_json(cls, d: dict) -> ConsumerMember:
        structured = ("assigned", "pending_revocation", "epochs")
        plain = {k: v for k, v in d.items() if k not in structured}
        return cls(
            **plain,
            assigned=partitions_from_json(d.get("assigned", {})),
            pending_revocation=partitions_from_json(d.get("pending_revocation", {})),
            epochs={
                uuid.UUID(t): {int(p): int(e) for p, e in ps.items()}
                for t, ps in d.get("epochs", {}).items()
            },
        )


@dataclass(eq=False)
class ConsumerGroup(BaseGroup):
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    #: instance id -> member id
    static_members: dict[str, str] = field(default_factory=dict)
    #: member id -> its partitions in the target assignment
    target: dict[str, Partitions] = field(default_factory=dict)
    #: topic name -> (topic id, partition count) of every subscribed topic, as last seen
    subscribed: dict[str, tuple[uuid.UUID, int]] = field(default_factory=dict)
    dead: bool = False
    #: when the target was last computed (scheduler ms; not stored: a reload computes at once)
    assigned_at_ms: int = -(2**62)

    group_type = "consumer"

    @property
    def is_dead(self) -> bool:
        return self.dead

    @property
    def is_empty(self) -> bool:
        return not self.members

    @property
    def state(self) -> str:
        if self.dead:
            return "Dead"
        if not self.members:
            return "Empty"
        if self.group_epoch != self.assignment_epoch:
            return "Assigning"
        if any(
            m.member_epoch != self.assignment_epoch or m.state != STABLE
            for m in self.members.values()
        ):
            return "Reconciling"
        return "Stable"

    def add(self, member: ConsumerMember) -> None:
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = self.members.pop(member_id, None)
        self.target.pop(member_id, None)
        if member is not None and member.instance_id is not None:
            if self.static_members.get(member.instance_id) == member_id:
                del self.static_members[member.instance_id]
        return member

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        if instance_id is None:
            return None
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def owner(self, topic: uuid.UUID, partition: int, but: str) -> str | None:
        """The member other than ``but`` that still owns the partition (assigned or pending
        revocation), if any."""
        for m in self.members.values():
            if m.member_id == but:
                continue
            if partition in m.assigned.get(topic, ()) or partition in m.pending_revocation.get(
                topic, ()
            ):
                return m.member_id
        return None

    def to_json(self) -> dict:
        return {
            "group_epoch": self.group_epoch,
            "assignment_epoch": self.assignment_epoch,
            "members": [m.to_json() for m in self.members.values()],
            "target": {m: partitions_json(p) for m, p in self.target.items()},
            "subscribed": {n: [str(t), c] for n, (t, c) in self.subscribed.items()},
        }

    def restore(self, d: dict) -> None:
        self.group_epoch = int(d.get("group_epoch", 0))
        self.assignment_epoch = int(d.get("assignment_epoch", 0))
        for m in d.get("members", []):
            self.add(ConsumerMember.from_json(m))
        self.target = {m: partitions_from_json(p) for m, p in d.get("target", {}).items()}
        self.subscribed = {
            n: (uuid.UUID(t), int(c)) for n, (t, c) in d.get("subscribed", {}).items()
        }
