"""CreateTopics from the client: what the produce/consume tests need to set up their topics.

Sent to the controller Metadata names when it is a broker the client can reach (ZooKeeper-mode
Kafka requires that), otherwise to any broker (KRaft brokers forward it, KIP-590); retried on
NOT_CONTROLLER. Returns once Metadata shows every partition with a leader.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

from conformance.client import errors
from conformance.client.metadata import ClusterMetadata
from conformance.protocol import ApiKey, ErrorCode


def create_body(
    topics: Mapping[str, int],
    *,
    replication_factor: int = 1,
    timeout_ms: int = 30_000,
    validate_only: bool = False,
    configs: Mapping[str, str] | None = None,
) -> dict:
    """A CreateTopics body of ``{name: partitions}`` (no assignments), in the spec's own field
    names: the codec gives a field it is not given its default, so ``TimeoutMs`` or
    ``ValidateOnly`` (not the spec's spelling) would be sent as 60000 and false."""
    return {
        "Topics": [
            {
                "Name": name,
                "NumPartitions": n,
                "ReplicationFactor": replication_factor,
                "Assignments": [],
                "Configs": [{"Name": k, "Value": v} for k, v in (configs or {}).items()],
            }
            for name, n in topics.items()
        ],
        "timeoutMs": timeout_ms,
        "validateOnly": validate_only,
    }


async def create_topics(
    cluster: ClusterMetadata,
    topics: Mapping[str, int],
    *,
    replication_factor: int = -1,
    configs: Mapping[str, str] | None = None,
    timeout: float = 30.0,
    exist_ok: bool = False,
) -> None:
    """Create ``{name: partitions}``; ``replication_factor`` -1 is the broker's default."""
    deadline = time.monotonic() + timeout
    pending = dict(topics)
    retried = False

    def body(version: int) -> dict:
        rf = replication_factor if replication_factor > 0 or version >= 4 else 1
        return create_body(
            pending, replication_factor=rf, timeout_ms=int(timeout * 1000), configs=configs
        )

    while pending:
        if not cluster.brokers:
            await cluster.refresh(())
        node = cluster.controller_id if cluster.controller_id in cluster.brokers else None
        nodes = [node] if node is not None else cluster.any_node()
        _, resp = await cluster.request(nodes[0], ApiKey.CREATE_TOPICS, body)
        retry = False
        for t in resp["Topics"]:
            code = t["ErrorCode"]
            if code == ErrorCode.NONE or (
                code == ErrorCode.TOPIC_ALREADY_EXISTS and (exist_ok or retried)
            ):
                pending.pop(t["Name"], None)
            elif errors.is_retriable(code):  # NOT_CONTROLLER among them
                retry = True
            else:
                raise errors.KafkaError(code, t["ErrorMessage"], context=f"create {t['Name']!r}")
        if retry:
            retried = True
            if time.monotonic() > deadline:
                raise errors.ClientError(f"topics {sorted(pending)} not created in {timeout} s")
            await cluster.refresh(())
            await asyncio.sleep(cluster.retry_backoff)
    for name in topics:
        await cluster.wait_for_topic(name, max(deadline - time.monotonic(), 1.0))
