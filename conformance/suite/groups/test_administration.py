"""Group administration on the wire: DescribeGroups states and members, ListGroups (with the
state filter where advertised), DeleteGroups of non-empty, empty and unknown groups."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.groups.commits import commit, fetch
from conformance.suite.groups.members import (
    PROTOCOL_NAME,
    PROTOCOL_TYPE,
    Group,
    Round,
    delete_groups,
    list_everywhere,
)
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.partitions import oldest_and_newest
from conformance.suite.kit.provision import delete_topics, obtain
from conformance.suite.kit.safety import fresh_name

SETTLE = 10.0


def state_of(g: Group) -> str:
    return g.describe()["GroupState"]


def wait_state(g: Group, want: str, leaving: str) -> str:
    """The described state once it is no longer ``leaving`` (bounded)."""
    deadline = time.monotonic() + SETTLE
    state = state_of(g)
    while state == leaving and time.monotonic() < deadline:
        time.sleep(0.02)
        state = state_of(g)
    return state


@conformance(
    "groups/describe/states-and-members",
    "GROUPS.R13",
    "GROUPS.R14",
    "GROUPS.R21",
    api=ApiKey.DESCRIBE_GROUPS,
)
def test_describe_follows_the_group(harness: Harness) -> None:
    g = Group(harness)
    # the absent group at the oldest and the newest version advertised (issue 37): they differ
    for v in oldest_and_newest(harness, ApiKey.DESCRIBE_GROUPS, "0+"):
        got = g.describe(v)
        # version 6 (Kafka 4.x) names the absence: GROUP_ID_NOT_FOUND, the state still Dead
        absent = ErrorCode.NONE if v <= 5 else ErrorCode.GROUP_ID_NOT_FOUND
        verify.soft(
            harness,
            got["ErrorCode"] == absent and got["GroupState"] == "Dead",
            f"DescribeGroups v{v} of a group that does not exist: error {got['ErrorCode']}, "
            f"state {got['GroupState']!r}; expected {absent} and Dead",
            "GROUPS.R13",
        )
    v = harness.pick_version(ApiKey.DESCRIBE_GROUPS)
    try:
        a, b = g.new_member(), g.new_member()
        g.rebalance(joining=[a])
        verify.soft(
            harness,
            state_of(g) == "Stable",
            f"one synced member: state {state_of(g)!r}",
            "GROUPS.R13",
        )
        # a second member starts a rebalance: PreparingRebalance until everyone rejoins
        if g.versions[11] >= 4:
            g.ask_member_id(b)
        pending_b = g.join(b)
        state = wait_state(g, "PreparingRebalance", "Stable")
        verify.soft(
            harness,
            state == "PreparingRebalance",
            f"DescribeGroups v{v} while a new member waits to join: state {state!r}",
            "GROUPS.R13",
        )
        hb = g.heartbeat(a)
        verify.soft(
            harness, hb == ErrorCode.REBALANCE_IN_PROGRESS, f"heartbeat answered {hb}", "GROUPS.R13"
        )
        pending_a = g.join(a)
        r = Round()
        g.members = [a, b]
        for m, fut in ((a, pending_a), (b, pending_b)):
            body = g.finish(m, 11, fut)
            r.joins[m.client_id] = body
            m.member_id, m.generation, m.leader = (
                body["MemberId"],
                body["GenerationId"],
                body["Leader"],
            )
        state = state_of(g)
        verify.soft(
            harness,
            state == "CompletingRebalance",
            f"DescribeGroups v{v} after every JoinGroup was answered, before the leader's "
            f"SyncGroup: state {state!r}",
            "GROUPS.R13",
        )
        g.sync_all(r)
        got = g.describe()
        verify.soft(
            harness,
            got["GroupState"] == "Stable",
            f"DescribeGroups v{v} after SyncGroup: state {got['GroupState']!r}",
            "GROUPS.R13",
        )
        verify.check(
            got["ProtocolType"] == PROTOCOL_TYPE and got["ProtocolData"] == PROTOCOL_NAME,
            f"DescribeGroups v{v}: protocol type {got['ProtocolType']!r} and protocol "
            f"{got['ProtocolData']!r}; the members joined with {PROTOCOL_TYPE!r}, "
            f"{PROTOCOL_NAME!r}",
            "GROUPS.R14",
        )
        want = {
            m.member_id: (m.client_id, m.metadata, r.assigned.get(m.member_id)) for m in g.members
        }
        have = {
            x["MemberId"]: (x["ClientId"], x["MemberMetadata"], x["MemberAssignment"])
            for x in got["Members"]
        }
        verify.check(
            have == want,
            f"DescribeGroups v{v} members (id: client id, metadata, assignment) {have}; "
            f"expected {want}",
            "GROUPS.R14",
        )
        g.leave_all()
        state = state_of(g)
        verify.soft(
            harness,
            state == "Empty",
            f"DescribeGroups v{v} after every member left: {state!r}",
            "GROUPS.R13",
        )
    finally:
        g.cleanup()


@conformance(
    "groups/list-and-delete",
    "GROUPS.R15",
    "GROUPS.R16",
    "GROUPS.R17",
    "GROUPS.R18",
    "GROUPS.R19",
    "GROUPS.R21",
    api=ApiKey.LIST_GROUPS,
)
def test_list_and_delete(harness: Harness) -> None:
    """A stable group and an empty one (made by a simple commit): listed as they are; the
    stable one cannot be deleted, the empty one can and then disappears, and its id works
    afresh."""
    harness.require(ApiKey.LIST_GROUPS)  # what R15/R16 judge: their UNSUPPORTED comes first
    harness.require(ApiKey.DELETE_GROUPS)
    topic = obtain(harness, "groups-admin").name
    stable, empty = Group(harness), Group(harness)
    try:
        a = stable.new_member()
        stable.rebalance(joining=[a])
        codes = commit(harness, empty.admin, empty.name, {(topic, 0): (5, "m")})
        verify.check(
            set(codes.values()) == {ErrorCode.NONE}, f"simple commit: {codes}", "GROUPS.R18"
        )
        listed = list_everywhere(harness)
        ours = {n: listed.get(n) for n in (stable.name, empty.name)}
        # listing failures are recorded and the test goes on: deletion is judged apart
        verify.soft(
            harness,
            all(ours.values()),
            f"ListGroups of every broker lacks a group: {ours}",
            "GROUPS.R15",
        )
        shown = (listed.get(stable.name) or {}).get("ProtocolType")
        verify.soft(
            harness,
            shown == PROTOCOL_TYPE,
            f"ListGroups gives the stable group protocol type {shown!r}",
            "GROUPS.R15",
        )
        lv = harness.advertised[ApiKey.LIST_GROUPS][1]
        if lv >= 4:
            for states, inside, outside in (
                (["Stable"], stable, empty),
                (["Empty"], empty, stable),
            ):
                got = list_everywhere(harness, states)
                verify.soft(
                    harness,
                    inside.name in got
                    and got[inside.name]["GroupState"] == states[0]
                    and outside.name not in got,
                    f"ListGroups with states filter {states}: {inside.name} listed "
                    f"{got.get(inside.name)}, {outside.name} listed {got.get(outside.name)}",
                    "GROUPS.R16",
                )
        # deletion
        conn = stable.admin
        got = delete_groups(harness, conn, [stable.name])
        verify.soft(
            harness,
            got.get(stable.name) == ErrorCode.NON_EMPTY_GROUP,
            f"DeleteGroups of a group with a member answered {got}",
            "GROUPS.R17",
        )
        try:  # the refusal is judged on the group's member, and apart from the rest
            hb, state = stable.heartbeat(a), stable.describe()["GroupState"]
            seen = f"its member's Heartbeat answered {hb}, DescribeGroups says {state!r}"
        except verify.Failed as e:  # closed or not answered: the group's refusal failed
            hb, state, seen = None, None, f"{e}"
        verify.soft(
            harness,
            hb == ErrorCode.NONE and state == "Stable",
            f"after DeleteGroups of the group with a member: {seen}; expected NONE and Stable",
            "GROUPS.R17",
        )
        ghost = fresh_name("never")
        got = delete_groups(harness, Group(harness, ghost).admin, [ghost])
        verify.check(
            got.get(ghost) == ErrorCode.GROUP_ID_NOT_FOUND,
            f"DeleteGroups of a group that never existed answered {got}",
            "GROUPS.R19",
        )
        got = delete_groups(harness, empty.admin, [empty.name])
        verify.check(
            got.get(empty.name) == ErrorCode.NONE,
            f"DeleteGroups of an empty group: {got}",
            "GROUPS.R18",
        )
        state = empty.describe()["GroupState"]
        verify.check(state == "Dead", f"a deleted group is described {state!r}", "GROUPS.R18")
        listed = list_everywhere(harness)
        verify.check(
            empty.name not in listed,
            f"ListGroups still lists the deleted group: {listed.get(empty.name)}",
            "GROUPS.R15",
            "GROUPS.R18",
        )
        offsets = fetch(harness, empty.admin, empty.name, [(topic, 0)], req="GROUPS.R18")
        verify.check(
            offsets.get((topic, 0), (None,))[0] == -1,
            f"the deleted group's offset reads {offsets}",
            "GROUPS.R18",
        )
        b = empty.new_member()
        r = empty.rebalance(joining=[b])
        body = r.joins[b.client_id]
        first = a.joins[0]["GenerationId"]
        verify.check(
            body["ErrorCode"] == ErrorCode.NONE and body["GenerationId"] == first,
            f"JoinGroup into the deleted group's id answered error {body['ErrorCode']}, "
            f"generation {body['GenerationId']}; expected a new group's first generation "
            f"({first}, as the other group's)",
            "GROUPS.R18",
        )
    finally:
        stable.cleanup()
        empty.cleanup()
        delete_topics(harness, [topic])
