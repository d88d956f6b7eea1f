"""OffsetCommit (8): store a group's consumed positions, durably, before answering.

A generation below 0 with no member id is a commit from outside group management (admin
tools, consumers using assign): accepted while the group has no members. Partitions that do
not exist get UNKNOWN_TOPIC_OR_PARTITION; topics the principal may not READ get
TOPIC_AUTHORIZATION_FAILED. A missing commit timestamp (v1) is the broker's clock.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.groups.group_types import OffsetAndMetadata
from reference_impl.handlers.group_common import (
    allowed,
    group_allowed,
    groups,
    partition_errors,
)
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView


def api(node: BrokerView) -> Api:
    service = groups(node)

    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        group_id = body["GroupId"]
        requested = [
            (t["Name"], p["PartitionIndex"], p) for t in body["Topics"] for p in t["Partitions"]
        ]
        results: dict[tuple[str, int], int] = {}
        if not group_allowed(node, ctx, "READ", group_id):
            results = {(t, i): ErrorCode.GROUP_AUTHORIZATION_FAILED for t, i, _ in requested}
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
        return {"ThrottleTimeMs": 0, "Topics": partition_errors(body["Topics"], results)}

    # v10 (Kafka 4.x) names topics by id: not written
    return Api(ApiKey.OFFSET_COMMIT, handle, max_version=9)
