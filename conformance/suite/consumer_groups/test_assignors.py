"""KIP-848's server-side assignors on the wire: the ServerAssignor a member names is the one that
assigns (``range`` and ``uniform`` give their documented shapes), and one the target does not
have is refused with UNSUPPORTED_ASSIGNOR."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.consumer_groups.shared import (
    ConsumerGroup,
    Member,
    converge,
    joined,
    topic_ids,
)
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import Topics
from conformance.suite.kit.safety import fresh_name

#: two topics of three partitions, two members subscribed to both: range gives the member first
#: in member-id order partitions 0-1 of each topic (4) and the other partition 2 of each (2);
#: uniform gives each member 3
PARTITIONS = 3


def shape(harness: Harness, assignor: str, names: list[str], want: set) -> list[Member]:
    g = ConsumerGroup(harness, names)
    members = []
    for _ in range(2):
        m = g.new_member()
        got = g.heartbeat(m, ServerAssignor=assignor)
        if got["ErrorCode"] == ErrorCode.NONE:
            members.append(m)
        else:
            joined(harness, g, m, f"member of a group with ServerAssignor {assignor!r}")
    converge(harness, g, members, want, f"assignor {assignor}", "CONSUMER-GROUPS.R15")
    for m in members:
        g.heartbeat(m, MemberEpoch=-1)
    return sorted(members, key=lambda m: m.member_id)


@conformance(
    "consumer-groups/heartbeat/server-assignor",
    "CONSUMER-GROUPS.R15",
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_server_assignor(harness: Harness) -> None:
    probe = ConsumerGroup(harness, [fresh_name("cg-topic")])
    x = probe.new_member()
    got = probe.heartbeat(x, ServerAssignor=fresh_name("no-such-assignor"))
    if got["ErrorCode"] == ErrorCode.NONE:
        probe.heartbeat(x, MemberEpoch=-1)
    elif got["ErrorCode"] == ErrorCode.UNSUPPORTED_VERSION:
        joined(harness, probe, x, "probe member")  # Unsupported: no consumer protocol served
    verify.soft(
        harness,
        got["ErrorCode"] == ErrorCode.UNSUPPORTED_ASSIGNOR,
        f"join naming an unknown ServerAssignor: error {got['ErrorCode']} "
        f"({got.get('ErrorMessage')}); expected UNSUPPORTED_ASSIGNOR",
        "CONSUMER-GROUPS.R15",
    )
    with Topics(harness, "cg-assign", 2, PARTITIONS, exact=True) as topics:
        names = topics.names
        ids = topic_ids(harness, names)
        want = {(ids[n], p) for n in names for p in range(PARTITIONS)}
        first, second = shape(harness, "range", names, want)
        ranges = [{n: sorted(m.owned.get(ids[n], ())) for n in names} for m in (first, second)]
        expected = [{n: [0, 1] for n in names}, {n: [2] for n in names}]
        verify.soft(
            harness,
            ranges == expected,
            f"ServerAssignor 'range', 2 members (in member-id order) on 2 topics of {PARTITIONS} "
            f"partitions: they own {ranges}; range's shape is {expected}",
            "CONSUMER-GROUPS.R15",
        )
        counts = sorted(len(m.owned_pairs()) for m in shape(harness, "uniform", names, want))
        verify.soft(
            harness,
            counts == [PARTITIONS, PARTITIONS],
            f"ServerAssignor 'uniform', 2 members on 2 topics of {PARTITIONS} partitions: they "
            f"own {counts} partitions; uniform's shape is {PARTITIONS} each",
            "CONSUMER-GROUPS.R15",
        )
