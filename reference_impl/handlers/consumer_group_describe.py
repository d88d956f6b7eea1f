"""ConsumerGroupDescribe (69): KIP-848 consumer groups, their epochs, members and assignments.

Per group: DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED); a group this coordinator
does not hold, or a classic group, is GROUP_ID_NOT_FOUND; an empty group id INVALID_GROUP_ID.
Each member's Assignment (what it owns now) and TargetAssignment (where it is heading) by topic
id and name. Versions 0-1 (Kafka 4.4.0's): v1 adds MemberType (KIP-1099; 1: a member of the
consumer protocol).
"""

from __future__ import annotations

import uuid

from conformance.protocol import AUTHORIZED_OPERATIONS_UNSET, ApiKey, ErrorCode
from reference_impl.handlers.common import authorized_operations
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

MAX_VERSION = 1
GROUP_OPERATIONS = ("READ", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")
#: ConsumerGroupDescribe v1's MemberType of a member using the consumer protocol
CONSUMER_MEMBER = 1


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
        consumer = service.coordinator.consumer
        error, message, group = consumer.describe_consumer_group(group_id)
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
            "AssignorName": consumer.preferred_assignor(group),
            "Members": [
                {
                    "MemberId": m.member_id,
                    "InstanceId": m.instance_id,
                    "RackId": m.rack_id,
                    "MemberEpoch": m.member_epoch,
                    "ClientId": m.client_id,
                    "ClientHost": m.client_host,
                    "SubscribedTopicNames": list(m.subscribed_topic_names),
                    # Kafka 4.4.0 describes a member without one with "", not null
                    "SubscribedTopicRegex": m.subscribed_topic_regex or "",
                    "Assignment": assignment(m.assigned),
                    "TargetAssignment": assignment(group.target.get(m.member_id, {})),
                    "MemberType": CONSUMER_MEMBER,
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

    return Api(ApiKey.CONSUMER_GROUP_DESCRIBE, handle, max_version=MAX_VERSION)
