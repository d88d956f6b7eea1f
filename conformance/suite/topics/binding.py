"""How the topics-admin model (``specs/models/topics-admin.json``) meets a target: the log
model's topic binding, plus the ``metadata`` observer the model's invariant reads. Each
CreateTopics and DeleteTopics answer gains ``ListedAfter``: whether Metadata, asked right after
it, lists the topic; so a topic a validate-only creation made, or one that outlived its
deletion, fails that step's own requirement rather than the invariant's."""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.suite.log.binding import TopicsBinding
from conformance.suite.topics import admin


class AdminBinding(TopicsBinding):
    follows_leaders = False

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        answer = super().send(name, request, body, to)
        if request["api_key"] in (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS):
            topic = self.topic_of(request["api_key"], body)
            if topic is not None:
                entry, _ = admin.metadata(self.harness, topic.name, "TOPICS.R6")
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
