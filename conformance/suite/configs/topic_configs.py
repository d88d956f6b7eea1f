"""A topic's configs on the wire: DescribeConfigs as (value, source) per name, AlterConfigs and
IncrementalAlterConfigs of one topic, and the wait until every broker reports a change."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

from conformance.protocol import ApiKey, ConfigResourceType, ErrorCode
from conformance.suite.kit import brokers as cluster
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection

#: ConfigSource values of DescribeConfigs v1+
TOPIC_CONFIG, DEFAULT_CONFIG = 1, 5
SOURCES = {
    1: "TOPIC_CONFIG",
    2: "DYNAMIC_BROKER_CONFIG",
    3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG",
    5: "DEFAULT_CONFIG",
}
#: how long brokers may take to report a change the controller acknowledged
PROPAGATION = 5.0

Configs = dict[str, tuple[str | None, int]]


def describe(
    harness: Harness,
    conn: SyncConnection,
    topics: list[str],
    keys: list[str] | None = None,
    *,
    req: str = "CONFIGS.R1",
) -> dict[str, tuple[int, Configs]]:
    """DescribeConfigs (v1+) of ``topics``: name -> (error code, {config: (value, source)})."""
    version = harness.pick_version(ApiKey.DESCRIBE_CONFIGS, "1+")
    body = {
        "Resources": [
            {"ResourceType": ConfigResourceType.TOPIC, "ResourceName": t, "ConfigurationKeys": keys}
            for t in topics
        ],
        "IncludeSynonyms": False,
        "IncludeDocumentation": False,
    }
    got = verify.expect_response(conn, ApiKey.DESCRIBE_CONFIGS, version, body, served=req).body
    return {
        r["ResourceName"]: (
            r["ErrorCode"],
            {c["Name"]: (c["Value"], c["ConfigSource"]) for c in r["Configs"] or []},
        )
        for r in got["Results"]
    }


def configs_of(harness: Harness, conn: SyncConnection, topic: str, req: str) -> Configs:
    got = describe(harness, conn, [topic], req=req)
    code, configs = got.get(topic, (None, {}))
    verify.check(code == ErrorCode.NONE, f"DescribeConfigs of topic {topic}: error {code}", req)
    return configs


def alter(
    harness: Harness,
    conn: SyncConnection,
    topic: str,
    configs: dict[str, str | None],
    *,
    validate_only: bool = False,
) -> int:
    """AlterConfigs of one topic: the resource's error code."""
    version = harness.pick_version(ApiKey.ALTER_CONFIGS)
    body = {
        "Resources": [
            {
                "ResourceType": ConfigResourceType.TOPIC,
                "ResourceName": topic,
                "Configs": [{"Name": k, "Value": v} for k, v in configs.items()],
            }
        ],
        "ValidateOnly": validate_only,
    }
    got = verify.expect_response(conn, ApiKey.ALTER_CONFIGS, version, body).body
    return got["Responses"][0]["ErrorCode"]


def incremental(
    harness: Harness,
    conn: SyncConnection,
    topic: str,
    ops: Iterable[tuple[str, int, str | None]],
    *,
    validate_only: bool = False,
) -> int:
    """IncrementalAlterConfigs of one topic ((name, operation, value) each): its error code."""
    version = harness.pick_version(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    body = {
        "Resources": [
            {
                "ResourceType": ConfigResourceType.TOPIC,
                "ResourceName": topic,
                "Configs": [{"Name": n, "ConfigOperation": op, "Value": v} for n, op, v in ops],
            }
        ],
        "ValidateOnly": validate_only,
    }
    got = verify.expect_response(conn, ApiKey.INCREMENTAL_ALTER_CONFIGS, version, body).body
    return got["Responses"][0]["ErrorCode"]


def items(value: str | None) -> set[str]:
    """A list config's items (order is not part of the value)."""
    return {x.strip() for x in (value or "").split(",") if x.strip()}


def settle(
    harness: Harness, topic: str, holds: Callable[[Configs], bool], req: str
) -> dict[str, Configs]:
    """Each broker's configs of ``topic`` once ``holds`` is true of all of them (or the last
    ones seen when PROPAGATION ran out)."""
    conns = {str(b): harness.connect(b.endpoint) for b in cluster.brokers(harness)}
    deadline = time.monotonic() + PROPAGATION
    while True:
        views = {where: configs_of(harness, c, topic, req) for where, c in conns.items()}
        if all(holds(v) for v in views.values()) or time.monotonic() > deadline:
            return views
        time.sleep(0.05)


def source_name(source: int | None) -> str:
    return SOURCES.get(source or -1, str(source))
