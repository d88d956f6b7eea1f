"""How the topics-admin model (``specs/models/topics-admin.json``) meets a target: the log
model's topic binding, plus the ``metadata`` observer the model's invariant reads. Each
CreateTopics and DeleteTopics answer gains ``ListedAfter``: whether Metadata lists the topic
after it, so a topic a validate-only creation made, or one that outlived its deletion, fails
that step's own requirement rather than the invariant's. After a successful creation, growth or
deletion, Metadata is read once it shows the change (``admin.settled``, bounded: brokers learn
of it a moment after the controller answered); after anything else, right away."""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.log.binding import TopicsBinding
from conformance.suite.topics import admin

#: the answers that gain ListedAfter
LISTED_AFTER = (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS)


def settled_as(api_key: int, body: dict[str, Any]) -> int | bool | None:
    """What Metadata shows once a successful ``body`` has taken effect: the partition count
    (created or grown), None (deleted), or False for a validate-only creation, which changes
    nothing to wait for."""
    if api_key == ApiKey.DELETE_TOPICS:
        return None
    entry = body["Topics"][0]
    if api_key == ApiKey.CREATE_PARTITIONS:
        return entry["Count"]
    return False if body.get("validateOnly") else entry["NumPartitions"]


def answer_code(api_key: int, answer: dict[str, Any]) -> int:
    key = {ApiKey.CREATE_TOPICS: "Topics", ApiKey.DELETE_TOPICS: "Responses"}
    entries = answer.get(key.get(api_key, "Results")) or [{}]
    return entries[0].get("ErrorCode", -1)


class AdminBinding(TopicsBinding):
    follows_leaders = False

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        api_key = request["api_key"]
        topic = self.topic_of(api_key, body)
        expected = settled_as(api_key, body)
        answer = super().send(name, request, body, to)
        if topic is None or api_key not in (*LISTED_AFTER, ApiKey.CREATE_PARTITIONS):
            return answer
        if expected is not False and answer_code(api_key, answer) == ErrorCode.NONE:
            entry, _ = admin.settled(self.harness, topic.name, "TOPICS.R6", expected)
        else:
            entry, _ = admin.metadata(self.harness, topic.name, "TOPICS.R6")
        if api_key in LISTED_AFTER:
            answer["ListedAfter"] = entry["ErrorCode"] == 0
        return answer

    def observe(self, name: str) -> dict[str, Any]:
        """Metadata of every entity's name in one request: index -> its record (partition
        count, whether the layout is sound, the error code), None when it is unknown."""
        if name != "metadata":
            return super().observe(name)
        records: dict[int, dict[str, Any] | None] = {}
        for i, topic in enumerate(self.topics):
            entry, answer = admin.metadata(self.harness, topic.name, "TOPICS.R6")
            if entry["ErrorCode"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                records[i] = None
                continue
            parts = entry["Partitions"] or []
            rf = len(parts[0]["ReplicaNodes"]) if parts else 0
            records[i] = {
                "ErrorCode": entry["ErrorCode"],
                "partitions": len(parts),
                "sound": not admin.layout_problems(entry, answer, len(parts), rf),
            }
        return {"metadata": records}
