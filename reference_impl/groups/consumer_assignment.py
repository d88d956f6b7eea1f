"""KIP-848 consumer groups: the subscribed topics, the target assignment and one member's
reconciliation towards it (Kafka's ``TargetAssignmentBuilder`` and ``CurrentAssignmentBuilder``),
as functions of the group's bookkeeping (``consumer_group.py``). ``consumer.py`` calls them from
the heartbeat and keeps the timers.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter

from conformance.protocol.spec import ZERO_UUID
from reference_impl.groups.assignors import ASSIGNORS, DEFAULT_ASSIGNOR
from reference_impl.groups.consumer_group import (
    STABLE,
    UNRELEASED,
    UNREVOKED,
    ConsumerGroup,
    ConsumerMember,
    Partitions,
)
from reference_impl.groups.modern import copy_partitions

#: topic name -> (topic id, partition count)
Topics = dict[str, tuple[uuid.UUID, int]]

#: what a reconciliation step left the member doing
REVOKING, WAITING, RECONCILED = "revoking", "waiting", "reconciled"


def matching(member: ConsumerMember, topics: Topics) -> set[str]:
    """The topics the member subscribes to by name or by regex (internal topics aside)."""
    names = {t for t in member.subscribed_topic_names if t in topics}
    if member.subscribed_topic_regex:
        pattern = re.compile(member.subscribed_topic_regex)
        names |= {t for t in topics if not t.startswith("__") and pattern.fullmatch(t) is not None}
    return names


def subscribed_metadata(group: ConsumerGroup, topics: Topics) -> Topics:
    """Every topic some member subscribes to, with its id and partition count; a subscribed name
    that names no topic counts too (Kafka's metadata hash has it), as (nil id, 0)."""
    names: set[str] = set()
    for m in group.members.values():
        names |= matching(m, topics) | set(m.subscribed_topic_names)
    return {n: topics.get(n, (ZERO_UUID, 0)) for n in sorted(names)}


def preferred_assignor(group: ConsumerGroup) -> str:
    """The ServerAssignor most members name, else the default (uniform)."""
    votes = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
    return votes.most_common(1)[0][0] if votes else DEFAULT_ASSIGNOR


def compute_target(group: ConsumerGroup) -> None:
    """The target assignment for the group epoch, by the group's assignor."""
    topics = {n: t for n, t in group.subscribed.items() if t[1] > 0}
    subscriptions = {
        m.member_id: {topics[n][0] for n in matching(m, topics)} for m in group.members.values()
    }
    partitions = {tid: count for tid, count in topics.values()}
    assignor = ASSIGNORS[preferred_assignor(group)]
    statics = {m.member_id: m.instance_id for m in group.members.values() if m.instance_id}
    group.target = assignor.assign(subscriptions, partitions, group.target, statics)
    group.assignment_epoch = group.group_epoch


def reconcile(
    group: ConsumerGroup, member: ConsumerMember, owned: Partitions | None, changed: bool = False
) -> str:
    """One step of the member towards its target (Kafka's CurrentAssignmentBuilder): REVOKING
    (partitions to give back first, epoch unchanged), WAITING (it has not given them back yet)
    or RECONCILED (at the assignment epoch; partitions another member still owns come later).
    ``changed``: its subscription changed in this heartbeat, so a member the target does not
    move yet gives back at once the partitions of topics it no longer subscribes to."""
    target_epoch = group.assignment_epoch
    # a topic it no longer subscribes to is no part of its target, whatever the target says
    # (Kafka 4.4.0's computeNextAssignment, from its bytecode)
    ids = _subscribed_ids(group, member)
    target = {t: ps for t, ps in group.target.get(member.member_id, {}).items() if t in ids}
    if member.state == UNREVOKED:
        if _still_owns(owned, member.pending_revocation):
            return _unsubscribed_revoked(group, member, owned) if changed else WAITING
        member.pending_revocation = {}
    elif member.state == STABLE and member.member_epoch == target_epoch:
        return _unsubscribed_revoked(group, member, owned) if changed else RECONCILED
    keep: Partitions = {}
    revoke: Partitions = {}
    for t, ps in member.assigned.items():
        if ps & target.get(t, set()):
            keep[t] = ps & target.get(t, set())
        if ps - target.get(t, set()):
            revoke[t] = ps - target.get(t, set())
    if revoke:
        member.assigned, member.pending_revocation = keep, revoke
        member.state = UNREVOKED
        member.note_epochs()
        return REVOKING
    unreleased = False
    for t, ps in target.items():
        for p in ps - keep.get(t, set()):
            if group.owner(t, p, member.member_id) is None:
                keep.setdefault(t, set()).add(p)
            else:
                unreleased = True
    member.assigned = keep
    member.pending_revocation = {}
    if member.member_epoch != target_epoch:
        member.previous_member_epoch = member.member_epoch
        member.member_epoch = target_epoch
    member.state = UNRELEASED if unreleased else STABLE
    member.note_epochs()
    return RECONCILED


def _still_owns(owned: Partitions | None, revoked: Partitions) -> bool:
    """Whether the member (by what its heartbeat says it owns; unsaid: yes) still owns any."""
    return owned is None or any(ps & revoked.get(t, set()) for t, ps in owned.items())


def _unsubscribed_revoked(
    group: ConsumerGroup, member: ConsumerMember, owned: Partitions | None
) -> str:
    """Kafka 4.4.0 (``CurrentAssignmentBuilder.updateCurrentAssignment``, read from its bytecode):
    on a subscription change the member's partitions of topics it no longer subscribes to move to
    its pending revocation at once, before any new target (all of them when it subscribes to
    nothing); if it still owns any it is revoking them, else it just no longer has them."""
    ids = _subscribed_ids(group, member)
    stay = WAITING if member.state == UNREVOKED else RECONCILED
    if not ids and not member.pending_revocation:
        keep: Partitions = {}
        revoke = copy_partitions(member.assigned)
    else:
        gone = [t for t in member.assigned if t not in ids]
        if not gone:
            return stay
        keep = {t: set(ps) for t, ps in member.assigned.items() if t in ids}
        revoke = copy_partitions(member.pending_revocation)
        for t in gone:
            revoke[t] = revoke.get(t, set()) | member.assigned[t]
    member.assigned = keep
    if revoke and _still_owns(owned, revoke):
        member.pending_revocation = revoke
        member.state = UNREVOKED
        member.note_epochs()
        return REVOKING
    member.note_epochs()
    return stay


def _subscribed_ids(group: ConsumerGroup, member: ConsumerMember) -> set[uuid.UUID]:
    return {group.subscribed[n][0] for n in matching(member, group.subscribed)}
