"""DescribeGroups (15): state, protocol and members of groups (assignments once Stable).

A group this coordinator does not hold is described as "Dead" without error before v6; v6
(KIP-1043, Kafka 4.4.0) answers it GROUP_ID_NOT_FOUND with a message, still "Dead". A
coordinator error comes with an empty state.
"""

from __future__ import annotations

from conformance.protocol import AUTHORIZED_OPERATIONS_UNSET, ApiKey, ErrorCode
from reference_impl.groups.group_types import DEAD_SUMMARY, NO_SUMMARY
from reference_impl.handlers.common import authorized_operations
from reference_impl.handlers.group_common import group_allowed, groups
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

GROUP_OPERATIONS = ("READ", "DELETE", "DESCRIBE")


def api(node: BrokerView) -> Api:
    service = groups(node)

    def describe(ctx: RequestContext, group_id: str, with_operations: bool) -> dict:
        entry: dict = {"GroupId": group_id, "AuthorizedOperations": AUTHORIZED_OPERATIONS_UNSET}
        error: int
        if not group_allowed(node, ctx, "DESCRIBE", group_id):
            error, summary = ErrorCode.GROUP_AUTHORIZATION_FAILED, NO_SUMMARY
        else:
            error, summary = service.coordinator.describe_group(group_id)
            if ctx.version >= 6 and not error and summary.state == DEAD_SUMMARY.state:
                error = ErrorCode.GROUP_ID_NOT_FOUND
                entry["ErrorMessage"] = f"Group {group_id} not found."
        if with_operations and not error and hasattr(node, "authorize"):
            resource = ("GROUP", group_id)
            entry["AuthorizedOperations"] = authorized_operations(
                node, ctx.session, resource, GROUP_OPERATIONS
            )
        return {
            **entry,
            "ErrorCode": int(error),
            "GroupState": summary.state,
            "ProtocolType": summary.protocol_type,
            "ProtocolData": summary.protocol_data,
            "Members": [
                {
                    "MemberId": m.member_id,
                    "GroupInstanceId": m.group_instance_id,
                    "ClientId": m.client_id,
                    "ClientHost": m.client_host,
                    "MemberMetadata": m.metadata,
                    "MemberAssignment": m.assignment,
                }
                for m in summary.members
            ],
        }

    async def handle(ctx: RequestContext, body: dict) -> dict:
        with_operations = ctx.version >= 3 and body["IncludeAuthorizedOperations"]
        return {
            "ThrottleTimeMs": 0,
            "Groups": [describe(ctx, g, with_operations) for g in body["Groups"]],
        }

    return Api(ApiKey.DESCRIBE_GROUPS, handle)
