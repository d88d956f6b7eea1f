"""Classic group membership on the wire (``specs/requirements/groups.json``): the coordinator,
member ids, generations, leaders, assignments, and the errors of stale, unknown and
inconsistent members, each check naming the requirement it shows.

Every test makes its own group (a fresh name), joins with sessions far longer than the test
(the expiry test excepted: it uses the shortest the target accepts), and leaves and deletes
the group at the end.
"""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.kafka_errors import error_name
from conformance.suite.groups.members import CLIENT_SESSION_MS, Group, Member, Round, min_session_ms
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.safety import fresh_name


def code(c: int | None) -> str:
    return f"{c} ({error_name(c or 0)})"


def check_round(g: Group, r: Round, previous: int, what: str) -> int:
    """The round's JoinGroup and SyncGroup answers: one generation above ``previous`` (a new
    group's first: at least 0), one
    leader among the members, members' metadata to the leader only, each member its own
    assignment. Returns the generation."""
    for cid, body in r.joins.items():
        verify.check(
            body["ErrorCode"] == ErrorCode.NONE,
            f"{what}: JoinGroup v{g.versions[ApiKey.JOIN_GROUP]} of {cid} answered "
            f"{code(body['ErrorCode'])}",
            "GROUPS.R3",
        )
    gens = {b["GenerationId"] for b in r.joins.values()}
    leaders = {b["Leader"] for b in r.joins.values()}
    ids = {b["MemberId"] for b in r.joins.values()}
    verify.check(
        len(gens) == 1 and min(gens) > previous,
        f"{what}: members got generations {sorted(gens)}; expected one, above {previous}",
        "GROUPS.R3",
    )
    verify.check(
        len(leaders) == 1 and leaders <= ids,
        f"{what}: leaders {sorted(leaders)} named; expected one of the members {sorted(ids)}",
        "GROUPS.R3",
    )
    sent = {m.member_id: m.metadata for m in g.members}
    for m in g.members:
        body = r.joins[m.client_id]
        listed = {x["MemberId"]: x["Metadata"] for x in body["Members"]}
        if m.member_id == m.leader:
            verify.check(
                listed == sent,
                f"{what}: the leader {m.client_id} was given members {listed}; they joined "
                f"with {sent}",
                "GROUPS.R4",
            )
        else:
            verify.check(
                not listed,
                f"{what}: follower {m.client_id} was given the members' metadata: {listed}",
                "GROUPS.R4",
            )
    for m in g.members:
        body = r.syncs.get(m.client_id)
        verify.check(
            body is not None, f"{what}: no SyncGroup answer for {m.client_id}", "GROUPS.R5"
        )
        assert body is not None
        verify.check(
            body["ErrorCode"] == ErrorCode.NONE
            and body["Assignment"] == r.assigned.get(m.member_id),
            f"{what}: SyncGroup v{g.versions[ApiKey.SYNC_GROUP]} gave {m.client_id} "
            f"{code(body['ErrorCode'])} {body['Assignment']!r}; the leader assigned it "
            f"{r.assigned.get(m.member_id)!r}",
            "GROUPS.R5",
        )
    return min(gens)


@conformance(
    "groups/membership/rounds",
    "GROUPS.R1",
    "GROUPS.R3",
    "GROUPS.R4",
    "GROUPS.R5",
    "GROUPS.R6",
    "GROUPS.R7",
    "GROUPS.R8",
    "GROUPS.R9",
    "GROUPS.R21",
    api=ApiKey.JOIN_GROUP,
)
def test_rounds(harness: Harness) -> None:
    """Three members join one by one and one leaves: four rounds, each checked in full; then
    probes of a stale generation and an unknown member (after the rounds, so that an answer
    they get wrong cannot change what the rounds are judged on)."""
    g = Group(harness)
    try:
        listed = {b.node_id: b.endpoint for b in cluster.brokers(harness)}
        c = g.coordinator
        verify.check(
            listed.get(c.node_id) == c.endpoint,
            f"FindCoordinator named node {c.node_id} at {c.endpoint}; Metadata lists {listed}",
            "GROUPS.R1",
        )
        a, b, d = g.new_member(), g.new_member(), g.new_member()
        r = g.rebalance(joining=[a])
        verify.check(
            all(x["ErrorCode"] != ErrorCode.NOT_COORDINATOR for x in r.joins.values()),
            f"the coordinator named by FindCoordinator answered NOT_COORDINATOR: {r.joins}",
            "GROUPS.R1",
        )
        gen = check_round(g, r, -1, "first member")
        for joining, what in ((b, "second member"), (d, "third member")):
            r = g.rebalance(joining=[joining])
            verify.check(
                ErrorCode.REBALANCE_IN_PROGRESS in r.heartbeats and set(r.heartbeats) <= {0, 27},
                f"{what}: heartbeats of a member while the group rebalanced answered "
                f"{[code(h) for h in r.heartbeats]}",
                "GROUPS.R8",
            )
            gen = check_round(g, r, gen, what)
        # stale generation
        # a member leaves
        r = g.rebalance(leaving=[d])
        assert r.leave is not None
        left = [x["ErrorCode"] for x in r.leave.get("Members") or []] + [r.leave["ErrorCode"]]
        verify.check(
            set(left) == {ErrorCode.NONE},
            f"LeaveGroup v{g.versions[ApiKey.LEAVE_GROUP]} of member {d.member_id} answered "
            f"{[code(x) for x in left]}",
            "GROUPS.R9",
        )
        verify.check(
            ErrorCode.REBALANCE_IN_PROGRESS in r.heartbeats,
            f"after a LeaveGroup the others' heartbeats answered {[code(h) for h in r.heartbeats]}",
            "GROUPS.R9",
        )
        leader = next((m for m in g.members if m.member_id == m.leader), None)
        names = {x["MemberId"] for x in r.joins[leader.client_id]["Members"]} if leader else set()
        verify.check(
            d.member_id not in names,
            f"the member that left ({d.member_id}) is still listed to the leader: {names}",
            "GROUPS.R9",
        )
        gen = check_round(g, r, gen, "after a member left")
        hb = g.heartbeat(d)
        verify.soft(
            harness,
            hb == ErrorCode.UNKNOWN_MEMBER_ID,
            f"Heartbeat of the member that left answered {code(hb)}",
            "GROUPS.R9",
        )
        # the probes of stale generations and unknown members are judged apart (soft): one
        # refusal that is wrong does not keep the others, or the leave round, from being judged
        stale = g.heartbeat(a, generation=gen - 1)
        verify.soft(
            harness,
            stale == ErrorCode.ILLEGAL_GENERATION,
            f"Heartbeat v{g.versions[ApiKey.HEARTBEAT]} of generation {gen - 1} (current {gen}) "
            f"answered {code(stale)}",
            "GROUPS.R6",
        )
        body = g.sync_body(b, {})
        body["GenerationId"] = gen - 1
        got = g.request(ApiKey.SYNC_GROUP, g.versions[ApiKey.SYNC_GROUP], body, conn=b.conn).body
        verify.soft(
            harness,
            got["ErrorCode"] == ErrorCode.ILLEGAL_GENERATION,
            f"SyncGroup v{g.versions[ApiKey.SYNC_GROUP]} of generation {gen - 1} (current {gen}) "
            f"answered {code(got['ErrorCode'])}",
            "GROUPS.R6",
        )
        # unknown member
        ghost = f"kc-ghost-{fresh_name('member')}"
        hb = g.heartbeat(a, member_id=ghost)
        verify.soft(
            harness,
            hb == ErrorCode.UNKNOWN_MEMBER_ID,
            f"Heartbeat v{g.versions[ApiKey.HEARTBEAT]} of unknown member {ghost} "
            f"answered {code(hb)}",
            "GROUPS.R7",
        )
        body = g.sync_body(b, {})
        body["MemberId"], body["GroupInstanceId"] = ghost, None
        got = g.request(ApiKey.SYNC_GROUP, g.versions[ApiKey.SYNC_GROUP], body).body
        verify.soft(
            harness,
            got["ErrorCode"] == ErrorCode.UNKNOWN_MEMBER_ID,
            f"SyncGroup v{g.versions[ApiKey.SYNC_GROUP]} of unknown member {ghost} answered "
            f"{code(got['ErrorCode'])}",
            "GROUPS.R7",
        )
        lv = g.versions[ApiKey.LEAVE_GROUP]
        ghost_member = Member(a.conn, "ghost", member_id=ghost)
        got = g.request(ApiKey.LEAVE_GROUP, lv, g.leave_body([ghost_member])).body
        codes = [x["ErrorCode"] for x in got["Members"]] if lv >= 3 else [got["ErrorCode"]]
        verify.soft(
            harness,
            codes == [ErrorCode.UNKNOWN_MEMBER_ID],
            f"LeaveGroup v{lv} of unknown member {ghost} answered {[code(x) for x in codes]}",
            "GROUPS.R7",
        )
    finally:
        g.cleanup()


@conformance("groups/join/within-rebalance-timeout", "GROUPS.R21", api=ApiKey.JOIN_GROUP)
def test_join_answered_within_the_rebalance_timeout(harness: Harness) -> None:
    """A member with a consumer's usual session (45 s) and a short rebalance timeout joins a
    new group and syncs: every answer comes within the rebalance timeout (plus the suite's 4 s),
    however long the session. The other group tests use short sessions, so that a coordinator
    that holds JoinGroup for part of the session fails here and is judged there on the rest."""
    g = Group(harness)
    try:
        m = g.new_member()
        m.session_ms = CLIENT_SESSION_MS
        r = g.rebalance(joining=[m])
        verify.check(
            r.syncs.get(m.client_id, {}).get("ErrorCode") == ErrorCode.NONE,
            f"the only member's round ended with JoinGroup {r.joins} and SyncGroup {r.syncs}",
            "GROUPS.R21",
        )
    finally:
        g.cleanup()


@conformance("groups/join/member-id-required", "GROUPS.R2", "GROUPS.R21", api=ApiKey.JOIN_GROUP)
def test_member_id_required(harness: Harness) -> None:
    g = Group(harness, join_versions="4+")
    try:
        m = g.new_member()
        first = g.ask_member_id(m)
        v = g.versions[ApiKey.JOIN_GROUP]
        verify.check(
            first["ErrorCode"] == ErrorCode.MEMBER_ID_REQUIRED and first["MemberId"],
            f"JoinGroup v{v} without a member id answered {code(first['ErrorCode'])} with "
            f"member id {first['MemberId']!r}; expected MEMBER_ID_REQUIRED and an id",
            "GROUPS.R2",
        )
        given = first["MemberId"]
        r = g.rebalance(joining=[m])
        body = r.joins[m.client_id]
        verify.check(
            body["ErrorCode"] == ErrorCode.NONE and body["MemberId"] == given,
            f"JoinGroup v{v} with the id it was given ({given}) answered "
            f"{code(body['ErrorCode'])}, member id {body['MemberId']!r}",
            "GROUPS.R2",
        )
        # versions 0-3 know no MEMBER_ID_REQUIRED: a new member joins at once (where advertised)
        lo = harness.advertised[ApiKey.JOIN_GROUP][0]
        if lo <= 3:
            old = Group(harness, join_versions="0-3")
            try:
                m3 = old.new_member()
                r3 = old.rebalance(joining=[m3])
                body = r3.joins[m3.client_id]
                ov = old.versions[ApiKey.JOIN_GROUP]
                verify.check(
                    body["ErrorCode"] == ErrorCode.NONE and body["MemberId"],
                    f"JoinGroup v{ov} (a version without MEMBER_ID_REQUIRED) of a new member "
                    f"answered {code(body['ErrorCode'])} with member id {body['MemberId']!r}; "
                    "expected NONE and its member id",
                    "GROUPS.R2",
                )
            finally:
                old.cleanup()
    finally:
        g.cleanup()


@conformance("groups/membership/session-expiry", "GROUPS.R10", "GROUPS.R21", api=ApiKey.HEARTBEAT)
def test_session_expiry(harness: Harness) -> None:
    """A member with the shortest session the target accepts goes silent; another keeps
    heartbeating and is told to rebalance, then rejoins alone."""
    session_ms = min_session_ms(harness)
    g = Group(harness)
    try:
        keeper, quiet = g.new_member(), g.new_member()
        quiet.session_ms = session_ms
        g.rebalance(joining=[keeper])
        r = g.rebalance(joining=[quiet])
        verify.check(
            all(b["ErrorCode"] == ErrorCode.NONE for b in r.joins.values()),
            f"the two members could not join: {r.joins}",
            "GROUPS.R10",
        )
        silent_since = time.monotonic()
        deadline = silent_since + 3 * session_ms / 1000 + 5
        seen = []
        while True:
            hb = g.heartbeat(keeper)
            seen.append(hb)
            if hb != ErrorCode.NONE:
                break
            verify.check(
                time.monotonic() < deadline,
                f"a member silent for {time.monotonic() - silent_since:.1f} s (session "
                f"{session_ms} ms) never caused a rebalance: the other's heartbeats answered NONE",
                "GROUPS.R10",
            )
            time.sleep(min(0.2, session_ms / 5000))
        verify.check(
            hb == ErrorCode.REBALANCE_IN_PROGRESS,
            f"after a member's session ran out, the other's heartbeat answered {code(hb)}",
            "GROUPS.R10",
        )
        g.members = [keeper]
        r = g.rebalance()
        body = r.joins[keeper.client_id]
        listed = {x["MemberId"] for x in body["Members"]}
        verify.check(
            body["ErrorCode"] == ErrorCode.NONE and listed == {keeper.member_id},
            f"the rebalance after the expiry answered {code(body['ErrorCode'])} with members "
            f"{sorted(listed)}; expected only {keeper.member_id}",
            "GROUPS.R10",
        )
        # DescribeGroups shows the member gone too where the target has it; without it the
        # rebalance's member list and the Heartbeat below judge the removal
        if ApiKey.DESCRIBE_GROUPS in harness.advertised:
            described = {m["MemberId"] for m in g.describe()["Members"]}
            verify.check(
                quiet.member_id not in described,
                f"DescribeGroups still lists the expired member {quiet.member_id}: {described}",
                "GROUPS.R10",
            )
        hb = g.heartbeat(quiet)
        verify.check(
            hb == ErrorCode.UNKNOWN_MEMBER_ID,
            f"Heartbeat of the expired member answered {code(hb)}",
            "GROUPS.R10",
        )
    finally:
        g.cleanup()


@conformance("groups/membership/static-rejoin", "GROUPS.R11", "GROUPS.R21", api=ApiKey.JOIN_GROUP)
def test_static_member_rejoins_without_rebalance(harness: Harness) -> None:
    g = Group(harness, join_versions="5+")
    harness.require(ApiKey.HEARTBEAT, 3)
    try:
        leader = g.new_member()
        static = g.new_member(instance_id=fresh_name("instance"))
        g.rebalance(joining=[leader])
        r = g.rebalance(joining=[static])
        verify.check(
            all(b["ErrorCode"] == ErrorCode.NONE for b in r.joins.values()) and static.assignment,
            f"a static member could not join: {r.joins}",
            "GROUPS.R11",
        )
        gen, old_id, kept = static.generation, static.member_id, static.assignment
        again = Member(g.connect("kc-static-again"), "kc-static-again", static.instance_id)
        again.metadata = static.metadata
        body = g.finish(again, ApiKey.JOIN_GROUP, g.join(again))
        v = g.versions[ApiKey.JOIN_GROUP]
        verify.check(
            body["ErrorCode"] == ErrorCode.NONE
            and body["GenerationId"] == gen
            and body["MemberId"]
            and body["MemberId"] != old_id,
            f"JoinGroup v{v} of static member {static.instance_id} without its id answered "
            f"{code(body['ErrorCode'])}, generation {body['GenerationId']} (was {gen}), member "
            f"id {body['MemberId']!r} (was {old_id})",
            "GROUPS.R11",
        )
        hb = g.heartbeat(leader)
        verify.check(
            hb == ErrorCode.NONE,
            f"the static member's rejoin made the group rebalance: the leader's heartbeat "
            f"answered {code(hb)}",
            "GROUPS.R11",
        )
        again.member_id, again.generation = body["MemberId"], body["GenerationId"]
        synced = g.request(
            ApiKey.SYNC_GROUP, g.versions[ApiKey.SYNC_GROUP], g.sync_body(again, {}), again.conn
        )
        verify.check(
            synced.body["ErrorCode"] == ErrorCode.NONE and synced.body["Assignment"] == kept,
            f"SyncGroup of the rejoined static member gave {code(synced.body['ErrorCode'])} "
            f"{synced.body['Assignment']!r}; it had {kept!r}",
            "GROUPS.R11",
        )
        fenced = g.heartbeat(static)
        verify.check(
            fenced == ErrorCode.FENCED_INSTANCE_ID,
            f"Heartbeat with the static member's old id {old_id} answered {code(fenced)}",
            "GROUPS.R11",
        )
        static.member_id = again.member_id
    finally:
        g.cleanup()


@conformance(
    "groups/join/inconsistent-protocol-type", "GROUPS.R12", "GROUPS.R21", api=ApiKey.JOIN_GROUP
)
def test_other_protocol_type_refused(harness: Harness) -> None:
    g = Group(harness)
    try:
        a = g.new_member()
        g.rebalance(joining=[a])
        other = g.new_member()
        v = g.versions[ApiKey.JOIN_GROUP]
        body = g.finish(other, ApiKey.JOIN_GROUP, g.join(other, protocol_type="kc-other"))
        if body["ErrorCode"] == ErrorCode.MEMBER_ID_REQUIRED:
            other.member_id = body["MemberId"]
            body = g.finish(other, ApiKey.JOIN_GROUP, g.join(other, protocol_type="kc-other"))
        verify.check(
            body["ErrorCode"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
            f"JoinGroup v{v} with protocol type kc-other into a group of consumer members "
            f"answered {code(body['ErrorCode'])}",
            "GROUPS.R12",
        )
        hb = g.heartbeat(a)
        verify.check(
            hb == ErrorCode.NONE,
            f"after the refused join the member's heartbeat answered {code(hb)}",
            "GROUPS.R12",
        )
    finally:
        g.cleanup()
