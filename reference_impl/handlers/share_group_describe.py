"""ShareGroupDescribe (77): KIP-932 share groups, their epochs, members and assignments.

Per group: DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED); an empty group id is
INVALID_GROUP_ID, a group this coordinator does not hold GROUP_ID_NOT_FOUND ("Group G not
found."), a group of another type GROUP_ID_NOT_FOUND ("Group G is not a share group."). Each
member's Assignment by topic id and name; AssignorName ``simple``. Version 1 only, as Kafka
4.4.0 advertises.
"""

from __future__ import annotations

import uuid

from conformance.protocol import AUTHORIZED_OPERATIONS_UNSET, ApiKey, ErrorCode
from reference_impl.groups.share import ASSIGNOR
from reference_impl.handlers.common import authorized_operations
from reference_impl.handlers.consumer_group_describe import GROUP_OPERATIONS
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MIN_VERSION = 1
MAX_VERSION = 1


def api(node: BrokerView) -> Api:
    service = groups(node)

    def assignment(partitions: dict[uuid.UUID, set[int]]) -> dict:
        names = node.metadata_cache.topic_ids
        return {
            "TopicPartitions": [
                {"TopicId": t, "TopicName": names.get(t, ""), "Partitions": sorted(ps)}
                for t, ps in sorted(partitions.items())
                if ps
            ]
        }

    def describe(ctx: RequestContext, group_id: str, with_operations: bool) -> dict:
        entry: dict = {
            "GroupId": group_id,
            "ErrorCode": 0,
            "ErrorMessage": None,
            "GroupState": "",
            "GroupEpoch": 0,
            "AssignmentEpoch": 0,
            "AssignorName": "",
            "Members": [],
            "AuthorizedOperations": AUTHORIZED_OPERATIONS_UNSET,
        }
        if not group_allowed(node, ctx, "DESCRIBE", group_id):
            return {**entry, "ErrorCode": int(ErrorCode.GROUP_AUTHORIZATION_FAILED)}
        error, message, group = service.coordinator.share.describe_share_group(group_id)
        if error or group is None:
            return {**entry, "ErrorCode": int(error), "ErrorMessage": message}
        if with_operations:
            entry["AuthorizedOperations"] = authorized_operations(
                node, ctx.session, ("GROUP", group_id), GROUP_OPERATIONS
            )
        return {
            **entry,
            "GroupState": group.state,
            "GroupEpoch": group.group_epoch,
            "AssignmentEpoch": group.assignment_epoch,
            "AssignorName": ASSIGNOR,
            "Members": [
                {
                    "MemberId": m.member_id,
                    "RackId": m.rack_id,
                    "MemberEpoch": m.member_epoch,
                    "ClientId": m.client_id,
                    "ClientHost": m.client_host,
                    "SubscribedTopicNames": list(m.subscribed_topic_names),
                    "Assignment": assignment(m.assigned),
                }
                for m in group.members.values()
            ],
        }

    async def handle(ctx: RequestContext, body: dict) -> dict:
        with_operations = body["IncludeAuthorizedOperations"]
        return {
            "ThrottleTimeMs": 0,
            "Groups": [describe(ctx, g, with_operations) for g in body["GroupIds"]],
        }

    return Api(
        ApiKey.SHARE_GROUP_DESCRIBE,
        handle,
        min_version=MIN_VERSION,
        max_version=MAX_VERSION,
        also_on=("zkBroker",),
    )
