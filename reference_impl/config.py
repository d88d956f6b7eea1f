"""Node configuration (one JSON file per node) and the cluster's config definitions.

``NodeConfig`` is what the launcher writes and a node process reads: its role, id, listeners,
where the controllers are, the metadata store, timings. ``settings`` holds the sections of
other components (``"security"``, ``"log"`` …) so that they can grow without touching this file.

``TOPIC_CONFIGS`` and ``BROKER_CONFIGS`` are the config keys DescribeConfigs lists, with Kafka's
names, types and defaults; Alter(Incremental)Configs accepts only these.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

EMBEDDED = "embedded"


class ConfigError(ValueError):
    """A node config file that cannot be used; the message says what is wrong, in one line."""


@dataclass
class ListenerConfig:
    """One listener of a node. ``principal`` is who a connection is before any authentication:
    what Kafka's principal builder yields for a PLAINTEXT listener (``User:ANONYMOUS``)."""

    name: str
    port: int
    host: str = "127.0.0.1"
    security_protocol: str = "PLAINTEXT"
    principal: str = "User:ANONYMOUS"


@dataclass
class ControllerAddress:
    node_id: int
    host: str
    port: int


@dataclass
class NodeConfig:
    role: str  # "controller" | "broker"
    node_id: int
    data_dir: str
    listeners: list[ListenerConfig]
    #: the controller nodes (brokers register with the active one; in ZooKeeper mode several
    #: controllers may run and ``/controller`` says which is active)
    controllers: list[ControllerAddress] = field(default_factory=list)
    #: the brokers' listener the controller and other brokers use (default: a broker's first)
    inter_broker_listener: str | None = None
    #: ``embedded`` or ``zookeeper://H:P[/chroot]``
    metadata_store: str = EMBEDDED
    metrics_port: int = 0
    rack: str | None = None
    heartbeat_interval_ms: int = 500
    session_timeout_ms: int = 9000
    zk_session_timeout_ms: int = 6000
    controlled_shutdown_timeout_ms: int = 15000
    request_timeout_ms: int = 30000
    #: principals that may act as brokers (ClusterAction on CLUSTER: Envelope, registration …)
    broker_principals: list[str] = field(default_factory=lambda: ["User:ANONYMOUS"])
    super_users: list[str] = field(default_factory=list)
    auto_create_topics: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    offsets_topic_replication_factor: int = 3
    log_level: str = "INFO"
    #: Kafka's connections.max.idle.ms: a connection with no request (or no progress of a
    #: half-sent one) for this long is closed
    connections_max_idle_ms: int = 600_000
    #: where the node logs (None: stderr), rotated by size, keeping this many old files
    log_file: str | None = None
    log_file_max_bytes: int = 10 * 1024 * 1024
    log_file_backups: int = 3
    #: sections owned by other components ("security", "log" …)
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def zookeeper(self) -> str | None:
        """``H:P[/chroot]`` in ZooKeeper mode, else None."""
        if self.metadata_store.startswith("zookeeper://"):
            return self.metadata_store.removeprefix("zookeeper://")
        return None

    def listener(self, name: str) -> ListenerConfig:
        for listener in self.listeners:
            if listener.name == name:
                return listener
        raise KeyError(name)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> NodeConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ConfigError(f"unknown config keys: {', '.join(unknown)}")
        try:
            values = dict(data)
            values["listeners"] = [ListenerConfig(**x) for x in data.get("listeners", [])]
            values["controllers"] = [ControllerAddress(**x) for x in data.get("controllers", [])]
            config = cls(**values)
        except TypeError as e:
            raise ConfigError(str(e)) from None
        if config.role not in ("controller", "broker"):
            raise ConfigError(f"role must be controller or broker, not {config.role!r}")
        if not config.listeners:
            raise ConfigError("a node needs at least one listener")
        if config.metadata_store != EMBEDDED and config.zookeeper is None:
            raise ConfigError(
                f"metadata_store must be embedded or zookeeper://H:P[/chroot], "
                f"not {config.metadata_store!r}"
            )
        return config

    @classmethod
    def load(cls, path: str | Path) -> NodeConfig:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as e:
            raise ConfigError(f"cannot read config {path}: {e}") from None
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def dump(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")


# --- config definitions (DescribeConfigs / AlterConfigs) ------------------------------------

#: Kafka's DescribeConfigs ConfigType values
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = range(1, 10)
#: Kafka's DescribeConfigs ConfigSource values
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
#: Kafka's ConfigSource for a group's own config (KIP-848)
DYNAMIC_GROUP_CONFIG = 8

_MAX = str(2**63 - 1)


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: int
    default: str | None
    doc: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    #: a string's value must match this regular expression in full (when no choice is given)
    pattern: str | None = None


def _defs(*items: ConfigDef) -> dict[str, ConfigDef]:
    return {d.name: d for d in items}


TOPIC_CONFIGS: dict[str, ConfigDef] = _defs(
    ConfigDef("cleanup.policy", LIST, "delete", "delete and/or compact", ("delete", "compact")),
    ConfigDef(
        "compression.type",
        STRING,
        "producer",
        "final compression of the topic's batches",
        ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"),
    ),
    ConfigDef("compression.gzip.level", INT, "-1"),
    ConfigDef("compression.lz4.level", INT, "9"),
    ConfigDef("compression.zstd.level", INT, "3"),
    ConfigDef("delete.retention.ms", LONG, "86400000", minimum=0),
    ConfigDef("file.delete.delay.ms", LONG, "60000", minimum=0),
    ConfigDef("flush.messages", LONG, _MAX, minimum=1),
    ConfigDef("flush.ms", LONG, _MAX, minimum=0),
    ConfigDef("follower.replication.throttled.replicas", LIST, ""),
    ConfigDef("index.interval.bytes", INT, "4096", minimum=0),
    ConfigDef("leader.replication.throttled.replicas", LIST, ""),
    ConfigDef("local.retention.bytes", LONG, "-2", minimum=-2),
    ConfigDef("local.retention.ms", LONG, "-2", minimum=-2),
    ConfigDef("max.compaction.lag.ms", LONG, _MAX, minimum=1),
    ConfigDef("max.message.bytes", INT, "1048588", minimum=0),
    ConfigDef("message.downconversion.enable", BOOLEAN, "true"),
    ConfigDef("message.timestamp.after.max.ms", LONG, _MAX, minimum=0),
    ConfigDef("message.timestamp.before.max.ms", LONG, _MAX, minimum=0),
    ConfigDef("message.timestamp.type", STRING, "CreateTime", "", ("CreateTime", "LogAppendTime")),
    ConfigDef("min.cleanable.dirty.ratio", DOUBLE, "0.5", minimum=0),
    ConfigDef("min.compaction.lag.ms", LONG, "0", minimum=0),
    ConfigDef("min.insync.replicas", INT, "1", minimum=1),
    ConfigDef("preallocate", BOOLEAN, "false"),
    ConfigDef("remote.storage.enable", BOOLEAN, "false"),
    ConfigDef("retention.bytes", LONG, "-1"),
    ConfigDef("retention.ms", LONG, "604800000", minimum=-1),
    ConfigDef("segment.bytes", INT, "1073741824", minimum=14),
    ConfigDef("segment.index.bytes", INT, "10485760", minimum=4),
    ConfigDef("segment.jitter.ms", LONG, "0", minimum=0),
    ConfigDef("segment.ms", LONG, "604800000", minimum=1),
    ConfigDef("unclean.leader.election.enable", BOOLEAN, "false"),
)

#: a group's configs (IncrementalAlterConfigs on a GROUP resource, KIP-848): Kafka's defaults
#: and bounds (group.consumer.{min,max}.session.timeout.ms, ...heartbeat.interval.ms)
GROUP_CONFIGS: dict[str, ConfigDef] = _defs(
    ConfigDef("consumer.session.timeout.ms", INT, "45000", minimum=45000, maximum=60000),
    ConfigDef("consumer.heartbeat.interval.ms", INT, "5000", minimum=5000, maximum=15000),
    # Kafka 4.4.0's GroupConfig: how often the group's target may be computed (bounds
    # group.consumer.{min,max}.assignment.interval.ms) and whether off the request thread (the
    # reference computes in the heartbeat either way: the answer is the same)
    ConfigDef("consumer.assignment.interval.ms", INT, "1000", minimum=0, maximum=15000),
    ConfigDef("consumer.assignor.offload.enable", BOOLEAN, "true"),
    # KIP-932 share groups: Kafka 4.4.0's defaults and bounds (group.share.* broker configs)
    ConfigDef("share.session.timeout.ms", INT, "45000", minimum=45000, maximum=60000),
    ConfigDef("share.heartbeat.interval.ms", INT, "5000", minimum=5000, maximum=15000),
    ConfigDef("share.record.lock.duration.ms", INT, "30000", minimum=15000, maximum=60000),
    ConfigDef("share.delivery.count.limit", INT, "5", minimum=2, maximum=10),
    ConfigDef("share.partition.max.record.locks", INT, "2000", minimum=100, maximum=4000),
    ConfigDef("share.assignment.interval.ms", INT, "1000", minimum=0),
    ConfigDef(
        "share.auto.offset.reset",
        STRING,
        "latest",
        "earliest, latest or by_duration:<ISO-8601 duration>",
        pattern=r"earliest|latest|by_duration:-?P(?:\d+D)?(?:T(?:\d+H)?(?:\d+M)?(?:\d+(?:\.\d+)?S)?)?",
    ),
    ConfigDef(
        "share.isolation.level",
        STRING,
        "read_uncommitted",
        choices=("read_committed", "read_uncommitted"),
    ),
    ConfigDef("share.renew.acknowledge.enable", BOOLEAN, "true"),
)


def group_configs(groups: dict[str, Any] | None) -> dict[str, ConfigDef]:
    """GROUP_CONFIGS bounded by a node's ``settings["groups"]`` where it says
    (``consumer_{min,max}_session_timeout_ms``, ``consumer_{min,max}_heartbeat_interval_ms``), as
    Kafka bounds a group's configs by its group.consumer.* settings (a test run lowers them)."""
    g = groups or {}
    out = dict(GROUP_CONFIGS)
    for kind in ("consumer", "share"):  # share_{min,max}_...: the same for share groups
        for key in ("session_timeout_ms", "heartbeat_interval_ms"):
            name = f"{kind}.{key.replace('_', '.')}"
            d = GROUP_CONFIGS[name]
            out[name] = replace(
                d,
                minimum=g.get(f"{kind}_min_{key}", d.minimum),
                maximum=g.get(f"{kind}_max_{key}", d.maximum),
            )
    return out


#: broker configs that may be set dynamically (per broker or cluster-wide default)
BROKER_CONFIGS: dict[str, ConfigDef] = _defs(
    ConfigDef("log.retention.ms", LONG, None, minimum=-1),
    ConfigDef("log.retention.bytes", LONG, "-1"),
    ConfigDef("log.segment.bytes", INT, "1073741824", minimum=14),
    ConfigDef("log.cleaner.threads", INT, "1", minimum=0),
    ConfigDef("message.max.bytes", INT, "1048588", minimum=0),
    ConfigDef("min.insync.replicas", INT, "1", minimum=1),
    ConfigDef("unclean.leader.election.enable", BOOLEAN, "false"),
    ConfigDef("compression.type", STRING, "producer"),
    ConfigDef("max.connections", INT, str(2**31 - 1), minimum=0),
    ConfigDef("num.io.threads", INT, "8", minimum=1),
    ConfigDef("num.network.threads", INT, "3", minimum=1),
)


def validate_config_value(definition: ConfigDef, value: str | None) -> str | None:
    """None when ``value`` is acceptable for ``definition``, else the reason it is not."""
    if value is None:
        return f"{definition.name}: null value"
    kind = definition.type
    try:
        if kind in (INT, SHORT, LONG):
            number: float = int(value)
            bits = {INT: 31, SHORT: 15, LONG: 63}[kind]
            if not -(2**bits) <= number < 2**bits:
                return f"{definition.name}: {value} out of range"
        elif kind == DOUBLE:
            number = float(value)
        elif kind == BOOLEAN:
            if value.lower() not in ("true", "false"):
                return f"{definition.name}: {value!r} is not a boolean"
            return None
        elif kind == LIST:
            items = [x.strip() for x in value.split(",") if x.strip()]
            if definition.choices and any(x not in definition.choices for x in items):
                return f"{definition.name}: {value!r} not among {', '.join(definition.choices)}"
            return None
        else:
            if definition.choices and value not in definition.choices:
                return f"{definition.name}: {value!r} not among {', '.join(definition.choices)}"
            if definition.pattern and re.fullmatch(definition.pattern, value) is None:
                return f"{definition.name}: {value!r} is not {definition.doc or definition.pattern}"
            return None
    except ValueError:
        return f"{definition.name}: {value!r} is not a valid number"
    if definition.minimum is not None and number < definition.minimum:
        return f"{definition.name}: {value} is below the minimum {definition.minimum:g}"
    if definition.maximum is not None and number > definition.maximum:
        return f"{definition.name}: {value} is above the maximum {definition.maximum:g}"
    return None
