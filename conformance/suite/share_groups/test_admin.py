"""KIP-932 share groups through the admin APIs: ListGroups by type, DeleteGroups, and the share
group offsets APIs (DescribeShareGroupOffsets, AlterShareGroupOffsets, DeleteShareGroupOffsets),
each refused while the group has a member and applied once it is empty."""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.consumer_groups.shared import newest, topic_ids
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.provision import obtain
from conformance.suite.kit.safety import fresh_name
from conformance.suite.share_groups.shared import SERVED, ShareGroup

LIST, DELETE = "SHARE-GROUPS.R15", "SHARE-GROUPS.R16"
DESCRIBE_OFFSETS, ALTER_OFFSETS, DELETE_OFFSETS = (
    "SHARE-GROUPS.R17",
    "SHARE-GROUPS.R18",
    "SHARE-GROUPS.R19",
)


def member_joined(harness: Harness, g: ShareGroup, req: str) -> Any:
    """A member of ``g`` that joined (one heartbeat, checked NONE under ``req``)."""
    m = g.new_member()
    g.join(m, set(), req, settle=False)
    return m


def listed(g: ShareGroup, types: list[str]) -> dict[str, dict]:
    """ListGroups v5+ on the group's coordinator, filtered by ``types``: group id -> entry."""
    v = newest(g.harness, ApiKey.LIST_GROUPS, "5+")
    body = {"StatesFilter": [], "TypesFilter": types}
    got = verify.expect_response(g.admin, ApiKey.LIST_GROUPS, v, body).body
    return {x["GroupId"]: x for x in got["Groups"]}


def delete_group(g: ShareGroup) -> int:
    v = g.harness.pick_version(ApiKey.DELETE_GROUPS)
    got = verify.expect_response(g.admin, ApiKey.DELETE_GROUPS, v, {"GroupsNames": [g.name]})
    return got.body["Results"][0]["ErrorCode"]


@conformance(
    "share-groups/admin/list-and-delete",
    LIST,
    DELETE,
    api=ApiKey.LIST_GROUPS,
)
def test_list_and_delete(harness: Harness) -> None:
    newest(harness, ApiKey.LIST_GROUPS, "5+")
    newest(harness, ApiKey.SHARE_GROUP_HEARTBEAT, SERVED)
    topic = obtain(harness, "sgadmin", 1, exact=True)
    g = ShareGroup(harness, [topic.name])
    m = member_joined(harness, g, LIST)
    shares, consumers = listed(g, ["share"]), listed(g, ["consumer"])
    entry = shares.get(g.name)
    verify.soft(
        harness,
        entry is not None and entry["GroupType"] == "share" and entry["GroupState"] == "Stable",
        f"ListGroups TypesFilter [share] with a member in the share group: {entry}; expected "
        "GroupType share, GroupState Stable",
        LIST,
    )
    verify.soft(
        harness,
        g.name not in consumers,
        f"ListGroups TypesFilter [consumer] lists the share group: {consumers.get(g.name)}",
        LIST,
    )
    refused = delete_group(g)
    verify.soft(
        harness,
        refused == ErrorCode.NON_EMPTY_GROUP,
        f"DeleteGroups of a share group with a member: error {refused}; expected NON_EMPTY_GROUP",
        DELETE,
    )
    g.leave(m)
    entry = listed(g, ["share"]).get(g.name)
    verify.soft(
        harness,
        entry is not None and entry["GroupState"] == "Empty",
        f"ListGroups TypesFilter [share] once the member left: {entry}; expected Empty",
        LIST,
    )
    deleted = delete_group(g)
    verify.soft(
        harness,
        deleted == ErrorCode.NONE,
        f"DeleteGroups of the empty share group: error {deleted}; expected NONE",
        DELETE,
    )
    after = g.describe()["ErrorCode"]
    verify.soft(
        harness,
        deleted != ErrorCode.NONE or after == ErrorCode.GROUP_ID_NOT_FOUND,
        f"ShareGroupDescribe of the deleted share group: error {after}; expected "
        "GROUP_ID_NOT_FOUND",
        DELETE,
    )


class Offsets:
    """The share group offsets APIs on ``g``'s coordinator."""

    def __init__(self, g: ShareGroup) -> None:
        self.g = g

    def describe(self, topic: str, partitions: list[int]) -> dict:
        """One group's answer: its ErrorCode and partition -> (StartOffset, ErrorCode)."""
        v = newest(self.g.harness, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS)
        body = {
            "Groups": [
                {
                    "GroupId": self.g.name,
                    "Topics": [{"TopicName": topic, "Partitions": partitions}],
                }
            ]
        }
        got = verify.expect_response(self.g.admin, ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, v, body)
        (answer,) = got.body["Groups"]
        starts = {
            p["PartitionIndex"]: (p["StartOffset"], p["ErrorCode"])
            for t in answer["Topics"]
            for p in t["Partitions"]
        }
        return {"ErrorCode": answer["ErrorCode"], "starts": starts}

    def alter(self, offsets: dict[str, dict[int, int]]) -> dict:
        v = newest(self.g.harness, ApiKey.ALTER_SHARE_GROUP_OFFSETS)
        body = {
            "GroupId": self.g.name,
            "Topics": [
                {
                    "TopicName": t,
                    "Partitions": [
                        {"PartitionIndex": p, "StartOffset": o} for p, o in sorted(ps.items())
                    ],
                }
                for t, ps in offsets.items()
            ],
        }
        got = verify.expect_response(self.g.admin, ApiKey.ALTER_SHARE_GROUP_OFFSETS, v, body)
        errors = {
            (t["TopicName"], p["PartitionIndex"]): p["ErrorCode"]
            for t in got.body["Responses"]
            for p in t["Partitions"]
        }
        return {"ErrorCode": got.body["ErrorCode"], "errors": errors}

    def delete(self, topics: list[str]) -> dict:
        v = newest(self.g.harness, ApiKey.DELETE_SHARE_GROUP_OFFSETS)
        body = {"GroupId": self.g.name, "Topics": [{"TopicName": t} for t in topics]}
        got = verify.expect_response(self.g.admin, ApiKey.DELETE_SHARE_GROUP_OFFSETS, v, body)
        errors = {t["TopicName"]: t["ErrorCode"] for t in got.body["Responses"]}
        return {"ErrorCode": got.body["ErrorCode"], "errors": errors}


@conformance(
    "share-groups/admin/offsets",
    DESCRIBE_OFFSETS,
    ALTER_OFFSETS,
    DELETE_OFFSETS,
    api=ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
)
def test_offsets(harness: Harness) -> None:
    # the API every requirement here judges first: without it each is UNSUPPORTED
    for api in (
        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS,
        ApiKey.ALTER_SHARE_GROUP_OFFSETS,
        ApiKey.DELETE_SHARE_GROUP_OFFSETS,
    ):
        newest(harness, api)
    newest(harness, ApiKey.SHARE_GROUP_HEARTBEAT, SERVED)
    topic = obtain(harness, "sgoffsets", 2, exact=True)
    topic_ids(harness, [topic.name])  # the topic is known before the group asks for it
    g = ShareGroup(harness, [topic.name])
    o = Offsets(g)
    # a group that does not exist, asked of its own coordinator
    nobody = Offsets(ShareGroup(harness, [topic.name], fresh_name("sgnone")))
    none = nobody.describe(topic.name, [0, 1])
    verify.soft(
        harness,
        none["ErrorCode"] == ErrorCode.NONE and none["starts"] == {0: (-1, 0), 1: (-1, 0)},
        f"DescribeShareGroupOffsets of a group that does not exist: {none}; expected no error "
        "and StartOffset -1 for partitions 0 and 1",
        DESCRIBE_OFFSETS,
    )
    m = member_joined(harness, g, DESCRIBE_OFFSETS)
    fresh = o.describe(topic.name, [0, 1])
    verify.soft(
        harness,
        fresh["ErrorCode"] == ErrorCode.NONE and all(e == 0 for _, e in fresh["starts"].values()),
        f"DescribeShareGroupOffsets of a share group with a member: {fresh}; expected no error",
        DESCRIBE_OFFSETS,
    )
    busy = o.alter({topic.name: {0: 1}})["ErrorCode"]
    verify.soft(
        harness,
        busy == ErrorCode.NON_EMPTY_GROUP,
        f"AlterShareGroupOffsets on a share group with a member: error {busy}; expected "
        "NON_EMPTY_GROUP",
        ALTER_OFFSETS,
    )
    busy = o.delete([topic.name])["ErrorCode"]
    verify.soft(
        harness,
        busy == ErrorCode.NON_EMPTY_GROUP,
        f"DeleteShareGroupOffsets on a share group with a member: error {busy}; expected "
        "NON_EMPTY_GROUP",
        DELETE_OFFSETS,
    )
    g.leave(m)
    missing = fresh_name("sgmissing")
    altered = o.alter({topic.name: {0: 1, 1: 0}, missing: {0: 0}})
    verify.soft(
        harness,
        altered["ErrorCode"] == ErrorCode.NONE
        and altered["errors"].get((topic.name, 0)) == ErrorCode.NONE
        and altered["errors"].get((topic.name, 1)) == ErrorCode.NONE
        and altered["errors"].get((missing, 0)) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        f"AlterShareGroupOffsets of the empty share group (partition 0 to 1, 1 to 0, and a "
        f"topic that does not exist): {altered}; expected NONE for the topic's partitions and "
        "UNKNOWN_TOPIC_OR_PARTITION for the missing one",
        ALTER_OFFSETS,
    )
    after = o.describe(topic.name, [0, 1])
    verify.soft(
        harness,
        after["starts"] == {0: (1, 0), 1: (0, 0)},
        f"DescribeShareGroupOffsets after AlterShareGroupOffsets set 1 and 0: {after}",
        ALTER_OFFSETS,
    )
    gone = o.delete([topic.name, missing])
    verify.soft(
        harness,
        gone["ErrorCode"] == ErrorCode.NONE
        and gone["errors"].get(topic.name) == ErrorCode.NONE
        and gone["errors"].get(missing) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        f"DeleteShareGroupOffsets of the empty share group (its topic and one that does not "
        f"exist): {gone}; expected NONE and UNKNOWN_TOPIC_OR_PARTITION",
        DELETE_OFFSETS,
    )
    after = o.describe(topic.name, [0, 1])
    verify.soft(
        harness,
        after["starts"] == {0: (-1, 0), 1: (-1, 0)},
        f"DescribeShareGroupOffsets after DeleteShareGroupOffsets of the topic: {after}; "
        "expected StartOffset -1",
        DELETE_OFFSETS,
    )
    unknown = nobody.delete([topic.name])["ErrorCode"]
    verify.soft(
        harness,
        unknown == ErrorCode.GROUP_ID_NOT_FOUND,
        f"DeleteShareGroupOffsets of a group that does not exist: error {unknown}; expected "
        "GROUP_ID_NOT_FOUND",
        DELETE_OFFSETS,
    )
