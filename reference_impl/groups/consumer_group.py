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

import base64
import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from reference_impl.groups.group_types import cancel
from reference_impl.groups.modern import (
    ModernGroup,
    ModernMember,
    Partitions,
    copy_partitions,
    partitions_from_json,
    partitions_json,
)

STABLE = "stable"
UNREVOKED = "unrevoked_partitions"
UNRELEASED = "unreleased_partitions"

#: the member epoch of a static member leaving for now (-2; -1 is ``modern.LEAVE_EPOCH``)
STATIC_LEAVE_EPOCH = -2


@dataclass(eq=False)
class ConsumerMember(ModernMember):
    instance_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    state: str = STABLE
    pending_revocation: Partitions = field(default_factory=dict)
    #: topic id -> partition -> the member epoch it was given to the member at (KIP-1251)
    epochs: dict[uuid.UUID, dict[int, int]] = field(default_factory=dict)
    rebalance_timer: object | None = None
    #: a member of the classic protocol (JoinGroup, online migration): its session timeout
    #: and (protocol name, metadata) in its order of preference; None for a KIP-848 member
    classic_session_timeout_ms: int | None = None
    classic_protocols: list[tuple[str, bytes]] | None = None
    #: a classic member's timer: its SyncGroup must follow its JoinGroup within the rebalance
    #: timeout, its JoinGroup follow a REBALANCE_IN_PROGRESS heartbeat
    classic_timer: object | None = None

    STRUCTURED: ClassVar[tuple[str, ...]] = (
        "assigned",
        "pending_revocation",
        "epochs",
        "classic_protocols",
    )

    @property
    def uses_classic(self) -> bool:
        return self.classic_protocols is not None

    def cancel_timers(self) -> None:
        super().cancel_timers()
        cancel(self.rebalance_timer)
        self.rebalance_timer = None
        cancel(self.classic_timer)
        self.classic_timer = None

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
            **super().to_json(),
            "instance_id": self.instance_id,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "subscribed_topic_regex": self.subscribed_topic_regex,
            "server_assignor": self.server_assignor,
            "state": self.state,
            "pending_revocation": partitions_json(self.pending_revocation),
            "epochs": {str(t): {str(p): e for p, e in ps.items()} for t, ps in self.epochs.items()},
            "classic_session_timeout_ms": self.classic_session_timeout_ms,
            "classic_protocols": None
            if self.classic_protocols is None
            else [[n, base64.b64encode(m).decode()] for n, m in self.classic_protocols],
        }

    @classmethod
    def structured_from_json(cls, d: dict) -> dict:
        return {
            **super().structured_from_json(d),
            "pending_revocation": partitions_from_json(d.get("pending_revocation", {})),
            "epochs": {
                uuid.UUID(t): {int(p): int(e) for p, e in ps.items()}
                for t, ps in d.get("epochs", {}).items()
            },
            "classic_protocols": None
            if d.get("classic_protocols") is None
            else [(n, base64.b64decode(m)) for n, m in d["classic_protocols"]],
        }


@dataclass(eq=False)
class ConsumerGroup(ModernGroup[ConsumerMember]):
    #: instance id -> member id
    static_members: dict[str, str] = field(default_factory=dict)

    group_type = "consumer"
    member_type = ConsumerMember

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
        super().add(member)
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove(self, member_id: str) -> ConsumerMember | None:
        member = super().remove(member_id)
        if member is not None and member.instance_id is not None:
            if self.static_members.get(member.instance_id) == member_id:
                del self.static_members[member.instance_id]
        return member

    def uses_classic_only(self, but: str | None = None) -> bool:
        """Whether every member other than ``but`` uses the classic protocol."""
        return all(m.uses_classic for m in self.members.values() if m.member_id != but)

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
