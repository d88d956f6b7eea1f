"""Committed offsets on the wire (``specs/requirements/offsets.json``): several topics and
partitions read back with their metadata, -1 for what was never committed, the generation
check, simple commits to a group without members, OffsetFetch of everything, durability
across the coordinator's restart (where the target lets the suite restart a broker)."""

from __future__ import annotations

import time

from hypothesis import strategies as st

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.internal_topics import OFFSETS_TOPIC
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.groups.commits import Offsets, commit, fetch
from conformance.suite.groups.members import TRANSIENT, Group, find_coordinator
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, run_property
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import Topics
from conformance.suite.kit.records_io import quiet_version
from conformance.suite.kit.safety import fresh_name
from conformance.suite.offsets.shared import every_partition, two_topics

#: how long a restarted coordinator may take to serve the group's offsets again
RELOAD = 30.0
#: how long the suite waits for that topic to be whole again before it commits
SETTLE = 30.0

offsets_values = st.integers(0, 2**40)
metadata_values = st.one_of(st.none(), st.text(max_size=12))


def commits_for(keys: list[tuple[str, int]]) -> st.SearchStrategy[Offsets]:
    """Offsets for a non-empty subset of the topics' partitions, never the last one (so that
    a partition never committed is always read back, however few partitions there are)."""
    some = keys[:-1]
    return st.dictionaries(
        st.sampled_from(some),
        st.tuples(offsets_values, metadata_values),
        min_size=min(2, len(some)),
    )


def same_metadata(sent: str | None, got: str | None) -> bool:
    """A null metadata string may come back empty (Kafka stores it as "")."""
    return (sent or "") == (got or "")


@conformance(
    "offsets/commit-fetch/read-back",
    "OFFSETS.R1",
    "OFFSETS.R2",
    "OFFSETS.R4",
    "OFFSETS.R5",
    api=ApiKey.OFFSET_COMMIT,
)
def test_simple_commits_read_back(harness: Harness) -> None:
    """Drawn commits to a fresh group with no members (generation -1): each partition read
    back by name and by fetching everything; partitions never committed read -1."""
    fv = harness.pick_version(ApiKey.OFFSET_FETCH, "1+")
    all_v = harness.pick_version(ApiKey.OFFSET_FETCH, "2+") if fv >= 2 else None
    cv = harness.pick_version(ApiKey.OFFSET_COMMIT, "1+")  # the API the results name: last
    topics = two_topics(harness)

    def check(offsets: Offsets) -> None:
        group = fresh_name("group")
        conn = harness.connect(find_coordinator(harness, group, pick_fc(harness)).endpoint)
        codes = commit(harness, conn, group, offsets, version=cv)
        verify.check(
            codes == dict.fromkeys(offsets, ErrorCode.NONE),
            f"OffsetCommit v{cv} (generation -1, no member) to a group without members: {codes}",
            "OFFSETS.R4",
        )
        got = fetch(harness, conn, group, every, version=fv)
        for tp in every:
            have = got.get(tp)
            verify.check(have is not None, f"OffsetFetch v{fv} left out {tp}", "OFFSETS.R1")
            assert have is not None
            if tp in offsets:
                want = offsets[tp]
                verify.check(
                    have[2] == ErrorCode.NONE and have[0] == want[0],
                    f"OffsetFetch v{fv} of {tp}: offset {have[0]}, error {have[2]}; committed "
                    f"{want[0]}",
                    "OFFSETS.R1",
                )
            else:
                verify.check(
                    have[0] == -1 and have[2] == ErrorCode.NONE,
                    f"OffsetFetch v{fv} of never-committed {tp}: offset {have[0]}, error "
                    f"{have[2]}; expected -1 and no error",
                    "OFFSETS.R2",
                )
        if all_v is not None:
            everything = fetch(harness, conn, group, None, version=all_v, req="OFFSETS.R5")
            listed = {tp: v[0] for tp, v in everything.items()}
            want = {tp: v[0] for tp, v in offsets.items()}
            verify.check(
                listed == want,
                f"OffsetFetch v{all_v} of all (null topics) listed {listed}; committed {want}",
                "OFFSETS.R5",
            )

    with topics:
        every = every_partition(topics)
        run_property(harness, commits_for(every), check)


@conformance("offsets/commit-fetch/metadata", "OFFSETS.R1", api=ApiKey.OFFSET_COMMIT)
def test_metadata_read_back(harness: Harness) -> None:
    """The metadata string of each committed partition comes back as committed."""
    with two_topics(harness) as topics:
        every = every_partition(topics)
        # three partitions apart where there are that many (two topics have at least two)
        picked = [every[0], every[-1], *every[1:-1][len(every[1:-1]) // 2 :][:1]]
        values = [(6, "métadonnée ✓"), (7, ""), (5, "kc-metadata")]
        sent = dict(zip(picked, values, strict=False))
        group = fresh_name("group")
        conn = harness.connect(find_coordinator(harness, group, pick_fc(harness)).endpoint)
        codes = commit(harness, conn, group, sent)
        verify.check(
            set(codes.values()) == {ErrorCode.NONE}, f"OffsetCommit answered {codes}", "OFFSETS.R1"
        )
        got = fetch(harness, conn, group, list(sent))
        back = {tp: got.get(tp, (None, None))[1] for tp in sent}
        committed = {tp: m for tp, (_, m) in sent.items()}
        verify.check(
            all(same_metadata(sent[tp][1], back[tp]) for tp in sent),
            f"OffsetFetch gave metadata {back}; committed {committed}",
            "OFFSETS.R1",
        )


def pick_fc(harness: Harness) -> int:
    """FindCoordinator's version: a step of the test, not the API its results name."""
    return quiet_version(harness, ApiKey.FIND_COORDINATOR)


@conformance("offsets/commit/generation", "OFFSETS.R3", "OFFSETS.R6", api=ApiKey.OFFSET_COMMIT)
def test_member_commits_and_stale_generation(harness: Harness) -> None:
    with Topics(harness, "offsets-generation") as topics:
        topic = topics.names[0]
        g = Group(harness)
        try:
            a, b = g.new_member(), g.new_member()
            try:
                g.rebalance(joining=[a])
                g.rebalance(joining=[b])
            except verify.Failed as e:
                if "GROUPS.R21" not in e.req_ids:
                    raise
                raise MissingPrecondition(
                    f"the suite's members could not form a group: {e}"
                ) from None
            cv = harness.pick_version(ApiKey.OFFSET_COMMIT, "1+")
            tp = (topic, 0)
            codes = commit(
                harness,
                a.conn,
                g.name,
                {tp: (10, "gen")},
                generation=a.generation,
                member_id=a.member_id,
                version=cv,
            )
            verify.check(
                codes == {tp: ErrorCode.NONE},
                f"OffsetCommit v{cv} of member {a.member_id} at generation {a.generation}: {codes}",
                "OFFSETS.R6",
            )
            got = fetch(harness, a.conn, g.name, [tp], req="OFFSETS.R6")
            verify.check(got[tp][0] == 10, f"read back {got}; committed 10", "OFFSETS.R6")
            stale = a.generation - 1
            codes = commit(
                harness,
                a.conn,
                g.name,
                {tp: (99, "stale")},
                generation=stale,
                member_id=a.member_id,
                version=cv,
            )
            verify.check(
                codes == {tp: ErrorCode.ILLEGAL_GENERATION},
                f"OffsetCommit v{cv} at generation {stale} (current {a.generation}): {codes}",
                "OFFSETS.R3",
            )
            got = fetch(harness, a.conn, g.name, [tp], req="OFFSETS.R3")
            verify.check(
                got[tp][0] == 10,
                f"after the refused commit of 99 the offset reads {got[tp][0]}, not 10",
                "OFFSETS.R3",
            )
        finally:
            g.cleanup()


def offsets_topic_whole(harness: Harness, timeout: float = SETTLE) -> None:
    """Until every partition of the offsets topic, where Metadata lists it, has a leader and
    every replica in its ISR (at most ``timeout``; then the test goes on). A disruptive test
    before this one may have killed or restarted brokers that have not caught up yet, and a
    commit the coordinator alone holds then rides on how Kafka's controller treats that
    broker's new incarnation (KIP-966): once in seven kafka:4.4.0 runs it read back -1 after
    the restart (benchmarks/README.md, session 16, K). The requirement is about a cluster
    whose followers hold the commit."""
    body = {"Topics": [{"Name": OFFSETS_TOPIC}], "AllowAutoTopicCreation": False}
    conn = harness.connect()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        topics = harness.setup_request(conn, ApiKey.METADATA, body, "1+").body["Topics"]
        parts = [
            p
            for t in topics
            if t["Name"] == OFFSETS_TOPIC and t["ErrorCode"] == ErrorCode.NONE
            for p in t["Partitions"]
        ]
        if all(p["LeaderId"] >= 0 and set(p["ReplicaNodes"]) <= set(p["IsrNodes"]) for p in parts):
            return
        time.sleep(0.1)


@conformance(
    "offsets/commit-fetch/survive-restart", "OFFSETS.R7", api=ApiKey.OFFSET_FETCH, disruptive=True
)
def test_offsets_survive_coordinator_restart(harness: Harness) -> None:
    target = harness.target
    if not target.restartable:
        raise MissingPrecondition(
            f"the {target.kind} target does not let the suite restart a broker"
        )
    group = fresh_name("group")
    with two_topics(harness) as topics:
        offsets_topic_whole(harness)
        where = find_coordinator(harness, group, pick_fc(harness), "OFFSETS.R7")
        if where.node_id not in target.restartable:
            raise MissingPrecondition(f"the coordinator (node {where.node_id}) is not restartable")
        offsets = {(t, p): (100 + p, f"m{p}") for t, p in every_partition(topics)}
        codes = commit(harness, harness.connect(where.endpoint), group, offsets)
        verify.check(
            set(codes.values()) == {ErrorCode.NONE}, f"OffsetCommit: {codes}", "OFFSETS.R7"
        )
        harness.end_test()
        target.restart_broker(where.node_id)
        deadline = time.monotonic() + RELOAD
        while True:
            where = find_coordinator(harness, group, pick_fc(harness), "OFFSETS.R7")
            got = fetch(
                harness, harness.connect(where.endpoint), group, list(offsets), req="OFFSETS.R7"
            )
            codes = {v[2] for v in got.values()}
            if not codes & TRANSIENT or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        have = {tp: v[0] for tp, v in got.items()}
        want = {tp: v[0] for tp, v in offsets.items()}
        verify.check(
            have == want,
            f"after restarting the coordinator (node {where.node_id}) OffsetFetch gives "
            f"{have}; committed {want}",
            "OFFSETS.R7",
        )
