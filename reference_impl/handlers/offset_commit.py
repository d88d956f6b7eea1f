"""OffsetCommit (8): store a group's consumed positions, durably, before answering.

A generation below 0 with no member id is a commit from outside group management (admin
tools, consumers using assign): accepted while the group has no members. Partitions that do
not exist get UNKNOWN_TOPIC_OR_PARTITION; topics the principal may not READ get
TOPIC_AUTHORIZATION_FAILED. A missing commit timestamp (v1) is the broker's clock. v10 (Kafka
4.x) names topics by id (the broker's metadata gives the name; an id it does not know is
UNKNOWN_TOPIC_ID for each of its partitions, nothing committed) and answers them by id.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.groups.group_types import OffsetAndMetadata
from reference_impl.handlers.group_common import (
    allowed,
    commit_topics,
    group_allowed,
    groups,
    merged_by_id,
    partition_errors,
)
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

#: the first version naming topics by id
TOPIC_IDS_VERSION = 10


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        group_id = body["GroupId"]
        topics, requested, results = commit_topics(node, body["Topics"], v >= TOPIC_IDS_VERSION)
        if not group_allowed(node, ctx, "READ", group_id):
            results.update({(t, i): ErrorCode.GROUP_AUTHORIZATION_FAILED for t, i, _ in requested})
        else:
            offsets = {}
            for topic, index, p in requested:
                if not allowed(node, ctx, "READ", ("TOPIC", topic)):
                    results[(topic, index)] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                    continue
                offsets[(topic, index)] = OffsetAndMetadata(
                    p["CommittedOffset"],
                    p["CommittedLeaderEpoch"] if v >= 6 else -1,
                    p["CommittedMetadata"] or "",
                    p["CommitTimestamp"] if v == 1 else -1,
                )
            if offsets:
                results.update(
                    await service.commit(
                        group_id,
                        body["MemberId"] if v >= 1 else "",
                        body["GroupInstanceId"] if v >= 7 else None,
                        body["GenerationIdOrMemberEpoch"] if v >= 1 else -1,
                        offsets,
                        v,
                    )
                )
        answered = partition_errors(topics, results)
        if v >= TOPIC_IDS_VERSION:
            answered = merged_by_id(answered, topics)
        return {"ThrottleTimeMs": 0, "Topics": answered}

    return Api(ApiKey.OFFSET_COMMIT, handle)
