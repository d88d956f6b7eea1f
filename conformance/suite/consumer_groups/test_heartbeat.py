"""KIP-848 consumer groups on the wire: joining with epoch 0, the member id of each version,
epochs, the server-side assignment and its incremental reconciliation, fencing, leaving, static
membership, ConsumerGroupDescribe, ListGroups' type filter and offsets with member epochs."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey, ConfigOperation, ConfigResourceType, ErrorCode
from conformance.suite.consumer_groups.shared import (
    SETTLE,
    ConsumerGroup,
    Member,
    advertised,
    converge,
    joined,
    newest,
    served,
    topic_ids,
)
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import obtain
from conformance.suite.kit.records_io import admin_call
from conformance.suite.kit.safety import fresh_name
from conformance.suite.kit.topic_ids import name_both_ways

PARTITIONS = 4
#: how long new partitions may take to be assigned (Kafka 4.4.0: about a second)
GROWN_WAIT = 10.0
#: how long a group config may take to reach the broker that describes it (KRaft metadata)
CONFIG_WAIT = 5.0


@conformance(
    "consumer-groups/heartbeat/join-reconcile-leave",
    "CONSUMER-GROUPS.R1",
    "CONSUMER-GROUPS.R2",
    "CONSUMER-GROUPS.R3",
    "CONSUMER-GROUPS.R5",
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_join_reconcile_leave(harness: Harness) -> None:
    topic = obtain(harness, "cgroup", PARTITIONS, exact=True)
    tid = topic_ids(harness, [topic.name])[topic.name]
    want = {(tid, p) for p in range(topic.partitions)}
    g = ConsumerGroup(harness, [topic.name])
    test = "join-reconcile-leave"
    a = g.new_member()
    sent_id = a.member_id
    got = joined(harness, g, a, "first member")
    verify.soft(
        harness,
        got["MemberEpoch"] > 0 and got["HeartbeatIntervalMs"] > 0,
        f"join: member epoch {got['MemberEpoch']}, heartbeat interval {got['HeartbeatIntervalMs']}",
        "CONSUMER-GROUPS.R1",
    )
    if g.version == 0:
        ok, what = bool(got["MemberId"]), "a non-empty member id given by the coordinator"
    else:
        ok, what = got["MemberId"] == sent_id, f"the member id the client sent ({sent_id})"
    verify.soft(
        harness,
        ok,
        f"ConsumerGroupHeartbeat v{g.version} join answered member id {got['MemberId']!r}; "
        f"expected {what}",
        "CONSUMER-GROUPS.R1",
    )
    first = converge(harness, g, [a], want, test)
    # the member id rule of every other advertised version (v0: given; v1+: the client's)
    for version in advertised(harness, ApiKey.CONSUMER_GROUP_HEARTBEAT):
        if version == g.version:
            continue
        other = ConsumerGroup(harness, [topic.name])
        x = other.new_member(version=version)
        sent = x.member_id
        got = other.heartbeat(x)
        ok = got["ErrorCode"] == ErrorCode.NONE and (
            bool(got["MemberId"]) if version == 0 else got["MemberId"] == sent
        )
        verify.soft(
            harness,
            ok,
            f"ConsumerGroupHeartbeat v{version} join (member id sent {sent!r}): error "
            f"{got['ErrorCode']}, member id {got['MemberId']!r}",
            "CONSUMER-GROUPS.R1",
        )
        other.heartbeat(x, MemberEpoch=-1)
    b = g.new_member()
    joined(harness, g, b, "second member")
    second = converge(harness, g, [a, b], want, test)
    verify.soft(
        harness,
        second["GroupEpoch"] > first["GroupEpoch"],
        f"group epoch {first['GroupEpoch']} before a second member joined, "
        f"{second['GroupEpoch']} after",
        "CONSUMER-GROUPS.R2",
    )
    verify.soft(
        harness,
        bool(a.owned) and bool(b.owned),
        f"two members on {PARTITIONS} partitions: one owns nothing ({a.owned}, {b.owned})",
        "CONSUMER-GROUPS.R3",
    )
    # b leaves: a takes everything back
    left = g.heartbeat(b, MemberEpoch=-1)
    verify.soft(
        harness,
        left["ErrorCode"] == ErrorCode.NONE and left["MemberEpoch"] == -1,
        f"leave (epoch -1): error {left['ErrorCode']}, member epoch {left['MemberEpoch']}",
        "CONSUMER-GROUPS.R5",
    )
    b.owned = {}
    third = converge(harness, g, [a], want, test)
    listed = [x["MemberId"] for x in third.get("Members") or []]
    verify.soft(
        harness,
        listed == [a.member_id],
        f"ConsumerGroupDescribe after a member left lists {listed}",
        "CONSUMER-GROUPS.R5",
    )
    verify.soft(
        harness,
        third["GroupEpoch"] > second["GroupEpoch"],
        f"group epoch {second['GroupEpoch']} before a member left, {third['GroupEpoch']} after",
        "CONSUMER-GROUPS.R2",
    )
    g.heartbeat(a, MemberEpoch=-1)


@conformance(
    "consumer-groups/heartbeat/fencing-and-static",
    "CONSUMER-GROUPS.R4",
    "CONSUMER-GROUPS.R6",
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_fencing_and_static(harness: Harness) -> None:
    g = ConsumerGroup(harness, [fresh_name("cg-topic")])
    a = g.new_member()
    joined(harness, g, a, "member")
    ahead = g.heartbeat(a, MemberEpoch=a.epoch + 5)
    verify.soft(
        harness,
        ahead["ErrorCode"] == ErrorCode.FENCED_MEMBER_EPOCH,
        f"heartbeat with epoch {a.epoch + 5} (member at {a.epoch}): error {ahead['ErrorCode']}",
        "CONSUMER-GROUPS.R4",
    )
    stranger = g.heartbeat(a, MemberId=fresh_name("nobody"), MemberEpoch=1)
    verify.soft(
        harness,
        stranger["ErrorCode"] == ErrorCode.UNKNOWN_MEMBER_ID,
        f"heartbeat of an unknown member id at epoch 1: error {stranger['ErrorCode']}",
        "CONSUMER-GROUPS.R4",
    )
    g.heartbeat(a, MemberEpoch=-1)
    instance = fresh_name("instance")
    s1 = g.new_member(instance)
    joined(harness, g, s1, "static member")
    s2 = g.new_member(instance)
    taken = g.heartbeat(s2)
    verify.soft(
        harness,
        taken["ErrorCode"] == ErrorCode.UNRELEASED_INSTANCE_ID,
        f"join with instance id {instance} held by another member: error {taken['ErrorCode']}",
        "CONSUMER-GROUPS.R6",
    )
    gone = g.heartbeat(s1, MemberEpoch=-2)
    verify.soft(
        harness,
        gone["ErrorCode"] == ErrorCode.NONE and gone["MemberEpoch"] == -2,
        f"static leave (epoch -2): error {gone['ErrorCode']}, member epoch {gone['MemberEpoch']}",
        "CONSUMER-GROUPS.R6",
    )
    s3 = g.new_member(instance)
    back = g.heartbeat(s3)
    verify.soft(
        harness,
        back["ErrorCode"] == ErrorCode.NONE,
        f"join with instance id {instance} after its holder left with -2: error "
        f"{back['ErrorCode']}",
        "CONSUMER-GROUPS.R6",
    )
    g.heartbeat(s3, MemberEpoch=-1)


@conformance(
    "consumer-groups/describe-list-commit",
    "CONSUMER-GROUPS.R7",
    "CONSUMER-GROUPS.R8",
    api=ApiKey.CONSUMER_GROUP_DESCRIBE,
)
def test_describe_list_commit(harness: Harness) -> None:
    topic = obtain(harness, "cgroup", 1)
    g = ConsumerGroup(harness, [topic.name])
    none = g.describe()
    verify.soft(
        harness,
        none["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND,
        f"ConsumerGroupDescribe of a group that does not exist: error {none['ErrorCode']}",
        "CONSUMER-GROUPS.R7",
    )
    a = g.new_member()
    joined(harness, g, a, "member")
    deadline = time.monotonic() + 5
    while a.epoch and not a.owned and time.monotonic() < deadline:
        time.sleep(0.2)
        g.heartbeat(a)
    got = g.describe()
    members = got.get("Members") or []
    verify.soft(
        harness,
        got["ErrorCode"] == ErrorCode.NONE
        and [(x["MemberId"], x["MemberEpoch"]) for x in members] == [(a.member_id, a.epoch)],
        f"ConsumerGroupDescribe of a one-member group: error {got['ErrorCode']}, members "
        f"{[(x['MemberId'], x['MemberEpoch']) for x in members]}; expected "
        f"{[(a.member_id, a.epoch)]}",
        "CONSUMER-GROUPS.R7",
    )
    lv = harness.pick_version(ApiKey.LIST_GROUPS)
    if lv >= 5:
        for kind, listed_there in (("consumer", True), ("classic", False)):
            body = {"StatesFilter": [], "TypesFilter": [kind]}
            got = verify.expect_response(g.admin, ApiKey.LIST_GROUPS, lv, body).body
            rows = [x for x in got["Groups"] if x["GroupId"] == g.name]
            ok = [x.get("GroupType") for x in rows] == ["consumer"] if listed_there else rows == []
            verify.soft(
                harness,
                ok,
                f"ListGroups v{lv} with type filter {kind!r}: the consumer group listed as {rows}",
                "CONSUMER-GROUPS.R7",
            )
    ov = harness.pick_version(ApiKey.OFFSET_COMMIT)
    if ov < 9:
        return

    def commit(epoch: int) -> int:
        body = {
            "GroupId": g.name,
            "GenerationIdOrMemberEpoch": epoch,
            "MemberId": a.member_id,
            "GroupInstanceId": None,
            "Topics": [
                {
                    "Name": topic.name,
                    "Partitions": [
                        {
                            "PartitionIndex": 0,
                            "CommittedOffset": 0,
                            "CommittedLeaderEpoch": -1,
                            "CommittedMetadata": None,
                        }
                    ],
                }
            ],
        }
        name_both_ways(harness, ApiKey.OFFSET_COMMIT, ov, body["Topics"])
        got = verify.expect_response(g.admin, ApiKey.OFFSET_COMMIT, ov, body).body
        return got["Topics"][0]["Partitions"][0]["ErrorCode"]

    stale = commit(a.epoch + 1)
    verify.soft(
        harness,
        stale == ErrorCode.STALE_MEMBER_EPOCH,
        f"OffsetCommit v{ov} with member epoch {a.epoch + 1} (member at {a.epoch}): error {stale}",
        "CONSUMER-GROUPS.R8",
    )
    accepted = commit(a.epoch)
    verify.soft(
        harness,
        accepted == ErrorCode.NONE,
        f"OffsetCommit v{ov} with the member's epoch {a.epoch}: error {accepted}",
        "CONSUMER-GROUPS.R8",
    )
    g.heartbeat(a, MemberEpoch=-1)


@conformance(
    "consumer-groups/configs/bounds-and-interval",
    "CONSUMER-GROUPS.R9",
    api=ApiKey.INCREMENTAL_ALTER_CONFIGS,
)
def test_group_configs(harness: Harness) -> None:
    g = ConsumerGroup(harness, [fresh_name("cg-topic")])
    served(harness)
    v = harness.pick_version(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    conn = harness.connect()

    def alter(name: str, value: str) -> dict:
        body = {
            "Resources": [
                {
                    "ResourceType": ConfigResourceType.GROUP,
                    "ResourceName": g.name,
                    "Configs": [
                        {"Name": name, "ConfigOperation": ConfigOperation.SET, "Value": value}
                    ],
                }
            ],
            "ValidateOnly": False,
        }
        got = verify.expect_response(conn, ApiKey.INCREMENTAL_ALTER_CONFIGS, v, body).body
        return got["Responses"][0]

    for name, value in (
        ("consumer.session.timeout.ms", "500"),
        ("consumer.heartbeat.interval.ms", "60000"),
    ):
        got = alter(name, value)
        verify.soft(
            harness,
            got["ErrorCode"] == ErrorCode.INVALID_CONFIG,
            f"IncrementalAlterConfigs v{v} GROUP {name}={value}: error {got['ErrorCode']} "
            f"({got.get('ErrorMessage')}); expected INVALID_CONFIG",
            "CONSUMER-GROUPS.R9",
        )
    got = alter("consumer.heartbeat.interval.ms", "6000")
    verify.answered_none(
        got,
        f"IncrementalAlterConfigs v{v} GROUP consumer.heartbeat.interval.ms=6000: error",
        "CONSUMER-GROUPS.R9",
    )
    dv = harness.pick_version(ApiKey.DESCRIBE_CONFIGS)
    body = {
        "Resources": [
            {
                "ResourceType": ConfigResourceType.GROUP,
                "ResourceName": g.name,
                "ConfigurationKeys": ["consumer.heartbeat.interval.ms"],
            }
        ],
        "IncludeSynonyms": False,
        "IncludeDocumentation": False,
    }
    # KRaft Kafka answers the alteration once its controller committed it; a broker shows it
    # once it has the metadata: asked again for up to CONFIG_WAIT seconds
    deadline = time.monotonic() + CONFIG_WAIT
    while True:
        (res,) = verify.expect_response(conn, ApiKey.DESCRIBE_CONFIGS, dv, body).body["Results"]
        values = [c["Value"] for c in res.get("Configs") or []]
        if values == ["6000"] or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    verify.soft(
        harness,
        res["ErrorCode"] == ErrorCode.NONE and values == ["6000"],
        f"DescribeConfigs v{dv} of the group {CONFIG_WAIT:.0f} s after setting "
        f"consumer.heartbeat.interval.ms=6000: error {res['ErrorCode']}, values {values}",
        "CONSUMER-GROUPS.R9",
    )
    m = g.new_member()
    got = joined(harness, g, m, "member after the group's heartbeat interval was set")
    first = got["HeartbeatIntervalMs"]
    # the coordinator may be another broker than the one that described the config: it carries
    # the interval once it has the metadata too, so the member heartbeats for up to CONFIG_WAIT
    deadline = time.monotonic() + CONFIG_WAIT
    while got["HeartbeatIntervalMs"] != 6000 and time.monotonic() < deadline:
        time.sleep(0.2)
        got = g.heartbeat(m)
        if got["ErrorCode"] != ErrorCode.NONE:
            break
    verify.soft(
        harness,
        got["HeartbeatIntervalMs"] == 6000,
        f"heartbeat interval in the join answer {first}, in the member's answers for "
        f"{CONFIG_WAIT:.0f} s after it {got['HeartbeatIntervalMs']} (last error "
        f"{got['ErrorCode']}); the group's config says 6000",
        "CONSUMER-GROUPS.R9",
    )
    g.heartbeat(m, MemberEpoch=-1)


def owns_eventually(g: ConsumerGroup, m: Member, want: set, wait: float) -> bool:
    """Heartbeat ``m`` until it owns ``want`` (at most ``wait`` seconds)."""
    deadline = time.monotonic() + wait
    while not want <= m.owned_pairs():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.25)
        g.heartbeat(m)
    return True


@conformance(
    "consumer-groups/heartbeat/new-partitions",
    "CONSUMER-GROUPS.R10",
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_new_partitions(harness: Harness) -> None:
    harness.require(ApiKey.CREATE_PARTITIONS)
    topic = obtain(harness, "cgrow", 2, exact=True, given=False)
    tid = topic_ids(harness, [topic.name])[topic.name]
    g = ConsumerGroup(harness, [topic.name])
    m = g.new_member()
    joined(harness, g, m, "member")
    verify.check(
        owns_eventually(g, m, {(tid, 0), (tid, 1)}, SETTLE),
        f"the only member owns {sorted(m.owned_pairs())}, not both partitions of {topic.name}",
        "CONSUMER-GROUPS.R10",
    )
    version = harness.pick_version(ApiKey.CREATE_PARTITIONS)
    body = {
        "Topics": [{"Name": topic.name, "Count": 4, "Assignments": None}],
        "TimeoutMs": 10000,
        "ValidateOnly": False,
    }
    got = admin_call(harness, ApiKey.CREATE_PARTITIONS, version, body)
    verify.check(
        got["Results"][0]["ErrorCode"] == ErrorCode.NONE,
        f"CreatePartitions v{version} of {topic.name} to 4: {got['Results'][0]}",
        "CONSUMER-GROUPS.R10",
    )
    want = {(tid, p) for p in range(4)}
    verify.soft(
        harness,
        owns_eventually(g, m, want, GROWN_WAIT),
        f"{GROWN_WAIT:.0f} s after {topic.name} grew from 2 to 4 partitions its only consumer "
        f"owns {sorted(p for _, p in m.owned_pairs())}",
        "CONSUMER-GROUPS.R10",
    )
    g.heartbeat(m, MemberEpoch=-1)


@conformance(
    "consumer-groups/heartbeat/regex-new-topic",
    "CONSUMER-GROUPS.R11",
    api=ApiKey.CONSUMER_GROUP_HEARTBEAT,
)
def test_regex_picks_up_new_topic(harness: Harness) -> None:
    newest(harness, ApiKey.CONSUMER_GROUP_HEARTBEAT, "1+")
    what = fresh_name("cgre").removeprefix("kc-suite-").replace("-", "")
    g = ConsumerGroup(harness, [], versions="1+")
    regex = f"kc-suite-{what}.*"
    m = g.new_member()
    got = g.heartbeat(m, SubscribedTopicNames=None, SubscribedTopicRegex=regex)
    verify.answered_none(got, f"join subscribed by regex {regex!r}: error", "CONSUMER-GROUPS.R11")
    topic = obtain(harness, what, 2, exact=True, given=False)
    verify.check(
        topic.name.startswith(f"kc-suite-{what}"),
        f"the suite's topic {topic.name} does not match {regex!r}",
        "CONSUMER-GROUPS.R11",
    )
    tid = topic_ids(harness, [topic.name])[topic.name]
    want = {(tid, 0), (tid, 1)}
    verify.soft(
        harness,
        owns_eventually(g, m, want, 2 * SETTLE),
        f"{2 * SETTLE:.0f} s after {topic.name} (matching {regex!r}) was created the member "
        f"subscribed by that regex owns {sorted(m.owned_pairs())}",
        "CONSUMER-GROUPS.R11",
    )
    described = [x.get("SubscribedTopicRegex") for x in g.describe().get("Members") or []]
    verify.soft(
        harness,
        described == [regex],
        f"ConsumerGroupDescribe lists the member's SubscribedTopicRegex as {described}",
        "CONSUMER-GROUPS.R11",
    )
    g.heartbeat(m, MemberEpoch=-1)


@conformance(
    "consumer-groups/delete",
    "CONSUMER-GROUPS.R12",
    api=ApiKey.DELETE_GROUPS,
)
def test_delete(harness: Harness) -> None:
    g = ConsumerGroup(harness, [fresh_name("cg-topic")])
    m = g.new_member()
    joined(harness, g, m, "member")
    v = harness.pick_version(ApiKey.DELETE_GROUPS)

    def delete() -> int:
        body = {"GroupsNames": [g.name]}
        got = verify.expect_response(g.admin, ApiKey.DELETE_GROUPS, v, body).body
        return got["Results"][0]["ErrorCode"]

    busy = delete()
    verify.soft(
        harness,
        busy == ErrorCode.NON_EMPTY_GROUP,
        f"DeleteGroups v{v} of a consumer group with a member: error {busy}",
        "CONSUMER-GROUPS.R12",
    )
    g.heartbeat(m, MemberEpoch=-1)
    done = delete()
    verify.soft(
        harness,
        done == ErrorCode.NONE,
        f"DeleteGroups v{v} of the consumer group once its member left: error {done}",
        "CONSUMER-GROUPS.R12",
    )
    gone = g.describe()["ErrorCode"]
    verify.soft(
        harness,
        gone == ErrorCode.GROUP_ID_NOT_FOUND,
        f"ConsumerGroupDescribe of the deleted group: error {gone}",
        "CONSUMER-GROUPS.R12",
    )
