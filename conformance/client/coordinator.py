"""A consumer group's committed offsets: FindCoordinator, then OffsetCommit / OffsetFetch.

Commits are made as Kafka's "simple" (assign-mode) consumers make them: generation -1 and no
member id, which a group coordinator accepts for a group with no members. The coordinator is
looked up again after COORDINATOR_NOT_AVAILABLE / NOT_COORDINATOR, and transient errors are
retried until the timeout.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from conformance.client import errors
from conformance.client.metadata import ClusterMetadata
from conformance.client.record_types import OffsetAndMetadata, TopicPartition
from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID

GROUP_KEY = 0
#: OffsetCommit and OffsetFetch v10 (Kafka 4.x) name topics by id; up to v9 by name
LAST_OFFSETS_BY_NAME = 9

T = TypeVar("T")


class GroupCoordinator:
    """The group coordinator of one group, found on first use."""

    def __init__(self, cluster: ClusterMetadata, group_id: str) -> None:
        self.cluster, self.group_id = cluster, group_id
        self.node: int | None = None

    async def find(self, timeout: float) -> int:
        """The coordinator's node id (asked of any broker, retried until ``timeout``)."""
        if self.node is not None:
            return self.node
        deadline = time.monotonic() + timeout
        while True:
            err: Exception | None = None
            for node in self.cluster.any_node():
                try:
                    version, body = await self.cluster.request(
                        node, ApiKey.FIND_COORDINATOR, self._find_request
                    )
                except (ConnectionError, TimeoutError) as e:
                    err = e
                    continue
                entry = body["Coordinators"][0] if version >= 4 else body
                code = entry["ErrorCode"]
                if code == ErrorCode.NONE:
                    self.cluster.add_node(entry["NodeId"], entry["Host"], entry["Port"])
                    self.node = entry["NodeId"]
                    return self.node
                err = errors.KafkaError(code, entry["ErrorMessage"], context="FindCoordinator")
                if not errors.is_retriable(code):
                    raise err
                break
            if time.monotonic() + self.cluster.retry_backoff > deadline:
                raise errors.ClientError(f"no coordinator for group {self.group_id!r}: {err}")
            await asyncio.sleep(self.cluster.retry_backoff)

    def _find_request(self, version: int) -> dict:
        return {"Key": self.group_id, "KeyType": GROUP_KEY, "CoordinatorKeys": [self.group_id]}

    async def call(
        self,
        api_key: int,
        build: Callable[[int], dict],
        check: Callable[[int, dict], T],
        timeout: float,
        *,
        request_timeout: float | None = None,
        max_version: int | None = None,
        topics: list[str] | None = None,
    ) -> T:
        """Send ``build(version)`` to the coordinator; ``check(version, body)`` gives the result
        or raises KafkaError. Connection failures and retriable codes are retried (the
        coordinator looked up again when it moved, the metadata of ``topics`` asked again when
        a code says it is stale, e.g. UNKNOWN_TOPIC_ID for an id sent by v10) until
        ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            node = await self.find(max(deadline - time.monotonic(), 0.1))
            try:
                version, body = await self.cluster.request(
                    node, api_key, build, timeout=request_timeout, max_version=max_version
                )
                return check(version, body)
            except (ConnectionError, TimeoutError, errors.KafkaError) as e:
                if isinstance(e, errors.KafkaError) and not e.retriable:
                    raise
                if not isinstance(e, errors.KafkaError) or e.code in errors.STALE_COORDINATOR:
                    self.node = None
                if time.monotonic() + self.cluster.retry_backoff > deadline:
                    raise
                if isinstance(e, errors.KafkaError) and e.code in errors.STALE_METADATA and topics:
                    with contextlib.suppress(ConnectionError, TimeoutError):
                        await self.cluster.refresh(topics)
            await asyncio.sleep(self.cluster.retry_backoff)

    async def _by_id(self, topics: list[str]) -> int | None:
        """The highest OffsetCommit/OffsetFetch version that can name ``topics``: any when the
        metadata gives every topic's id (asked for once when it has not yet), else v9 (by
        name)."""

        def known() -> bool:
            return all(self.cluster.topic_id(t) != ZERO_UUID for t in topics)

        if not known():
            with contextlib.suppress(ConnectionError, TimeoutError):
                await self.cluster.refresh(topics)
        return None if known() else LAST_OFFSETS_BY_NAME

    def _topic(self, version: int, entry: dict) -> str | None:
        """The topic an answer's entry is about (v10+: by id, None when the id is unknown)."""
        if version > LAST_OFFSETS_BY_NAME:
            return self.cluster.topic_name(entry["TopicId"])
        return entry["Name"]

    async def commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        *,
        generation: int = -1,
        member_id: str = "",
        timeout: float = 30.0,
    ) -> None:
        """OffsetCommit; raises KafkaError for the first partition the coordinator refused."""
        topics: dict[str, list[dict]] = {}
        for tp, om in offsets.items():
            topics.setdefault(tp.topic, []).append(
                {
                    "PartitionIndex": tp.partition,
                    "CommittedOffset": om.offset,
                    "CommittedLeaderEpoch": -1 if om.leader_epoch is None else om.leader_epoch,
                    "CommitTimestamp": -1,
                    "CommittedMetadata": om.metadata,
                }
            )

        def build(version: int) -> dict:
            return {
                "GroupId": self.group_id,
                "GenerationIdOrMemberEpoch": generation,
                "MemberId": member_id,
                "GroupInstanceId": None,
                "RetentionTimeMs": -1,
                "Topics": [
                    {"Name": t, "TopicId": self.cluster.topic_id(t), "Partitions": ps}
                    for t, ps in topics.items()
                ],
            }

        def check(version: int, body: dict) -> None:
            for t in body["Topics"]:
                for p in t["Partitions"]:
                    tp = f"{self._topic(version, t)}-{p['PartitionIndex']}"
                    errors.raise_for(p["ErrorCode"], context=f"OffsetCommit {tp}")

        top = await self._by_id(list(topics))
        await self.call(
            ApiKey.OFFSET_COMMIT, build, check, timeout, max_version=top, topics=list(topics)
        )

    async def fetch(
        self, partitions: list[TopicPartition], *, timeout: float = 30.0
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        """OffsetFetch: the committed offset of each partition (None: nothing committed)."""
        topics: dict[str, list[int]] = {}
        for tp in partitions:
            topics.setdefault(tp.topic, []).append(tp.partition)
        # v0-7 name topics at the top, v8+ per group (by id from v10)
        named = [{"Name": t, "PartitionIndexes": ps} for t, ps in topics.items()]

        def build(version: int) -> dict:
            # the ids as the metadata has them when the request is built (_by_id may refresh)
            wanted = [
                {"Name": t, "TopicId": self.cluster.topic_id(t), "PartitionIndexes": ps}
                for t, ps in topics.items()
            ]
            return {
                "GroupId": self.group_id,
                "Topics": named,
                "Groups": [
                    {
                        "GroupId": self.group_id,
                        "MemberId": None,
                        "MemberEpoch": -1,
                        "Topics": wanted,
                    }
                ],
                "RequireStable": False,
            }

        def check(version: int, body: dict) -> dict[TopicPartition, OffsetAndMetadata | None]:
            if version >= 8:
                group = body["Groups"][0]
                errors.raise_for(group["ErrorCode"], context="OffsetFetch")
                answered = group["Topics"]
            else:
                if version >= 2:
                    errors.raise_for(body["ErrorCode"], context="OffsetFetch")
                answered = body["Topics"]
            out: dict[TopicPartition, OffsetAndMetadata | None] = {}
            for t in answered:
                name = self._topic(version, t)
                if name is None:  # an id the metadata no longer knows: ask again, never "none"
                    raise errors.KafkaError(
                        ErrorCode.UNKNOWN_TOPIC_ID,
                        context=f"OffsetFetch of topic id {t['TopicId']}",
                    )
                for p in t["Partitions"]:
                    tp = TopicPartition(name, p["PartitionIndex"])
                    errors.raise_for(p["ErrorCode"], context=f"OffsetFetch {tp}")
                    off = p["CommittedOffset"]
                    epoch = p["CommittedLeaderEpoch"]
                    out[tp] = (
                        None
                        if off < 0
                        else OffsetAndMetadata(
                            off, p["Metadata"] or "", None if epoch < 0 else epoch
                        )
                    )
            return out

        top = await self._by_id(list(topics))
        return await self.call(
            ApiKey.OFFSET_FETCH, build, check, timeout, max_version=top, topics=list(topics)
        )
