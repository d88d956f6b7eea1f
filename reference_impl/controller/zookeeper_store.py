"""The ``zookeeper://`` metadata store: Kafka's ZooKeeper layout, written by the controller only.

Leadership: a controller is active while it holds the ephemeral ``/controller``
(``{"version":1,"brokerid":N,"timestamp":…}``), won together with an increment of
``/controller_epoch`` in one transaction. Every write carries a version check of
``/controller_epoch``, so a controller that lost leadership (its session expired while it was
paused, say) cannot write any more: its write fails and it resigns.

What the records become (JSON as Kafka writes it; names URL-encoded like Kafka's Sanitizer):

- ``/cluster/brokers/N``: the registration draft's record, ``{"settings":
  {"listener_security_protocol_map", "endpoints", "rack", "jmx_port", "incarnation_id",
  "start_time_ms"}, "epoch", "state", "version": 1}``;
- ``/brokers/topics/T`` (``{"version":3,"partitions":{"0":[1,2]},"topic_id",
  "adding_replicas":{},"removing_replicas":{}}``), ``/brokers/topics/T/partitions/P/state``
  (``{"version":1,"controller_epoch","leader","leader_epoch","isr","leader_recovery_state",
  "partition_epoch"}``);
- ``/config/topics/T``, ``/config/brokers/<id|<default>>``, ``/config/users/U[/clients/C]``,
  ``/config/clients/C``, ``/config/ips/I`` (``{"version":1,"config":{…}}``), each change
  announced by a sequential ``/config/changes/config_change_`` (``{"version":2,
  "entity_path"}``);
- ``/kafka-acl/<Type>/<name>`` and ``/kafka-acl-extended/prefixed/<Type>/<name>``
  (``{"version":1,"acls":[{"principal","permissionType","operation","host"}]}``).

The metadata offset in this mode is ``controller_epoch << 32`` plus the records written since
this controller became active: it only grows, across controller changes too.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
import uuid
from enum import IntEnum
from typing import Any
from urllib.parse import quote, unquote

from kazoo.exceptions import KazooException, NodeExistsError, NoNodeError

from conformance.client.sasl import SCRAM_TYPES
from conformance.protocol import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    ConfigResourceType,
)
from reference_impl.broker_state import BrokerState
from reference_impl.config import NodeConfig
from reference_impl.controller.store import MetadataStore, StoreFenced
from reference_impl.metadata.image import (
    BrokerRegistration,
    MetadataImage,
    QuotaEntity,
    config_record,
    quota_entity,
    quota_record,
    scram_record,
)
from reference_impl.process import NodeFatal
from reference_impl.zk import CONTROLLER, CONTROLLER_EPOCH, ZooKeeper, ZooKeeperError

log = logging.getLogger(__name__)

BASE_PATHS = (
    "/brokers/ids",
    "/brokers/topics",
    "/cluster/brokers",
    "/config/topics",
    "/config/brokers",
    "/config/users",
    "/config/clients",
    "/config/ips",
    "/config/changes",
    "/admin/delete_topics",
    "/kafka-acl",
    "/kafka-acl-extended/prefixed",
)
DEFAULT = "<default>"
#: the /config folder of each resource type's configs
_CONFIG_FOLDERS = {
    ConfigResourceType.TOPIC: "topics",
    ConfigResourceType.BROKER: "brokers",
    ConfigResourceType.GROUP: "groups",
}


def _znode_names(enum: type[IntEnum], first: int) -> dict[int, str]:
    """ZooKeeper ACL znodes spell the names in CamelCase (TRANSACTIONAL_ID: TransactionalId)."""
    return {int(m): m.name.title().replace("_", "") for m in enum if m >= first}


RESOURCE_TYPES = _znode_names(AclResourceType, AclResourceType.TOPIC)
OPERATIONS = _znode_names(AclOperation, AclOperation.ALL)
PERMISSIONS = _znode_names(AclPermissionType, AclPermissionType.DENY)
LITERAL, PREFIXED = AclPatternType.LITERAL, AclPatternType.PREFIXED


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _sanitize(name: str | None) -> str:
    return DEFAULT if name is None else quote(name, safe="")


def _desanitize(name: str) -> str | None:
    return None if name == DEFAULT else unquote(name)


def registration_json(reg: BrokerRegistration) -> dict[str, Any]:
    return {
        "settings": {
            "listener_security_protocol_map": {
                lst["name"]: lst["security_protocol"] for lst in reg.listeners
            },
            "endpoints": [f"{lst['name']}://{lst['host']}:{lst['port']}" for lst in reg.listeners],
            "rack": reg.rack,
            "jmx_port": -1,
            "incarnation_id": reg.incarnation_id,
            "start_time_ms": reg.start_time_ms,
        },
        "epoch": reg.epoch,
        "state": reg.state.value,
        "version": 1,
    }


def registration_record(broker_id: int, data: dict[str, Any]) -> dict[str, Any]:
    settings = data["settings"]
    protocols = settings.get("listener_security_protocol_map", {})
    listeners = []
    for endpoint in settings["endpoints"]:
        name, _, address = endpoint.partition("://")
        host, _, port = address.rpartition(":")
        listeners.append(
            {
                "name": name,
                "host": host,
                "port": int(port),
                "security_protocol": protocols.get(name, "PLAINTEXT"),
            }
        )
    reg = BrokerRegistration(
        broker_id,
        data["epoch"],
        settings.get("incarnation_id", ""),
        listeners,
        settings.get("rack"),
        settings.get("start_time_ms", 0),
        BrokerState(data["state"]),
    )
    return reg.record()


def quota_path(entity: QuotaEntity) -> str:
    names = dict(entity)
    if "ip" in names:
        return f"/config/ips/{_sanitize(names['ip'])}"
    if "user" in names and "client-id" in names:
        return f"/config/users/{_sanitize(names['user'])}/clients/{_sanitize(names['client-id'])}"
    if "user" in names:
        return f"/config/users/{_sanitize(names['user'])}"
    return f"/config/clients/{_sanitize(names.get('client-id'))}"


def _scram_config(image: MetadataImage, user: str) -> dict[str, str]:
    """A user's SCRAM credentials as Kafka keeps them in ``/config/users/<user>``."""
    return {
        mechanism: ",".join(f"{k}={c[k]}" for k in ("salt", "stored_key", "server_key"))
        + f",iterations={c['iterations']}"
        for mechanism, c in image.scram.get(user, {}).items()
    }


def _scram_record(user: str, mechanism: str, text: str) -> dict[str, Any]:
    fields = dict(part.split("=", 1) for part in text.split(","))
    credential = {k: fields[k] for k in ("salt", "stored_key", "server_key")}
    return scram_record(user, mechanism, {**credential, "iterations": int(fields["iterations"])})


def acl_path(binding: dict[str, Any]) -> str:
    kind = RESOURCE_TYPES.get(binding["resource_type"], str(binding["resource_type"]))
    name = quote(binding["resource_name"], safe="")
    if binding["pattern_type"] == PREFIXED:
        return f"/kafka-acl-extended/prefixed/{kind}/{name}"
    return f"/kafka-acl/{kind}/{name}"


class ZooKeeperStore(MetadataStore):
    def __init__(self, config: NodeConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        self.zk = ZooKeeper(config.zookeeper or "", config.zk_session_timeout_ms)
        self.epoch = 0
        self.epoch_version = -1
        self.active = False
        #: paths known to exist (this controller is the only writer while active)
        self.known: set[str] = set()

    def p(self, path: str) -> str:
        return self.zk.path(path)

    def _know(self, path: str) -> None:
        """``path`` and its ancestors exist."""
        parts = path.split("/")
        self.known.update("/".join(parts[:i]) for i in range(2, len(parts) + 1))

    async def open(self) -> None:
        try:
            await self.zk.start()
        except ZooKeeperError as e:
            raise NodeFatal(str(e)) from None
        for path in BASE_PATHS:
            await self.zk.call(self.zk.client.ensure_path, self.p(path))
        self.zk.on_session_lost(self._lost)

    def _lost(self) -> None:
        if self.active:
            self.active = False
            self.on_resign()

    async def cluster_id(self) -> str:
        try:
            return await self.zk.cluster_id()
        except ZooKeeperError as e:
            raise NodeFatal(str(e)) from None

    # --- leadership --------------------------------------------------------------------

    async def become_active(self) -> int:
        while True:
            try:
                epoch = await self._try_to_win()
            except (KazooException, OSError) as e:
                log.info("campaign interrupted: %r", e)
                await asyncio.sleep(0.2)
                continue
            if epoch is not None:
                return epoch

    async def _try_to_win(self) -> int | None:
        loop = asyncio.get_running_loop()
        changed = asyncio.Event()
        stat = await self.zk.call(
            self.zk.client.exists,
            self.p(CONTROLLER),
            watch=lambda _event: loop.call_soon_threadsafe(changed.set),
        )
        if stat is not None and stat.ephemeralOwner == self.zk.session_id:
            # ours from before we resigned (a refused write): give it up, then compete again
            await self.zk.call(self.zk.client.delete, self.p(CONTROLLER))
            return None
        if stat is not None:
            await changed.wait()
            return None
        try:
            await self.zk.call(self.zk.client.create, self.p(CONTROLLER_EPOCH), b"0")
        except NodeExistsError:
            pass
        data, epoch_stat = await self.zk.call(self.zk.client.get, self.p(CONTROLLER_EPOCH))
        epoch = int(data.decode() or 0) + 1
        tx = self.zk.client.transaction()
        tx.create(
            self.p(CONTROLLER),
            _dumps(
                {"version": 1, "brokerid": self.node_id, "timestamp": str(int(time.time() * 1000))}
            ),
            ephemeral=True,
        )
        tx.set_data(self.p(CONTROLLER_EPOCH), str(epoch).encode(), version=epoch_stat.version)
        results = await self.zk.call(tx.commit)
        if any(isinstance(r, Exception) for r in results):
            await asyncio.sleep(0.05)
            return None
        self.epoch, self.epoch_version, self.active = epoch, results[1].version, True
        await self._watch_leadership()
        log.info("won /controller, controller epoch %d", epoch)
        return epoch

    async def _watch_leadership(self) -> None:
        loop = asyncio.get_running_loop()

        def fired(_event: Any) -> None:
            loop.call_soon_threadsafe(lambda: loop.create_task(self._check_leadership()))

        await self.zk.call(self.zk.client.exists, self.p(CONTROLLER), watch=fired)

    async def _check_leadership(self) -> None:
        if not self.active:
            return
        try:
            stat = await self.zk.call(self.zk.client.exists, self.p(CONTROLLER))
        except KazooException:
            return
        if stat is None or stat.ephemeralOwner != self.zk.session_id:
            log.warning("/controller is no longer ours")
            self._lost()
        else:
            await self._watch_leadership()

    # --- reading -----------------------------------------------------------------------

    async def _children(self, path: str) -> list[str]:
        try:
            return sorted(await self.zk.call(self.zk.client.get_children, self.p(path)))
        except NoNodeError:
            return []

    async def _json(self, path: str) -> tuple[Any, Any] | None:
        found = await self.zk.get_json(path)
        if found is not None:
            self._know(path)
        return found

    async def load(self) -> MetadataImage:
        self.known = set()
        for path in BASE_PATHS:
            self._know(path)
        records: list[dict[str, Any]] = []
        for child in await self._children("/cluster/brokers"):
            found = await self._json(f"/cluster/brokers/{child}")
            if found is not None and isinstance(found[0], dict):
                records.append(registration_record(int(child), found[0]))
        for topic in await self._children("/brokers/topics"):
            records.extend(await self._load_topic(topic))
        for rtype, folder in (
            (ConfigResourceType.TOPIC, "topics"),
            (ConfigResourceType.BROKER, "brokers"),
            (ConfigResourceType.GROUP, "groups"),
        ):
            for child in await self._children(f"/config/{folder}"):
                found = await self._json(f"/config/{folder}/{child}")
                name = "" if child == DEFAULT else unquote(child)
                for k, v in (found[0] or {}).get("config", {}).items() if found else ():
                    records.append(config_record(rtype, name, k, v))
        records.extend(await self._load_quotas())
        records.extend(await self._load_acls())
        image = MetadataImage()
        for i, record in enumerate(records):
            image.apply(record, i)
        image.offset = self.epoch << 32
        log.info("loaded %d records from ZooKeeper", len(records))
        return image

    async def _load_topic(self, topic: str) -> list[dict[str, Any]]:
        found = await self._json(f"/brokers/topics/{topic}")
        if found is None or not isinstance(found[0], dict):
            return []
        data = found[0]
        records: list[dict[str, Any]] = [
            {"type": "topic", "name": topic, "topic_id": _topic_id(data.get("topic_id"))}
        ]
        self.known.add(f"/brokers/topics/{topic}/partitions")
        for index, replicas in sorted(data.get("partitions", {}).items(), key=lambda x: int(x[0])):
            base = f"/brokers/topics/{topic}/partitions/{index}"
            state = await self._json(f"{base}/state")
            self.known.add(base)
            s, stat = state if state is not None else ({}, None)
            s = s or {}
            records.append(
                {
                    "type": "partition",
                    "topic": topic,
                    "partition": int(index),
                    "replicas": replicas,
                    "isr": s.get("isr", replicas),
                    "leader": s.get("leader", -1),
                    "leader_epoch": s.get("leader_epoch", 0),
                    "partition_epoch": s.get(
                        "partition_epoch", stat.version if stat is not None else 0
                    ),
                }
            )
        return records

    async def _load_quotas(self) -> list[dict[str, Any]]:
        paths: list[tuple[str, QuotaEntity]] = []
        for user in await self._children("/config/users"):
            paths.append((f"/config/users/{user}", quota_entity([("user", _desanitize(user))])))
            for client in await self._children(f"/config/users/{user}/clients"):
                self.known.add(f"/config/users/{user}/clients")
                entity = quota_entity(
                    [("user", _desanitize(user)), ("client-id", _desanitize(client))]
                )
                paths.append((f"/config/users/{user}/clients/{client}", entity))
        for client in await self._children("/config/clients"):
            paths.append(
                (f"/config/clients/{client}", quota_entity([("client-id", _desanitize(client))]))
            )
        for ip in await self._children("/config/ips"):
            paths.append((f"/config/ips/{ip}", quota_entity([("ip", _desanitize(ip))])))
        records = []
        for path, entity in paths:
            found = await self._json(path)
            values = (found[0] or {}).get("config", {}) if found else {}
            for k, v in values.items():
                if k in SCRAM_TYPES.values():  # a user's SCRAM credential (KIP-554), not a quota
                    records.append(_scram_record(dict(entity)["user"], k, v))
                else:
                    records.append(quota_record(entity, k, float(v)))
        return records

    async def _load_acls(self) -> list[dict[str, Any]]:
        names = {v: k for k, v in RESOURCE_TYPES.items()}
        ops = {v: k for k, v in OPERATIONS.items()}
        perms = {v: k for k, v in PERMISSIONS.items()}
        records = []
        for root, pattern in (("/kafka-acl", LITERAL), ("/kafka-acl-extended/prefixed", PREFIXED)):
            for kind in await self._children(root):
                self.known.add(f"{root}/{kind}")
                for name in await self._children(f"{root}/{kind}"):
                    found = await self._json(f"{root}/{kind}/{name}")
                    for acl in (found[0] or {}).get("acls", []) if found else ():
                        binding = {
                            "resource_type": names.get(kind, 0),
                            "resource_name": unquote(name),
                            "pattern_type": pattern,
                            "principal": acl["principal"],
                            "host": acl["host"],
                            "operation": ops.get(acl["operation"], 0),
                            "permission_type": perms.get(acl["permissionType"], 0),
                        }
                        records.append({"type": "acl", "binding": binding})
        return records

    # --- writing -----------------------------------------------------------------------

    async def append(self, records: list[dict[str, Any]], after: MetadataImage) -> None:
        if not self.active:
            raise StoreFenced("not the active controller")
        puts: dict[str, bytes] = {}
        deletes: list[str] = []
        changes: list[str] = []
        for r in records:
            kind = r["type"]
            if kind in ("register_broker", "broker_state", "unregister_broker"):
                path = f"/cluster/brokers/{r['broker_id']}"
                reg = after.brokers.get(r["broker_id"])
                if reg is None:
                    deletes.append(path)
                else:
                    puts[path] = _dumps(registration_json(reg))
            elif kind == "topic":
                puts[f"/brokers/topics/{r['name']}"] = _topic_json(after, r["name"])
            elif kind == "partition":
                topic = r["topic"]
                state = f"/brokers/topics/{topic}/partitions/{r['partition']}/state"
                if state not in self.known:
                    puts[f"/brokers/topics/{topic}"] = _topic_json(after, topic)
                p = after.topics[topic].partitions[r["partition"]]
                puts[state] = _dumps(
                    {
                        "version": 1,
                        "controller_epoch": after.controller_epoch,
                        "leader": p.leader,
                        "leader_epoch": p.leader_epoch,
                        "isr": p.isr,
                        "leader_recovery_state": 0,
                        "partition_epoch": p.partition_epoch,
                    }
                )
            elif kind == "remove_topic":
                name = r["name"]
                for path in (f"/brokers/topics/{name}", f"/config/topics/{name}"):
                    puts.pop(path, None)
                    deletes.extend(
                        sorted(
                            (k for k in self.known if k == path or k.startswith(path + "/")),
                            key=lambda k: -k.count("/"),
                        )
                    )
                    for k in list(puts):
                        if k.startswith(path + "/"):
                            del puts[k]
            elif kind == "config":
                rtype, rname = r["resource_type"], r["resource_name"]
                folder = _CONFIG_FOLDERS[rtype]
                entity = _sanitize(rname) if rname != "" else DEFAULT
                values = after.configs.get((rtype, rname), {})
                puts[f"/config/{folder}/{entity}"] = _dumps({"version": 1, "config": values})
                changes.append(f"{folder}/{entity}")
            elif kind == "quota":
                entity = quota_entity(r["entity"])
                values = {k: str(v) for k, v in after.quotas.get(entity, {}).items()}
                names = dict(entity)
                if set(names) == {"user"} and names["user"] is not None:
                    values |= _scram_config(after, names["user"])
                path = quota_path(entity)
                puts[path] = _dumps({"version": 1, "config": values})
                changes.append(path.removeprefix("/config/"))
            elif kind in ("scram", "remove_scram"):
                entity = quota_entity([("user", r["user"])])
                values = {k: str(v) for k, v in after.quotas.get(entity, {}).items()}
                path = quota_path(entity)
                config = values | _scram_config(after, r["user"])
                puts[path] = _dumps({"version": 1, "config": config})
                changes.append(path.removeprefix("/config/"))
            elif kind in ("acl", "remove_acl"):
                path = acl_path(r["binding"])
                acls = [
                    {
                        "principal": b["principal"],
                        "permissionType": PERMISSIONS.get(b["permission_type"], "Allow"),
                        "operation": OPERATIONS.get(b["operation"], "All"),
                        "host": b["host"],
                    }
                    for b in after.acls
                    if acl_path(b) == path
                ]
                if acls:
                    puts[path] = _dumps({"version": 1, "acls": acls})
                else:
                    deletes.append(path)
        await self._commit(puts, deletes, changes)

    async def _commit(self, puts: dict[str, bytes], deletes: list[str], changes: list[str]) -> None:
        tx = self.zk.client.transaction()
        tx.check(self.p(CONTROLLER_EPOCH), self.epoch_version)
        created: list[str] = []
        deleted = [path for path in dict.fromkeys(deletes) if path in self.known]
        for path in deleted:
            tx.delete(self.p(path))
        gone = set(deleted)
        for path, data in puts.items():
            if path in self.known and path not in gone:
                tx.set_data(self.p(path), data)
                continue
            parts = path.split("/")
            for i in range(2, len(parts)):
                parent = "/".join(parts[:i])
                if (parent not in self.known or parent in gone) and parent not in created:
                    tx.create(self.p(parent), b"")
                    created.append(parent)
            tx.create(self.p(path), data)
            created.append(path)
        for entity_path in dict.fromkeys(changes):
            tx.create(
                self.p("/config/changes/config_change_"),
                _dumps({"version": 2, "entity_path": entity_path}),
                sequence=True,
            )
        try:
            results = await self.zk.call(tx.commit)
        except KazooException as e:
            raise StoreFenced(f"ZooKeeper write failed: {e!r}") from None
        failed = [r for r in results if isinstance(r, Exception)]
        if failed:
            cause = next((r for r in failed if type(r).__name__ != "RolledBackError"), failed[0])
            raise StoreFenced(f"ZooKeeper transaction refused: {cause!r}")
        self.known -= gone
        self.known.update(created)

    async def close(self) -> None:
        self.active = False
        await self.zk.close()


def _topic_json(image: MetadataImage, name: str) -> bytes:
    topic = image.topics[name]
    return _dumps(
        {
            "version": 3,
            "partitions": {str(i): p.replicas for i, p in sorted(topic.partitions.items())},
            "topic_id": _kafka_uuid(topic.topic_id),
            "adding_replicas": {},
            "removing_replicas": {},
        }
    )


def _kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's Uuid.toString: URL-safe Base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def _topic_id(text: Any) -> str:
    if isinstance(text, str) and text:
        try:
            return str(uuid.UUID(bytes=base64.urlsafe_b64decode(text + "==")))
        except ValueError:
            pass
    return str(uuid.uuid4())
