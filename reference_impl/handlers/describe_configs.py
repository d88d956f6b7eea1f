"""DescribeConfigs (32): a topic's, a broker's or a group's configs, with their sources.

Topics list every topic config: the dynamic value (DYNAMIC_TOPIC_CONFIG) or Kafka's default
(DEFAULT_CONFIG). A broker lists its static settings (read-only) and the dynamic broker
configs: per-broker value, cluster-wide default ("" resource), or built-in default. A broker
answers for itself only (another id is INVALID_REQUEST, as in Kafka); the controller answers for
any broker id from its image. BROKER_LOGGER lists the root logger. A GROUP lists KIP-848's
consumer.session.timeout.ms and consumer.heartbeat.interval.ms (DYNAMIC_GROUP_CONFIG when set, an
empty name INVALID_REQUEST). A request naming an unknown resource type is INVALID_REQUEST for every
resource, as Kafka answers it. Served by brokers from their metadata cache, by the controller
from its image.
"""

from __future__ import annotations

import logging
from typing import Any

from conformance.protocol import ApiKey, ConfigResourceType, ErrorCode
from reference_impl import config as cfg
from reference_impl.handlers.common import config_entry, topic_config_entries
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import (
    BrokerView,
    ControllerView,
    NodeView,
    either_role,
    is_broker,
    is_controller,
)
from reference_impl.security_hooks import CLUSTER

ROLES = ("broker", "controller")
DYNAMIC_BROKER_LOGGER_CONFIG = 6


#: Kafka's answer to every resource of a request naming an unknown resource type
_MALFORMED = (
    "This most likely occurs because of a request being malformed by the client library or the "
    "message was sent to an incompatible broker. See the broker logs for more details."
)


def api(node: NodeView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        known = {int(t) for t in ConfigResourceType if t != ConfigResourceType.UNKNOWN}
        if any(r["ResourceType"] not in known for r in body["Resources"]):
            # Kafka fails the whole request (its authorisation step throws on the unknown type)
            return {
                "ThrottleTimeMs": 0,
                "Results": [
                    {
                        "ErrorCode": int(ErrorCode.INVALID_REQUEST),
                        "ErrorMessage": _MALFORMED,
                        "ResourceType": r["ResourceType"],
                        "ResourceName": r["ResourceName"],
                        "Configs": [],
                    }
                    for r in body["Resources"]
                ],
            }
        return {
            "ThrottleTimeMs": 0,
            "Results": [_resource(node, ctx, body, r) for r in body["Resources"]],
        }

    return Api(ApiKey.DESCRIBE_CONFIGS, handle)


def _view(
    node: BrokerView | ControllerView,
) -> tuple[set[str], dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """(topic names, topic configs, broker configs) as this node knows them."""
    if is_broker(node):
        cache = node.metadata_cache
        return set(cache.topics), cache.topic_configs, cache.broker_configs
    assert is_controller(node)
    image = node.require_active()
    topics = {n: v for (t, n), v in image.configs.items() if t == ConfigResourceType.TOPIC}
    brokers = {n: v for (t, n), v in image.configs.items() if t == ConfigResourceType.BROKER}
    return set(image.topics), topics, brokers


def _resource(node: NodeView, ctx: RequestContext, body: dict, r: dict) -> dict[str, Any]:
    rtype, rname, keys = r["ResourceType"], r["ResourceName"], r["ConfigurationKeys"]
    synonyms = ctx.version >= 1 and body["IncludeSynonyms"]
    doc = ctx.version >= 3 and body["IncludeDocumentation"]
    result: dict[str, Any] = {
        "ErrorCode": 0,
        "ErrorMessage": None,
        "ResourceType": rtype,
        "ResourceName": rname,
        "Configs": [],
    }

    def fail(code: ErrorCode, message: str | None = None) -> dict[str, Any]:
        result.update(ErrorCode=int(code), ErrorMessage=message)
        return result

    topics, topic_configs, broker_configs = _view(either_role(node))
    if rtype == ConfigResourceType.TOPIC:
        if not node.authorize(ctx.session, "DESCRIBE_CONFIGS", ("TOPIC", rname)):
            return fail(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
        if rname not in topics:
            return fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Topic {rname} does not exist")
        result["Configs"] = topic_config_entries(
            topic_configs.get(rname, {}), keys, ctx.version, synonyms, doc
        )
        return result
    if rtype in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER):
        if not node.authorize(ctx.session, "DESCRIBE_CONFIGS", CLUSTER):
            return fail(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        own = node.role == "controller" or rname == str(node.node_id)
        if rtype == ConfigResourceType.BROKER_LOGGER:
            if not own or rname == "":
                return fail(ErrorCode.INVALID_REQUEST, f"Unexpected broker id {rname!r}")
            level = logging.getLevelName(logging.getLogger().getEffectiveLevel())
            entry = config_entry(
                "root",
                level,
                DYNAMIC_BROKER_LOGGER_CONFIG,
                None,
                read_only=False,
                synonyms=[],
                doc=doc,
            )
            result["Configs"] = [e for e in [entry] if keys is None or e["Name"] in keys]
            return result
        if rname != "" and not own:
            return fail(
                ErrorCode.INVALID_REQUEST, f"Unexpected broker id, expected {node.node_id} or empty"
            )
        if rname != "" and not (rname.isdigit() and rname.isascii()):
            return fail(ErrorCode.INVALID_REQUEST, f"broker id must be an integer: {rname!r}")
        result["Configs"] = [
            e
            for e in _broker_entries(node, rname, broker_configs, ctx.version, synonyms, doc)
            if keys is None or e["Name"] in keys
        ]
        return result
    if rtype == ConfigResourceType.GROUP:
        if not node.authorize(ctx.session, "DESCRIBE_CONFIGS", ("GROUP", rname)):
            return fail(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        if rname == "":
            return fail(ErrorCode.INVALID_REQUEST, "Group name must not be empty")
        own = _group_configs(either_role(node)).get(rname, {})
        result["Configs"] = [
            config_entry(
                k,
                own.get(k, d.default),
                cfg.DYNAMIC_GROUP_CONFIG if k in own else cfg.DEFAULT_CONFIG,
                d,
                read_only=False,
                synonyms=[],
                doc=doc,
            )
            for k, d in sorted(cfg.GROUP_CONFIGS.items())
            if keys is None or k in keys
        ]
        return result
    return fail(ErrorCode.INVALID_REQUEST, f"unsupported resource type {rtype}")


def _group_configs(node: BrokerView | ControllerView) -> dict[str, dict[str, str]]:
    if is_broker(node):
        return node.metadata_cache.group_configs
    assert is_controller(node)
    image = node.require_active()
    return {n: v for (t, n), v in image.configs.items() if t == ConfigResourceType.GROUP}


def _broker_entries(
    node: NodeView,
    rname: str,
    dynamic: dict[str, dict[str, str]],
    version: int,
    synonyms: bool,
    doc: bool,
) -> list[dict[str, Any]]:
    default = dynamic.get("", {})
    if rname == "":
        return [
            config_entry(
                k,
                v,
                cfg.DYNAMIC_DEFAULT_BROKER_CONFIG,
                cfg.BROKER_CONFIGS.get(k),
                read_only=False,
                synonyms=[],
                doc=doc,
            )
            for k, v in sorted(default.items())
        ]
    own = dynamic.get(rname, {})
    out = []
    if node.role == "broker":
        for k, v in sorted(_static(node).items()):
            entry = config_entry(
                k,
                v,
                cfg.STATIC_BROKER_CONFIG,
                None,
                read_only=k not in _PER_BROKER,
                synonyms=[],
                doc=doc,
            )
            entry["ConfigType"] = _STATIC_TYPES.get(k, cfg.STRING)
            out.append(entry)
    for name, d in cfg.BROKER_CONFIGS.items():
        candidates = [
            (own.get(name), cfg.DYNAMIC_BROKER_CONFIG),
            (default.get(name), cfg.DYNAMIC_DEFAULT_BROKER_CONFIG),
            (d.default, cfg.DEFAULT_CONFIG),
        ]
        present = [(v, s) for v, s in candidates if v is not None or s == cfg.DEFAULT_CONFIG]
        value, source = present[0]
        syn = [{"Name": name, "Value": v, "Source": s} for v, s in present] if synonyms else []
        out.append(config_entry(name, value, source, d, read_only=False, synonyms=syn, doc=doc))
    return out


def _transaction_settings(c: Any) -> dict[str, str]:
    """The transaction coordinator's settings (Kafka's static transaction.* broker configs): a
    client's transaction.timeout.ms must not exceed transaction.max.timeout.ms."""
    from reference_impl.txn.service import txn_config

    t = txn_config((getattr(c, "settings", None) or {}).get("transactions"))
    return {
        "transaction.max.timeout.ms": str(t.max_timeout_ms),
        "transaction.state.log.num.partitions": str(t.state_partitions),
        "transaction.state.log.replication.factor": str(t.state_replication_factor),
        "transaction.abort.timed.out.transaction.cleanup.interval.ms": str(t.abort_interval_ms),
    }


#: static settings Kafka lets an operator change per broker at run time (its listener
#: reconfiguration), so DescribeConfigs says they are not read-only
_PER_BROKER = frozenset({"listeners", "advertised.listeners", "listener.security.protocol.map"})
#: the static settings' ConfigType as Apache Kafka 4.4.0 declares them (others are STRING)
_STATIC_TYPES = {
    "listeners": cfg.LIST,
    "advertised.listeners": cfg.LIST,
    "broker.heartbeat.interval.ms": cfg.INT,
    "broker.session.timeout.ms": cfg.INT,
    "transaction.max.timeout.ms": cfg.INT,
    "transaction.state.log.num.partitions": cfg.INT,
    "transaction.state.log.replication.factor": cfg.SHORT,
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": cfg.INT,
}


def _static(node: NodeView) -> dict[str, str]:
    c = node.config
    listeners = ",".join(f"{lst.name}://{lst.host}:{lst.port}" for lst in c.listeners)
    return {
        "broker.id": str(c.node_id),
        "node.id": str(c.node_id),
        "listeners": listeners,
        "advertised.listeners": listeners,
        "listener.security.protocol.map": ",".join(
            f"{lst.name}:{lst.security_protocol}" for lst in c.listeners
        ),
        "log.dirs": c.data_dir,
        "num.partitions": str(c.num_partitions),
        "default.replication.factor": str(c.default_replication_factor),
        "auto.create.topics.enable": str(c.auto_create_topics).lower(),
        "offsets.topic.replication.factor": str(c.offsets_topic_replication_factor),
        "broker.heartbeat.interval.ms": str(c.heartbeat_interval_ms),
        "broker.session.timeout.ms": str(c.session_timeout_ms),
        "broker.rack": c.rack or "",
        "zookeeper.connect": c.zookeeper or "",
        **_group_timings(c),
        **_transaction_settings(c),
    }


def _group_timings(c: Any) -> dict[str, str]:
    """The group coordinator's settings a client plans around (Kafka reports them as static
    broker configs): the session timeouts it accepts and the first rebalance's delay."""
    from reference_impl.groups.service import group_config

    g = group_config((getattr(c, "settings", None) or {}).get("groups"))
    return {
        "group.min.session.timeout.ms": str(g.min_session_timeout_ms),
        "group.max.session.timeout.ms": str(g.max_session_timeout_ms),
        "group.initial.rebalance.delay.ms": str(g.initial_rebalance_delay_ms),
    }
