"""OffsetFetch (9): a group's committed offsets (v8+: several groups per request).

Nothing committed reads as offset -1 with empty metadata and no error. A null topic list
(v2+) means every partition the group committed. Group-level errors (NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, GROUP_AUTHORIZATION_FAILED …) are per partition in v0-1, the
top-level ErrorCode in v2-7 and the group's ErrorCode from v8, as Kafka answers them.
Offsets committed in a transaction that has not ended are not shown; with RequireStable (v7+)
such a partition (or one whose commit is not yet durable) is UNSTABLE_OFFSET_COMMIT, offset -1
(Kafka's getOffsets with requireStable). v9 names the member (MemberId, MemberEpoch): a KIP-848
consumer group answers UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH when they are not its member's.
v10 (Kafka 4.x) names topics by id, asked and answered (an id the broker does not know is
UNKNOWN_TOPIC_ID for each partition asked; a committed topic that no longer exists is left out
of an answer for every topic).
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from reference_impl.groups.group_types import OffsetAndMetadata
from reference_impl.handlers.group_common import (
    allowed,
    group_allowed,
    groups,
)
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView

#: the first version naming topics by id
TOPIC_IDS_VERSION = 10


def api(node: BrokerView) -> Api:
    service = groups(node)

    def fetch(
        ctx: RequestContext,
        group_id: str,
        topics: list[dict] | None,
        stable: bool = False,
        member: tuple[str | None, int] = (None, -1),
    ) -> tuple[int, list]:
        """(group error, [(topic, [(partition, OffsetAndMetadata | None, error)])])."""
        if not group_allowed(node, ctx, "DESCRIBE", group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, []
        wanted = None
        if topics is not None:
            wanted = [(t["Name"], i) for t in topics for i in t["PartitionIndexes"]]
        error, found = service.coordinator.offsets.fetch_offsets(group_id, wanted, *member)
        if error:
            return error, []
        # every topic asked for is answered, one asked for with no partition too (as Kafka does)
        by_topic: dict[str, list] = {t["Name"]: [] for t in topics or []}
        for (topic, index), om in found.items():
            permitted = allowed(node, ctx, "DESCRIBE", ("TOPIC", topic))
            if wanted is None and not permitted:
                continue
            error = 0 if permitted else ErrorCode.TOPIC_AUTHORIZATION_FAILED
            if (
                not error
                and stable
                and service.coordinator.offsets.has_pending_offset(group_id, (topic, index))
            ):
                error = ErrorCode.UNSTABLE_OFFSET_COMMIT
            by_topic.setdefault(topic, []).append((index, om, error))
        return 0, list(by_topic.items())

    async def handle(ctx: RequestContext, body: dict) -> dict:
        v = ctx.version
        if v >= 8:
            out = []
            for g in body["Groups"]:
                member = (g["MemberId"], g["MemberEpoch"]) if v >= 9 else (None, -1)
                asked, unknown = g["Topics"], []
                if v >= TOPIC_IDS_VERSION and asked is not None:
                    ids = node.metadata_cache.topic_ids
                    unknown = [t for t in asked if t["TopicId"] not in ids]
                    asked = [{**t, "Name": ids[t["TopicId"]]} for t in asked if t not in unknown]
                error, topics = fetch(ctx, g["GroupId"], asked, body["RequireStable"], member)
                answered = _topics(topics)
                if v >= TOPIC_IDS_VERSION:
                    answered = _by_id(node, answered, unknown, error)
                out.append({"GroupId": g["GroupId"], "Topics": answered, "ErrorCode": error})
            return {"ThrottleTimeMs": 0, "Groups": out}
        requested = body["Topics"] if v >= 2 else body["Topics"] or []
        error, topics = fetch(ctx, body["GroupId"], requested, v >= 7 and body["RequireStable"])
        if error and v < 2:
            topics = [
                (t["Name"], [(i, None, error) for i in t["PartitionIndexes"]]) for t in requested
            ]
        return {"ThrottleTimeMs": 0, "Topics": _topics(topics), "ErrorCode": error if v >= 2 else 0}

    return Api(ApiKey.OFFSET_FETCH, handle)


def _by_id(node: BrokerView, answered: list[dict], unknown: list[dict], error: int) -> list[dict]:
    """v10+'s topics: each by its id (a topic without one, deleted since its commit, left out),
    then the ids asked for that the broker does not know, UNKNOWN_TOPIC_ID."""
    known = node.metadata_cache.topics
    out = [{**t, "TopicId": known[t["Name"]].topic_id} for t in answered if t["Name"] in known]
    if error:
        return out
    for t in unknown:
        partitions = [
            {
                "PartitionIndex": i,
                "CommittedOffset": -1,
                "CommittedLeaderEpoch": -1,
                "Metadata": "",
                "ErrorCode": ErrorCode.UNKNOWN_TOPIC_ID,
            }
            for i in t["PartitionIndexes"]
        ]
        out.append({"TopicId": t["TopicId"], "Partitions": partitions})
    return out


def _topics(topics: list[tuple[str, list[tuple[int, OffsetAndMetadata | None, int]]]]) -> list:
    return [
        {
            "Name": name,
            "Partitions": [
                {
                    "PartitionIndex": index,
                    "CommittedOffset": om.offset if om is not None and not error else -1,
                    "CommittedLeaderEpoch": om.leader_epoch if om is not None and not error else -1,
                    "Metadata": om.metadata if om is not None and not error else "",
                    "ErrorCode": error,
                }
                for index, om, error in partitions
            ],
        }
        for name, partitions in topics
    ]
