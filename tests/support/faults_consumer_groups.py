"""KIP-848 group-coordinator bugs, as answer rewrites for ``faults_groups.ProxiedCluster``: each
breaks one CONSUMER-GROUPS requirement the way a real coordinator's bug would (a partition handed
to two members, an epoch that goes back, a refusal turned into an acceptance, ...)."""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode

HEARTBEAT = ApiKey.CONSUMER_GROUP_HEARTBEAT


def no_heartbeat_interval(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R1: a join answered without a heartbeat interval."""
    if api != HEARTBEAT or body.get("ErrorCode") or not body.get("HeartbeatIntervalMs"):
        return False
    body["HeartbeatIntervalMs"] = 0
    return True


class EpochGoesBack:
    """CONSUMER-GROUPS.R2: every third answer carrying a member epoch above 1 carries one less
    (of ``heartbeat``'s answers: SHARE-GROUPS.R2 with ShareGroupHeartbeat)."""

    def __init__(self, heartbeat: int = HEARTBEAT) -> None:
        self.seen = 0
        self.heartbeat = heartbeat

    def __call__(self, api: int, version: int, body: dict) -> bool:
        if api != self.heartbeat or body.get("ErrorCode") or body.get("MemberEpoch", 0) <= 1:
            return False
        self.seen += 1
        if self.seen % 3:
            return False
        body["MemberEpoch"] -= 1
        return True


def partition_zero_to_everyone(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R3: every assignment also holds partition 0 of its first topic, so two
    members own it at once."""
    if api != HEARTBEAT or not body.get("Assignment"):
        return False
    tps = body["Assignment"]["TopicPartitions"]
    if not tps or 0 in tps[0]["Partitions"]:
        return False
    tps[0]["Partitions"] = [0, *tps[0]["Partitions"]]
    return True


def leave_keeps_epoch(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R5: a leave (-1) answered with member epoch 0."""
    if api != HEARTBEAT or body.get("MemberEpoch") != -1:
        return False
    body["MemberEpoch"] = 0
    return True


def partitions_beyond_one_withheld(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R10: partitions added to a topic (index 2 on) are never assigned."""
    if api != HEARTBEAT or not body.get("Assignment"):
        return False
    hit = False
    for tp in body["Assignment"]["TopicPartitions"]:
        kept = [p for p in tp["Partitions"] if p < 2]
        hit = hit or kept != tp["Partitions"]
        tp["Partitions"] = kept
    return hit


def regex_not_described(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R11: ConsumerGroupDescribe forgets the members' regular expressions."""
    if api != ApiKey.CONSUMER_GROUP_DESCRIBE:
        return False
    hit = False
    for g in body.get("Groups") or []:
        for m in g.get("Members") or []:
            if m.get("SubscribedTopicRegex"):
                m["SubscribedTopicRegex"] = ""
                hit = True
    return hit


def second_topic_withheld(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R14: an assignment holds the partitions of its first topic only, so a
    member that subscribes to a second topic never gets that topic's partitions."""
    if api != HEARTBEAT or not body.get("Assignment"):
        return False
    tps = body["Assignment"]["TopicPartitions"]
    if len([tp for tp in tps if tp["Partitions"]]) < 2:
        return False
    body["Assignment"]["TopicPartitions"] = tps[:1]
    return True


def consumer_group_described_as_classic(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R17: DescribeGroups (the classic API) describes a consumer group it does
    not hold as a classic group as Stable, without error."""
    if api != ApiKey.DESCRIBE_GROUPS:
        return False
    hit = False
    for g in body.get("Groups") or []:
        if g.get("GroupState") == "Dead" or g.get("ErrorCode") == ErrorCode.GROUP_ID_NOT_FOUND:
            g["GroupState"], g["ErrorCode"] = "Stable", ErrorCode.NONE
            hit = True
    return hit


def classic_member_made_leader(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R21: a classic consumer's JoinGroup into a consumer group (answered with
    no leader: the coordinator assigns) names it the leader, as if it were to assign."""
    if api != ApiKey.JOIN_GROUP or body.get("ErrorCode") or body.get("Leader") != "":
        return False
    body["Leader"] = body["MemberId"]
    return True


def classic_member_typed_consumer(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R22: ConsumerGroupDescribe calls a classic member a consumer-protocol
    member (MemberType 1)."""
    if api != ApiKey.CONSUMER_GROUP_DESCRIBE:
        return False
    hit = False
    for g in body.get("Groups") or []:
        for m in g.get("Members") or []:
            if m.get("MemberType") == 0:
                m["MemberType"] = 1
                hit = True
    return hit


def classic_group_described_dead(api: int, version: int, body: dict) -> bool:
    """CONSUMER-GROUPS.R23: DescribeGroups answers a classic group of consumers with members as
    a group it does not hold (Dead, no members): a downgrade that did not happen."""
    if api != ApiKey.DESCRIBE_GROUPS:
        return False
    hit = False
    for g in body.get("Groups") or []:
        if g.get("ProtocolType") == "consumer" and g.get("Members"):
            g["GroupState"], g["ProtocolType"], g["Members"] = "Dead", "", []
            hit = True
    return hit
