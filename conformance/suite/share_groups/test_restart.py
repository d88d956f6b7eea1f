"""KIP-932 durability: what a share group acknowledged survives its brokers' kill -9.

One scenario, disruptive (it runs after every other test of a run): a one-replica topic (so
the partition's leader is the broker killed and started again, its share partition loaded
anew), six records, one member that accepts two, rejects one, releases one and holds two.
Then kill -9 of the partition's leader, the group's coordinator and, where the target names
one, the share partition's share coordinator (``FindCoordinator`` key type 2: Kafka 4.4.0's
``__share_group_state``); all started again; a new member of the same group reads the
partition until the four records not done are delivered again (bounded).
"""

from __future__ import annotations

import base64
import time
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.consumer_groups.shared import topic_ids
from conformance.suite.durability.faults import Faults, create_topic
from conformance.suite.groups.members import find_coordinator
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.records_io import produce
from conformance.suite.kit.safety import fresh_name
from conformance.suite.share_groups.shared import (
    ACCEPT,
    REJECT,
    RELEASE,
    ShareGroup,
    ShareSession,
    counts,
    partition_errors,
    served,
)

REQ = "SHARE-GROUPS.R21"
#: FindCoordinator's key type of a share partition's share coordinator (KIP-932)
SHARE_KEY = 2
#: how long the restarted brokers may take to deliver the records not done again (a share
#: partition is loaded from its share coordinator, itself loading its state topic)
BACK = 30.0


def share_coordinator(harness: Harness, group: str, topic_id: Any) -> int | None:
    """The node of the share partition's share coordinator, where the target names one
    (Kafka's key ``group:topicId:partition``, the id as Kafka prints it: URL-safe base64)."""
    printed = base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()
    try:
        where = find_coordinator(
            harness,
            f"{group}:{printed}:0",
            harness.pick_version(ApiKey.FIND_COORDINATOR),
            key_type=SHARE_KEY,
        )
    except verify.Failed:
        return None  # no share coordinator: the partition's leader keeps the state
    return where.node_id


def acquire_all(s: ShareSession, written: list[int], within: float) -> dict[int, int]:
    """ShareFetch until every offset of ``written`` was delivered or ``within`` s passed: each
    offset's delivery count at its first delivery."""
    got: dict[int, int] = {}
    deadline = time.monotonic() + within
    while not set(written) <= set(got) and time.monotonic() < deadline:
        for o, c in counts(s.fetch(wait_ms=300)).items():
            got.setdefault(o, c)
    return got


def kill_and_restart(faults: Faults, g: ShareGroup, topic: str, topic_id: Any) -> list[int]:
    """kill -9 of the partition's leader, the group's coordinator and the share coordinator
    (where named), all started again and serving: the nodes killed."""
    view = faults.partition(topic)
    assert view is not None, f"{topic}-0 has no leader"
    victims = {view.leader, g.coordinator.node_id}
    share = share_coordinator(faults.harness, g.name, topic_id)
    faults.note(f"share coordinator: {share if share is not None else 'none named'}")
    victims |= set() if share is None else {share}
    with faults:
        for node in sorted(victims):
            faults.kill(node)
        faults.restore()
    return sorted(victims)


@conformance(
    "share-groups/restart/acknowledged-stay-done", REQ, api=ApiKey.SHARE_FETCH, disruptive=True
)
def test_acknowledged_records_survive_a_kill(harness: Harness) -> None:
    served(harness)
    faults = Faults(harness)
    g = ShareGroup(harness, [])
    topic = fresh_name("sgrestart")
    g.topics = [topic]
    # on the group's coordinator: one broker to kill where it also keeps the share state
    create_topic(faults, topic, 1, 1, [g.coordinator.node_id])
    tid = topic_ids(harness, [topic])[topic]
    written = [a.offset for a in produce(harness, topic, [b"r%d" % i for i in range(6)])]
    accepted, rejected, released, held = written[:2], written[2:3], written[3:4], written[4:]
    g.configured({"share.auto.offset.reset": "earliest"}, REQ)
    m = g.new_member()
    g.join(m, {(tid, 0)}, REQ)
    s = ShareSession(g, m, topic, tid)
    before = acquire_all(s, written, 10)
    verify.check(
        set(written) <= set(before),
        f"ShareFetch before the kill acquired {sorted(before)} of {written}",
        REQ,
    )
    acks = [
        (accepted[0], accepted[-1], [ACCEPT]),
        (rejected[0], rejected[0], [REJECT]),
        (released[0], released[0], [RELEASE]),
    ]
    answer = s.acknowledge(acks)
    verify.check(
        answer["ErrorCode"] == ErrorCode.NONE and partition_errors(answer) == [(0, 0)],
        f"ShareAcknowledge {acks} before the kill: {answer}",
        REQ,
    )
    killed = kill_and_restart(faults, g, topic, tid)
    again = ShareGroup(harness, [topic], name=g.name)
    m2 = again.new_member()
    again.join(m2, {(tid, 0)}, REQ)
    faults.note("a new member holds the partition")
    s2 = ShareSession(again, m2, topic, tid)
    wanted = released + held
    after = acquire_all(s2, wanted, BACK)
    faults.note("records back")
    s2.close()
    again.leave(m2)
    seen = (
        f"before: delivery counts {before}, accepted {accepted}, rejected {rejected}, "
        f"released {released}, {held} held; kill -9 of nodes {killed}; after: {after} "
        f"({'; '.join(faults.log)})"
    )
    verify.check(
        not set(after) & set(accepted + rejected),
        f"records accepted or rejected before the kill were delivered again: {seen}",
        REQ,
    )
    verify.check(
        set(wanted) <= set(after),
        f"records released or held before the kill not delivered again within {BACK:.0f} s: {seen}",
        REQ,
    )
    verify.check(
        all(after[o] >= before[o] + (o in released) for o in set(wanted) & set(after)),
        f"a delivery count went back: {seen}",
        REQ,
    )
