"""ConsumerGroupDescribe (69): KIP-848 consumer groups, their epochs, members and assignments.

Per group: DESCRIBE on the GROUP (else GROUP_AUTHORIZATION_FAILED); a group this coordinator
does not hold, or a classic group, is GROUP_ID_NOT_FOUND; an empty group id INVALID_GROUP_ID.
Each member's Assignment (what it owns now, partitions it has yet to revoke included) and
TargetAssignment (where it is heading) by topic id and name. Versions 0-1 (Kafka 4.4.0's): v1
adds MemberType (KIP-1099; 1: a member of the consumer protocol). What ShareGroupDescribe
shares with it is ``modern_groups.describe_api``.
"""

from __future__ import annotations

from conformance.protocol import ApiKey
from reference_impl.groups.consumer_assignment import preferred_assignor
from reference_impl.groups.consumer_group import ConsumerGroup, ConsumerMember
from reference_impl.handlers.modern_groups import assignment, describe_api
from reference_impl.net.listener import Api
from reference_impl.roles import BrokerView

MAX_VERSION = 1
#: ConsumerGroupDescribe v1's MemberType of a member using the classic protocol (a classic
#: consumer in a consumer group, online migration) and of one using the consumer protocol
CLASSIC_MEMBER, CONSUMER_MEMBER = 0, 1


def owned(m: ConsumerMember) -> dict:
    """What a member still owns: its assigned partitions and those it has yet to revoke (Kafka
    4.4.0 describes both, KAFKA-20431: the member answers for them until it revokes them)."""
    out = {t: set(ps) for t, ps in m.assigned.items()}
    for t, ps in m.pending_revocation.items():
        out.setdefault(t, set()).update(ps)
    return out


def api(node: BrokerView) -> Api:
    def member(group: ConsumerGroup, m: ConsumerMember) -> dict:
        return {
            "MemberId": m.member_id,
            "InstanceId": m.instance_id,
            "RackId": m.rack_id,
            "MemberEpoch": m.member_epoch,
            "ClientId": m.client_id,
            "ClientHost": m.client_host,
            "SubscribedTopicNames": list(m.subscribed_topic_names),
            # Kafka 4.4.0 describes a member without one with "", not null
            "SubscribedTopicRegex": m.subscribed_topic_regex or "",
            "Assignment": assignment(node, owned(m)),
            "TargetAssignment": assignment(node, group.target.get(m.member_id, {})),
            "MemberType": CLASSIC_MEMBER if m.uses_classic else CONSUMER_MEMBER,
        }

    return describe_api(
        node,
        ApiKey.CONSUMER_GROUP_DESCRIBE,
        lambda service: service.coordinator.consumer,
        preferred_assignor,  # type: ignore[arg-type]
        member,  # type: ignore[arg-type]
        max_version=MAX_VERSION,
    )
