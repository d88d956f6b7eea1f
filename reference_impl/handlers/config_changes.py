"""Config changes, as AlterConfigs (33) and IncrementalAlterConfigs (44) make them on the
controller: the two APIs differ only in how the new configs follow from the request.

Resources: topics (must exist; ALTER_CONFIGS on the topic), brokers (an id, or "" for the
cluster-wide default; ALTER_CONFIGS on CLUSTER) and groups (KIP-848's consumer.session.timeout.ms
and consumer.heartbeat.interval.ms within the brokers' bounds; ALTER_CONFIGS on the GROUP; the
group need not exist). AlterConfigs' set replaces the resource's
dynamic configs (a null value INVALID_REQUEST); IncrementalAlterConfigs applies SET, DELETE,
APPEND and SUBTRACT (list configs only) to them (a config named twice in one resource, an
unknown operation or a null SET value INVALID_REQUEST). Unknown names and invalid values are
INVALID_CONFIG, the same resource twice INVALID_REQUEST. A topic's configs are checked before
whether the topic exists, as Kafka does (a null value or an unknown name on a topic that does
not exist is INVALID_REQUEST or INVALID_CONFIG, not UNKNOWN_TOPIC_OR_PARTITION). Brokers see the
result through UpdateMetadata.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ConfigOperation, ConfigResourceType, ErrorCode, KafkaError
from reference_impl import config as cfg
from reference_impl.metadata.image import config_record
from reference_impl.net.listener import RequestContext
from reference_impl.roles import ControllerView
from reference_impl.security_hooks import CLUSTER

#: how long an answer waits for the brokers to have the change (no timeout field in the API)
PROPAGATION_WAIT_MS = 5000


def resolve(
    node: ControllerView, ctx: RequestContext, rtype: int, rname: str
) -> tuple[dict[str, str], dict[str, cfg.ConfigDef]]:
    """The resource's current dynamic configs and the definitions that apply to it."""
    image = node.require_active()
    if rtype == ConfigResourceType.TOPIC:
        if not node.authorize(ctx.session, "ALTER_CONFIGS", ("TOPIC", rname)):
            raise KafkaError(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if rname not in image.topics:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {rname} does not exist")
        return dict(image.configs.get((ConfigResourceType.TOPIC, rname), {})), cfg.TOPIC_CONFIGS
    if rtype == ConfigResourceType.BROKER:
        if not node.authorize(ctx.session, "ALTER_CONFIGS", CLUSTER):
            raise KafkaError(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        if rname != "" and not (rname.isdigit() and rname.isascii()):
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"broker id must be an integer: {rname!r}")
        return dict(image.configs.get((ConfigResourceType.BROKER, rname), {})), cfg.BROKER_CONFIGS
    if rtype == ConfigResourceType.GROUP:
        if not node.authorize(ctx.session, "ALTER_CONFIGS", ("GROUP", rname)):
            raise KafkaError(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if rname == "":
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Default group resources are not allowed.")
        groups = (node.config.settings or {}).get("groups")
        return dict(image.configs.get((ConfigResourceType.GROUP, rname), {})), cfg.group_configs(
            groups
        )
    raise KafkaError(ErrorCode.INVALID_REQUEST, f"unsupported resource type {rtype}")


def check(defs: dict[str, cfg.ConfigDef], values: dict[str, str]) -> None:
    for name, value in values.items():
        d = defs.get(name)
        if d is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown config name: {name}")
        reason = cfg.validate_config_value(d, value)
        if reason is not None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, reason)


def diff(rtype: int, rname: str, old: dict[str, str], new: dict[str, str]) -> list[dict]:
    records = [config_record(rtype, rname, k, v) for k, v in sorted(new.items()) if old.get(k) != v]
    records += [config_record(rtype, rname, k, None) for k in sorted(old) if k not in new]
    return records


def _replace(configs: list[dict]) -> dict[str, str]:
    new = {}
    for c in configs:
        if c["Value"] is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for {c['Name']}")
        new[c["Name"]] = c["Value"]
    return new


async def alter(
    node: ControllerView, ctx: RequestContext, body: dict, *, incremental: bool = False
) -> dict:
    node.require_active()
    counts: dict[tuple[int, str], int] = {}
    for r in body["Resources"]:
        key = (r["ResourceType"], r["ResourceName"])
        counts[key] = counts.get(key, 0) + 1
    responses = []
    records: list[dict[str, Any]] = []
    for r in body["Resources"]:
        rtype, rname = r["ResourceType"], r["ResourceName"]
        response: dict[str, Any] = {
            "ErrorCode": 0,
            "ErrorMessage": None,
            "ResourceType": rtype,
            "ResourceName": rname,
        }
        responses.append(response)
        try:
            if counts[(rtype, rname)] > 1:
                raise KafkaError(ErrorCode.INVALID_REQUEST, "the same resource twice")
            try:
                current, defs = resolve(node, ctx, rtype, rname)
            except KafkaError as e:
                if e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:  # Kafka checks the configs
                    _changed(r["Configs"], {}, cfg.TOPIC_CONFIGS, incremental)  # first
                raise
            new = _changed(r["Configs"], current, defs, incremental)
        except KafkaError as e:
            response.update(ErrorCode=int(e.code), ErrorMessage=e.message)
            continue
        if not body["ValidateOnly"]:
            records.extend(diff(rtype, rname, current, new))
    if records:
        offset = await node.commit(records)
        await node.wait_propagated(offset, PROPAGATION_WAIT_MS)
    return {"ThrottleTimeMs": 0, "Responses": responses}


def _changed(
    configs: list[dict], current: dict[str, str], defs: dict[str, cfg.ConfigDef], incremental: bool
) -> dict[str, str]:
    """The resource's dynamic configs after the request's ``configs``, checked."""
    if incremental:
        _check_lists(defs, configs)
        new = apply_ops(configs, current, defs)
    else:
        new = _replace(configs)
    check(defs, {k: v for k, v in new.items() if current.get(k) != v})
    return new


def _check_lists(defs: dict[str, cfg.ConfigDef], configs: list[dict]) -> None:
    for c in configs:
        d = defs.get(c["Name"])
        if (
            c["ConfigOperation"] in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT)
            and d is not None
            and d.type != cfg.LIST
        ):
            raise KafkaError(
                ErrorCode.INVALID_CONFIG, f"{c['Name']} is not a list: APPEND and SUBTRACT need one"
            )


def apply_ops(
    configs: list[dict], current: dict[str, str], defs: dict[str, cfg.ConfigDef]
) -> dict[str, str]:
    """The dynamic configs after the ops; APPEND and SUBTRACT start from the default when the
    config has no dynamic value (as Kafka does)."""
    names = [c["Name"] for c in configs]
    if len(set(names)) != len(names):
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Error due to duplicate config keys")
    new = dict(current)
    for c in configs:
        name, op, value = c["Name"], c["ConfigOperation"], c["Value"]
        if op == ConfigOperation.SET:
            if value is None:
                raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for {name}")
            new[name] = value
        elif op == ConfigOperation.DELETE:
            new.pop(name, None)
        elif op in (ConfigOperation.APPEND, ConfigOperation.SUBTRACT):
            d = defs.get(name)
            base = new.get(name, d.default if d is not None else None) or ""
            items = [x for x in base.split(",") if x]
            given = [x.strip() for x in (value or "").split(",") if x.strip()]
            if op == ConfigOperation.APPEND:
                items += [x for x in given if x not in items]
            else:
                items = [x for x in items if x not in given]
            new[name] = ",".join(items)
        else:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"unknown config operation {op}")
    return new
