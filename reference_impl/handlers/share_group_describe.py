"""ShareGroupDescribe (77): KIP-932 share groups, their epochs, members and assignments.

Per group: DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED); an empty group id is
INVALID_GROUP_ID, a group this coordinator does not hold GROUP_ID_NOT_FOUND ("Group G not
found."), a group of another type GROUP_ID_NOT_FOUND ("Group G is not a share group."). Each
member's Assignment by topic id and name; AssignorName ``simple``. Version 1 only, as Kafka
4.4.0 advertises. What ConsumerGroupDescribe shares with it is ``modern_groups.describe_api``.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from reference_impl.groups.share import ASSIGNOR, ShareGroup, ShareMember
from reference_impl.handlers.modern_groups import assignment, describe_api
from reference_impl.net.listener import Api
from reference_impl.roles import BrokerView

MIN_VERSION = 1
MAX_VERSION = 1


def api(node: BrokerView) -> Api:
    def member(group: ShareGroup, m: ShareMember) -> dict:
        return {
            "MemberId": m.member_id,
            "RackId": m.rack_id,
            "MemberEpoch": m.member_epoch,
            "ClientId": m.client_id,
            "ClientHost": m.client_host,
            "SubscribedTopicNames": list(m.subscribed_topic_names),
            "Assignment": assignment(node, m.assigned),
        }

    return describe_api(
        node,
        ApiKey.SHARE_GROUP_DESCRIBE,
        lambda service: service.coordinator.share,
        lambda group: ASSIGNOR,
        member,  # type: ignore[arg-type]
        min_version=MIN_VERSION,
        max_version=MAX_VERSION,
        also_on=("zkBroker",),
    )
