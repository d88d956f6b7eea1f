"""Small rules several handlers share: topic names, authorised-operation bitfields, configs."""

from __future__ import annotations

import re
from typing import Any

from conformance.protocol import AclOperation, ErrorCode
from reference_impl import config as cfg
from reference_impl.net.listener import Session
from reference_impl.roles import BrokerView, NodeView
from reference_impl.security.settings import SecuritySettings

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
#: the reference refuses larger topics (a fuzzed NumPartitions must not exhaust memory)
MAX_PARTITIONS = 1000

TOPIC_OPERATIONS = (
    "READ",
    "WRITE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
)
#: the operations Kafka defines on the cluster resource (the token operations are a user's,
#: KIP-373, not the cluster's: Kafka never reports them in ClusterAuthorizedOperations)
CLUSTER_OPERATIONS = (
    "CREATE",
    "ALTER",
    "DESCRIBE",
    "CLUSTER_ACTION",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "IDEMPOTENT_WRITE",
)


def topic_name_error(name: str | None) -> str | None:
    """Why ``name`` is not a legal topic name (Kafka's Topic.validate), or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME:
        return f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters"
    if not _LEGAL.match(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than '
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None


def authorized_operations(
    node: NodeView, session: Session, resource: tuple[str, str], operations: tuple[str, ...]
) -> int:
    """The bitfield of ``operations`` the session may do on ``resource`` (KIP-430): bit
    ``1 << code`` of each. The ``report_every_operation`` security fault (for the project's
    tests of SECURITY.R14 only) sets every bit, whatever the ACLs."""
    every = "report_every_operation" in SecuritySettings.of(node.config).faults
    bits = 0
    for op in operations:
        if every or node.authorize(session, op, resource):
            bits |= 1 << AclOperation[op]  # the bit of an operation is its code
    return bits


def topic_config_entries(
    overrides: dict[str, str],
    keys: list[str] | None,
    version: int,
    synonyms: bool,
    documentation: bool,
) -> list[dict[str, Any]]:
    """DescribeConfigs entries of a topic: every topic config, overridden or default."""
    out = []
    for name, d in cfg.TOPIC_CONFIGS.items():
        if keys is not None and name not in keys:
            continue
        overridden = name in overrides
        value = overrides[name] if overridden else d.default
        source = cfg.DYNAMIC_TOPIC_CONFIG if overridden else cfg.DEFAULT_CONFIG
        syn = []
        if synonyms and version >= 1:
            if overridden:
                syn.append({"Name": name, "Value": value, "Source": cfg.DYNAMIC_TOPIC_CONFIG})
            syn.append({"Name": name, "Value": d.default, "Source": cfg.DEFAULT_CONFIG})
        out.append(
            config_entry(name, value, source, d, read_only=False, synonyms=syn, doc=documentation)
        )
    return out


def config_entry(
    name: str,
    value: str | None,
    source: int,
    d: cfg.ConfigDef | None,
    *,
    read_only: bool,
    synonyms: list[dict[str, Any]],
    doc: bool,
) -> dict[str, Any]:
    return {
        "Name": name,
        "Value": value,
        "ReadOnly": read_only,
        "IsDefault": source == cfg.DEFAULT_CONFIG,
        "ConfigSource": source,
        "IsSensitive": False,
        "Synonyms": synonyms,
        "ConfigType": d.type if d is not None else cfg.STRING,
        "Documentation": (d.doc if d is not None else "") if doc else None,
    }


def created_topic_configs(overrides: dict[str, str]) -> list[dict[str, Any]]:
    """CreateTopics v5+ ``Configs``: the new topic's configs with their sources."""
    return [
        {
            "Name": e["Name"],
            "Value": e["Value"],
            "ReadOnly": e["ReadOnly"],
            "ConfigSource": e["ConfigSource"],
            "IsSensitive": e["IsSensitive"],
        }
        for e in topic_config_entries(overrides, None, 1, False, False)
    ]


def controller_request_error(
    node: BrokerView, ctx: Any, body: dict, broker_epoch_since: int
) -> int:
    """Why a broker refuses an UpdateMetadata / LeaderAndIsr / StopReplica, or 0.

    It needs ClusterAction (broker principals), a controller epoch not older than the last
    one seen, and exactly this broker's current epoch: a broker obeys only the controller it is
    registered with (versions without the epoch field are refused).
    """
    from reference_impl.security_hooks import CLUSTER, CLUSTER_ACTION

    if not node.authorize(ctx.session, CLUSTER_ACTION, CLUSTER):
        return int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    if body["ControllerEpoch"] < node.metadata_cache.controller_epoch:
        return int(ErrorCode.STALE_CONTROLLER_EPOCH)
    if ctx.version < broker_epoch_since or body["BrokerEpoch"] != node.broker_epoch:
        return int(ErrorCode.STALE_BROKER_EPOCH)
    return 0
