"""A classic-protocol group: its state, generation and members (its offsets: ``BaseGroup``),
and the JoinGroup / SyncGroup requests and answers the coordinator exchanges about it.

The states and their allowed predecessors are Kafka's (GroupMetadata.scala):

    Empty               <- PreparingRebalance
    PreparingRebalance  <- Empty, Stable, CompletingRebalance
    CompletingRebalance <- PreparingRebalance
    Stable              <- CompletingRebalance
    Dead                <- any

This module is bookkeeping only; the coordinator decides when to move.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from reference_impl.groups.group_types import BaseGroup
from reference_impl.groups.scheduler import Timer


class GroupState(Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_PREVIOUS = {
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
    GroupState.PREPARING_REBALANCE: {
        GroupState.EMPTY,
        GroupState.STABLE,
        GroupState.COMPLETING_REBALANCE,
    },
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.DEAD: set(GroupState),
}


class IllegalTransition(RuntimeError):
    pass


@dataclass
class JoinRequest:
    group_id: str
    member_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    group_instance_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    #: JoinGroup v4+: an unknown dynamic member first gets MEMBER_ID_REQUIRED
    require_known_member_id: bool = True
    #: JoinGroup v9+: a rejoining static leader may be told to skip the assignment
    supports_skip_assignment: bool = False
    reason: str | None = None


@dataclass
class JoinResult:
    error: int
    member_id: str = ""
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    #: (member id, group instance id, metadata): only in the leader's answer
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: (protocol name, metadata) in the member's order of preference
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    #: set while a JoinGroup / SyncGroup of this member waits for the rebalance
    join_callback: Callable[[Any], None] | None = None
    sync_callback: Callable[[Any], None] | None = None
    #: joined but never completed a rebalance: expires after the new-member join timeout
    is_new: bool = False
    heartbeat_timer: Timer | None = None

    @property
    def awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        raise KeyError(protocol)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return list(self.protocols) == list(protocols)

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        return next(name for name in self.protocol_names() if name in candidates)


@dataclass(eq=False)
class Group(BaseGroup):
    """A classic group (its offsets are ``BaseGroup``'s)."""

    state: GroupState = GroupState.EMPTY
    generation_id: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    #: group.instance.id -> member id
    static_members: dict[str, str] = field(default_factory=dict)
    #: member ids handed out with MEMBER_ID_REQUIRED, not yet joined (KIP-394), and their timers
    pending_members: dict[str, Timer | None] = field(default_factory=dict)
    #: members that got this generation's JoinGroup answer but have not sent SyncGroup yet
    pending_sync: set[str] = field(default_factory=set)
    #: a new member joined during the initial (delayed) rebalance: delay once more
    new_member_added: bool = False
    #: the pending rebalance is the initial delayed one (it never completes early)
    initial_join: bool = False
    join_timer: Timer | None = None
    sync_timer: Timer | None = None
    _supported: Counter = field(default_factory=Counter)

    group_type = "classic"

    @property
    def is_dead(self) -> bool:
        return self.state is GroupState.DEAD

    @property
    def is_empty(self) -> bool:
        return self.state is GroupState.EMPTY

    def transition(self, target: GroupState, now_ms: int = -1) -> None:
        if self.state not in _PREVIOUS[target]:
            raise IllegalTransition(
                f"group {self.group_id!r}: {self.state.value} -> {target.value} is not allowed"
            )
        self.state = target
        self.state_timestamp = now_ms

    def is_(self, *states: GroupState) -> bool:
        return self.state in states

    @property
    def size(self) -> int:
        return len(self.members)

    @property
    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has(self, member_id: str) -> bool:
        return member_id in self.members

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def all_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def not_yet_rejoined(self) -> list[Member]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if member.protocol_type != self.protocol_type:
            raise ValueError("a member's protocol type must match the group's")
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self._supported.update(member.protocol_names())
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        if member is not None:
            self._supported.subtract(member.protocol_names())
            if member.group_instance_id is not None:
                if self.static_members.get(member.group_instance_id) == member_id:
                    del self.static_members[member.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_sync.discard(member_id)
        return member

    def update_member(
        self,
        member: Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        callback: Callable[[Any], None] | None,
    ) -> None:
        self._supported.subtract(member.protocol_names())
        member.protocols = list(protocols)
        self._supported.update(member.protocol_names())
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        member.join_callback = callback

    def replace_static_member(self, instance_id: str, old_id: str, new_id: str) -> Member:
        """Give a static member a new member id (it rejoined without knowing its old one)."""
        member = self.members.pop(old_id)
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        self.static_members[instance_id] = new_id
        return member

    def static_member_id(self, instance_id: str | None) -> str | None:
        return None if instance_id is None else self.static_members.get(instance_id)

    def supports_protocols(self, protocol_type: str, names: list[str]) -> bool:
        if self.is_(GroupState.EMPTY):
            return bool(protocol_type) and bool(names)
        return protocol_type == self.protocol_type and any(
            self._supported[name] == len(self.members) for name in names
        )

    def candidate_protocols(self) -> set[str]:
        return {name for name, n in self._supported.items() if n == len(self.members) and n > 0}

    def select_protocol(self) -> str:
        """Every member votes for its preferred common protocol; the most votes wins.

        Ties go to the protocol first in the leader's preference order (Kafka leaves ties to
        hash-map order; any choice among the tied ones is Kafka-compatible).
        """
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id!r} has no protocol every member supports")
        votes = Counter(m.vote(candidates) for m in self.members.values())
        leader = self.members.get(self.leader_id or "") or next(iter(self.members.values()))
        order = {name: i for i, name in enumerate(leader.protocol_names())}
        return max(votes, key=lambda name: (votes[name], -order.get(name, len(order))))

    def elect_joined_leader(self) -> bool:
        """Keep the leader if it rejoined, else pick a member that did; False when none did."""
        if self.leader_id is None:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join:
                self.leader_id = member_id
                return True
        return False

    def init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition(GroupState.EMPTY, now_ms)
        self.pending_sync.clear()

    def current_member_metadata(self) -> list[tuple[str, str | None, bytes]]:
        """(member id, group instance id, metadata for the selected protocol) of every member."""
        assert self.protocol_name is not None
        return [
            (m.member_id, m.group_instance_id, m.metadata(self.protocol_name))
            for m in self.members.values()
        ]
