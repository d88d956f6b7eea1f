"""What the handlers of KIP-848 consumer groups and KIP-932 share groups share: a heartbeat's
answer, and ConsumerGroupDescribe / ShareGroupDescribe, which describe a group of their type
the same way (per group: DESCRIBE on the GROUP, else GROUP_AUTHORIZATION_FAILED; the type's
errors, ``groups/modern.py``'s ``describe_group``; its state, epochs, assignor and members, each
member's assignment by topic id and name)."""

from __future__ import annotations

import uuid
from collections.abc import Callable

from conformance.protocol import AUTHORIZED_OPERATIONS_UNSET, ApiKey, ErrorCode
from reference_impl.groups.modern import HeartbeatResult, ModernGroup, ModernGroups
from reference_impl.groups.service import GroupService
from reference_impl.handlers.common import authorized_operations
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

GROUP_OPERATIONS = ("READ", "DELETE", "DESCRIBE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS")


def heartbeat_answer(r: HeartbeatResult) -> dict:
    """A ConsumerGroupHeartbeat / ShareGroupHeartbeat answer (the assignment by topic id)."""
    return {
        "ThrottleTimeMs": 0,
        "ErrorCode": int(r.error),
        "ErrorMessage": r.message,
        "MemberId": r.member_id,
        "MemberEpoch": r.member_epoch,
        "HeartbeatIntervalMs": r.heartbeat_interval_ms,
        "Assignment": None
        if r.assignment is None
        else {
            "TopicPartitions": [
                {"TopicId": t, "Partitions": sorted(ps)} for t, ps in sorted(r.assignment.items())
            ]
        },
    }


def assignment(node: BrokerView, partitions: dict[uuid.UUID, set[int]]) -> dict:
    """Partitions by topic id and name, as the describe APIs answer an assignment."""
    names = node.metadata_cache.topic_ids
    return {
        "TopicPartitions": [
            {"TopicId": t, "TopicName": names.get(t, ""), "Partitions": sorted(ps)}
            for t, ps in sorted(partitions.items())
            if ps
        ]
    }


def describe_api(
    node: BrokerView,
    api_key: ApiKey,
    group_type: Callable[[GroupService], ModernGroups],
    assignor: Callable[[ModernGroup], str],
    member: Callable[[ModernGroup, object], dict],
    **api_options: object,
) -> Api:
    """The describe API of a group type: ``member`` gives one member's entry."""
    service = groups(node)

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
        error, message, group = group_type(service).describe_group(group_id)
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
            "AssignorName": assignor(group),
            "Members": [member(group, m) for m in group.members.values()],
        }

    async def handle(ctx: RequestContext, body: dict) -> dict:
        with_operations = body["IncludeAuthorizedOperations"]
        return {
            "ThrottleTimeMs": 0,
            "Groups": [describe(ctx, g, with_operations) for g in body["GroupIds"]],
        }

    return Api(api_key, handle, **api_options)  # type: ignore[arg-type]
