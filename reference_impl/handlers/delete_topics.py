"""DeleteTopics (20): brokers forward it (KIP-590); the controller deletes the topics.

Topics are named (v0-5) or, from v6, named or given by id (one of them: both, or neither, is
INVALID_REQUEST, as Kafka answers). The hosting brokers get
StopReplica with deletion; the answer waits (up to TimeoutMs) until every Online broker has
dropped the topic from its metadata.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from reference_impl.forwarded import mutation_api
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView, NodeView

ROLES = ("broker", "controller")


def api(node: NodeView) -> Api:
    return mutation_api(node, ApiKey.DELETE_TOPICS, delete)


async def delete(node: ControllerView, ctx: RequestContext, body: dict) -> dict:
    image = node.require_active()
    if ctx.version >= 6:
        wanted = [(t["Name"], t["TopicId"]) for t in body["Topics"]]
    else:
        wanted = [(name, ZERO_UUID) for name in body["TopicNames"]]
    results = []
    doomed: list[str] = []
    for name, topic_id in wanted:
        result: dict[str, Any] = {"Name": name, "TopicId": topic_id, "ErrorCode": 0}
        results.append(result)
        if name is not None and topic_id != ZERO_UUID:
            result.update(ErrorCode=ErrorCode.INVALID_REQUEST, ErrorMessage="name or id, not both")
            continue
        if name is None and topic_id == ZERO_UUID:
            result.update(ErrorCode=ErrorCode.INVALID_REQUEST, ErrorMessage="neither name nor id")
            continue
        if name is None:
            name = image.topic_ids.get(topic_id)
            if name is None:
                result.update(ErrorCode=ErrorCode.UNKNOWN_TOPIC_ID)
                continue
            result["Name"] = name
        if not node.authorize(ctx.session, "DELETE", ("TOPIC", name)):
            result.update(ErrorCode=ErrorCode.TOPIC_AUTHORIZATION_FAILED)
            continue
        topic = image.topics.get(name)
        if topic is None:
            result.update(ErrorCode=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            continue
        result["TopicId"] = topic.topic_id
        if name not in doomed:
            doomed.append(name)
    if doomed:
        offset = await node.commit([{"type": "remove_topic", "name": n} for n in doomed])
        await node.wait_propagated(offset, body["TimeoutMs"])
    for r in results:
        r.setdefault("ErrorMessage", None)
        r["ErrorCode"] = int(r["ErrorCode"])
    return {"ThrottleTimeMs": 0, "Responses": results}
