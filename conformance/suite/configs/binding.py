"""How the configs-topic model (``specs/models/configs-topic.json``) meets a target: the
entities are numeric configs of one fresh suite topic; changes go to the bootstrap broker,
views are every broker's DescribeConfigs of the topic (kept connections)."""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ConfigOperation, ConfigResourceType, ErrorCode
from conformance.suite.configs.topic_configs import PROPAGATION, TOPIC_CONFIG, describe
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.models import Binding

#: numeric topic configs every Kafka-compatible broker knows, and none the suite's other
#: traffic depends on
KEYS = ("retention.ms", "delete.retention.ms", "min.compaction.lag.ms")


class TopicConfigsBinding(Binding):
    def __init__(self, harness: Harness, topic: str) -> None:
        self.harness, self.topic = harness, topic
        self.version = harness.pick_version(ApiKey.INCREMENTAL_ALTER_CONFIGS)
        self.conn = harness.connect()
        self.views = {str(b): harness.connect(b.endpoint) for b in cluster.brokers(harness)}

    def entity_id(self, index: int) -> str:
        return KEYS[index]

    def context(self, name: str) -> Any:
        if name == "topic":
            return self.topic
        raise KeyError(name)

    def duration(self, name: str) -> float:
        if name == "propagation":
            return PROPAGATION
        raise KeyError(name)

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        return self.conn.request(request["api_key"], self.version, body).body

    def observe(self, name: str) -> dict[str, Any]:
        out: dict[str, dict[int, Any]] = {}
        for where, conn in self.views.items():
            code, configs = describe(self.harness, conn, [self.topic], list(KEYS))[self.topic]
            verify.check(
                code == ErrorCode.NONE,
                f"DescribeConfigs through {where}: error {code}",
                "CONFIGS.R1",
            )
            records: dict[int, Any] = {}
            for i, key in enumerate(KEYS):
                if key in configs:
                    value, source = configs[key]
                    state = "Overridden" if source == TOPIC_CONFIG else "Default"
                    records[i] = {"state": state, "Value": value}
            out[where] = records
        return out

    def cleanup(self, runner: Any = None) -> None:
        """Every override the example made is deleted (the next example starts at defaults)."""
        ops = [{"Name": k, "ConfigOperation": ConfigOperation.DELETE, "Value": None} for k in KEYS]
        body = {
            "Resources": [
                {
                    "ResourceType": ConfigResourceType.TOPIC,
                    "ResourceName": self.topic,
                    "Configs": ops,
                }
            ],
            "ValidateOnly": False,
        }
        try:
            self.conn.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, self.version, body)
        except Exception:
            pass
