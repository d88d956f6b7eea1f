"""The client's view of the cluster: brokers, topics, partition leaders, and its connections.

``ClusterMetadata`` bootstraps from a list of ``host:port``, keeps one connection per broker
(with that broker's ApiVersions, so every request goes at the highest version both sides know),
and refreshes topic metadata when asked, typically after NOT_LEADER_OR_FOLLOWER or
UNKNOWN_TOPIC_OR_PARTITION. After every Metadata response it tells the client's
ClusterResourceListeners the cluster id (KIP-78).
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from conformance.client import errors
from conformance.client.interceptors import ClusterResource, ClusterResourceListeners
from conformance.client.record_types import TopicPartition
from conformance.client.wire import Connection, ConnectionClosed, pick_version
from conformance.protocol import ApiKey, Codec, DecodeError, ErrorCode
from conformance.protocol.framing import encode_request
from conformance.protocol.spec import ZERO_UUID

log = logging.getLogger(__name__)

NO_LEADER = -1


class SaslSettings(Protocol):
    mechanism: str
    username: str
    password: str


class UnsupportedVersionError(errors.ClientError):
    """The broker and the client share no version of an API the client needs."""


@dataclass(frozen=True)
class Broker:
    node_id: int
    host: str
    port: int
    rack: str | None = None


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    error_code: int


@dataclass(frozen=True)
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    error_code: int
    partitions: dict[int, PartitionInfo]
    is_internal: bool = False

    @property
    def ready(self) -> bool:
        """Known, with partitions that all have a leader."""
        return (
            self.error_code == ErrorCode.NONE
            and bool(self.partitions)
            and all(p.leader >= 0 for p in self.partitions.values())
        )


def parse_bootstrap(bootstrap: str | Iterable[Any]) -> list[tuple[str, int]]:
    """``"h:p,h:p"``, or items that are ``"h:p"``, ``(host, port)`` or have ``host``/``port``."""
    items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
    out = []
    for item in items:
        if isinstance(item, str):
            host, _, port = item.strip().rpartition(":")
            out.append((host.strip("[]"), int(port)))
        elif isinstance(item, tuple):
            out.append((str(item[0]), int(item[1])))
        else:
            out.append((item.host, int(item.port)))
    if not out:
        raise errors.ClientError("no bootstrap server given")
    return out


class ClusterMetadata:
    """Brokers, topics and connections of one client (all on the running event loop)."""

    def __init__(
        self,
        bootstrap: str | Iterable[Any],
        *,
        codec: Codec | None = None,
        client_id: str = "kafka-conformance",
        sasl: SaslSettings | None = None,
        request_timeout: float = 30.0,
        retry_backoff: float = 0.1,
        allow_auto_topic_creation: bool = False,
        listeners: ClusterResourceListeners | None = None,
    ) -> None:
        self.bootstrap = parse_bootstrap(bootstrap)
        # the client's own bodies: a misspelt key is an error, not a field left at its default
        self.codec = codec or Codec.from_specs().strict()
        self.client_id = client_id
        self.sasl = sasl
        self.request_timeout = request_timeout
        self.retry_backoff = retry_backoff
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.listeners = listeners or ClusterResourceListeners()
        self.brokers: dict[int, Broker] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.cluster_id: str | None = None
        self.controller_id: int = -1
        #: how many Metadata responses were received
        self.updates = 0
        self._wanted: set[str] = set()
        self._conns: dict[int, Connection] = {}
        self._versions: dict[int, dict[int, tuple[int, int]]] = {}
        self._locks: dict[int, asyncio.Lock] = {}
        #: (node, api key) -> the highest version whose answers may still decode (issue 42)
        self._unusable: dict[tuple[int, int], int] = {}
        self._refresh_lock = asyncio.Lock()
        self._closed = False

    # --- connections ---------------------------------------------------------------------------

    def address(self, node_id: int) -> tuple[str, int]:
        """A broker's address; bootstrap servers have the node ids -1, -2, ..."""
        if node_id < 0:
            return self.bootstrap[-1 - node_id]
        try:
            b = self.brokers[node_id]
        except KeyError:
            raise errors.ClientError(f"unknown broker {node_id}") from None
        return b.host, b.port

    def add_node(self, node_id: int, host: str, port: int) -> None:
        """A broker learned outside Metadata (a group coordinator)."""
        known = self.brokers.get(node_id)
        if known is None or (known.host, known.port) != (host, port):
            self.drop(node_id)
            self.brokers[node_id] = Broker(node_id, host, port)

    async def connection(self, node_id: int) -> Connection:
        """The open connection to a broker, opened (and authenticated) when needed."""
        if self._closed:
            raise errors.ClientError("the client is closed")
        conn = self._conns.get(node_id)
        if conn is not None and not conn.closed:
            return conn
        lock = self._locks.setdefault(node_id, asyncio.Lock())
        async with lock:
            conn = self._conns.get(node_id)
            if conn is not None and not conn.closed:
                return conn
            host, port = self.address(node_id)
            conn, versions = await self._open(host, port)
            self._conns[node_id], self._versions[node_id] = conn, versions
            return conn

    async def _open(self, host: str, port: int) -> tuple[Connection, dict[int, tuple[int, int]]]:
        """Connect, learn the broker's versions (ApiVersions v3, v0 for a peer refusing v3)."""
        last: Exception | None = None
        for version in (3, 0):
            try:
                conn = await Connection.open(
                    host,
                    port,
                    codec=self.codec,
                    client_id=self.client_id,
                    timeout=self.request_timeout,
                )
            except (OSError, TimeoutError) as e:
                raise ConnectionClosed(f"cannot connect to {host}:{port}: {e}") from None
            try:
                versions = await asyncio.wait_for(conn.api_versions(version), self.request_timeout)
                if self.sasl is not None:
                    from conformance.client.sasl import authenticate

                    await authenticate(
                        conn,
                        self.sasl.mechanism,
                        self.sasl.username,
                        self.sasl.password,
                        versions=versions,
                        timeout=self.request_timeout,
                    )
                return conn, versions
            except (ConnectionError, TimeoutError, DecodeError) as e:
                last = e
                await conn.close()
                if self.sasl is not None and not isinstance(e, ConnectionClosed | TimeoutError):
                    raise
        raise ConnectionClosed(f"{host}:{port} answered no ApiVersions: {last}")

    def drop(self, node_id: int) -> None:
        """Forget a connection (it broke, or the broker moved); the next request reopens it."""
        conn = self._conns.pop(node_id, None)
        self._versions.pop(node_id, None)
        if conn is not None and not conn.closed:
            asyncio.get_running_loop().create_task(conn.close())

    def versions(self, node_id: int) -> dict[int, tuple[int, int]]:
        return self._versions.get(node_id, {})

    def pick(
        self, node_id: int, api_key: int, min_version: int = 0, max_version: int | None = None
    ) -> int:
        """The highest version of ``api_key`` both sides support, within the given bounds."""
        adv = self._versions.get(node_id, {})
        top = pick_version(adv, self.codec, api_key)
        name = self.codec.message(api_key, "request").name.removesuffix("Request")
        if top is None:
            raise UnsupportedVersionError(f"broker {node_id} does not support {name}")
        if max_version is not None:
            top = min(top, max_version)
        if top < max(min_version, adv[api_key][0]):
            raise UnsupportedVersionError(
                f"broker {node_id} supports {name} {adv[api_key][0]}-{adv[api_key][1]}, "
                f"the client needs {min_version}+"
            )
        return top

    async def request(
        self,
        node_id: int,
        api_key: int,
        build: Callable[[int], dict],
        *,
        min_version: int = 0,
        max_version: int | None = None,
        timeout: float | None = None,
    ) -> tuple[int, dict]:
        """Send ``build(version)`` to a broker at the best version; (version, response body).

        A broken connection is dropped and raised as ConnectionClosed (the caller retries).
        An answer that does not decode marks that version unusable on that broker for this
        client, and the next lower version both sides support is sent (issue 42: a client
        whose newest Metadata is malformed still works, as Kafka's own clients would at an
        older version); the DecodeError is raised when no version is left.
        """
        conn = await self.connection(node_id)
        while True:
            top = self._unusable.get((node_id, api_key))
            if top is not None:
                max_version = top if max_version is None else min(max_version, top)
            version = self.pick(node_id, api_key, min_version, max_version)
            try:
                resp = await conn.request(
                    api_key, version, build(version), timeout=timeout or self.request_timeout
                )
            except (ConnectionError, TimeoutError) as e:
                self.drop(node_id)
                raise ConnectionClosed(f"broker {node_id}: {type(e).__name__}: {e}") from None
            except DecodeError:
                self._unusable[(node_id, api_key)] = version - 1
                lowest = self._versions.get(node_id, {}).get(api_key, (0, 0))[0]
                if version - 1 < max(min_version, lowest):
                    raise
                log.warning("broker %s: %s v%s does not decode", node_id, api_key, version)
                continue
            return version, resp.body

    async def send_only(self, node_id: int, api_key: int, version: int, body: dict) -> None:
        """Send a request that gets no response (Produce with acks=0)."""
        conn = await self.connection(node_id)
        frame = encode_request(self.codec, api_key, version, 0, self.client_id, body)
        try:
            await conn.send_raw(len(frame).to_bytes(4, "big") + frame)
        except (ConnectionError, OSError) as e:
            self.drop(node_id)
            raise ConnectionClosed(f"broker {node_id}: {e}") from None

    def any_node(self) -> list[int]:
        """Nodes to try for a request any broker can answer: connected ones first."""
        connected = [n for n, c in self._conns.items() if not c.closed and n >= 0]
        known = [n for n in self.brokers if n not in connected]
        boot = [-1 - i for i in range(len(self.bootstrap))]
        return connected + known + boot

    async def close(self) -> None:
        self._closed = True
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            await conn.close()

    # --- metadata ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Bootstrap: learn the brokers and the cluster id (a Metadata request for no topic)."""
        await self.refresh(())

    async def refresh(self, topics: Iterable[str] | None = None) -> None:
        """One Metadata request for ``topics`` (plus those already wanted; None: all topics)."""
        if topics is not None:
            self._wanted.update(topics)
        want = None if topics is None else sorted(self._wanted)
        async with self._refresh_lock:
            last: Exception | None = None
            for node in self.any_node():
                try:
                    version, body = await self.request(
                        node, ApiKey.METADATA, lambda v: self._metadata_request(v, want)
                    )
                except (ConnectionError, TimeoutError) as e:
                    last = e
                    continue
                self._update(version, body, want)
                return
            raise ConnectionClosed(f"no broker answered Metadata: {last}")

    def _metadata_request(self, version: int, topics: list[str] | None) -> dict:
        if topics is None:
            wanted = None if version >= 1 else []
        else:
            wanted = [{"Name": t, "TopicId": ZERO_UUID} for t in topics]
        return {
            "Topics": wanted,
            "AllowAutoTopicCreation": self.allow_auto_topic_creation,
            "IncludeTopicAuthorizedOperations": False,
        }

    def _update(self, version: int, body: dict, asked: list[str] | None) -> None:
        brokers = {
            b["NodeId"]: Broker(b["NodeId"], b["Host"], b["Port"], b["Rack"])
            for b in body["Brokers"]
        }
        for node_id, b in brokers.items():
            old = self.brokers.get(node_id)
            if old is not None and (old.host, old.port) != (b.host, b.port):
                self.drop(node_id)
        self.brokers = brokers
        self.controller_id = body["ControllerId"]
        for t in body["Topics"]:
            name = t["Name"]
            if name is None:
                continue
            parts = {
                p["PartitionIndex"]: PartitionInfo(
                    p["PartitionIndex"],
                    p["LeaderId"],
                    p["LeaderEpoch"],
                    tuple(p["ReplicaNodes"]),
                    tuple(p["IsrNodes"]),
                    p["ErrorCode"],
                )
                for p in t["Partitions"]
            }
            self.topics[name] = TopicInfo(
                name, t["TopicId"], t["ErrorCode"], parts, t["IsInternal"]
            )
        self.updates += 1
        cid = body["ClusterId"] if version >= 2 else None
        if cid != self.cluster_id:
            log.info("cluster id %s", cid)
        self.cluster_id = cid
        self.listeners.on_update(ClusterResource(cid))

    async def wait_for_topic(self, topic: str, timeout: float) -> TopicInfo:
        """The topic's metadata once every partition has a leader, refreshing until ``timeout``.

        Raises KafkaError with the broker's last error for the topic (UNKNOWN_TOPIC_OR_PARTITION
        for a topic that does not exist), or MetadataTimeoutError.
        """
        info = self.topics.get(topic)
        if info is not None and info.ready and topic in self._wanted:
            return info
        deadline = time.monotonic() + timeout
        while True:
            await self.refresh([topic])
            info = self.topics.get(topic)
            if info is not None and info.ready:
                return info
            if time.monotonic() + self.retry_backoff > deadline:
                if info is not None and info.error_code != ErrorCode.NONE:
                    raise errors.KafkaError(info.error_code, context=f"topic {topic!r}")
                raise errors.MetadataTimeoutError(
                    f"no leader for every partition of {topic!r} within {timeout:.1f} s"
                )
            await asyncio.sleep(self.retry_backoff)

    def leader(self, tp: TopicPartition) -> int | None:
        info = self.topics.get(tp.topic)
        p = info.partitions.get(tp.partition) if info else None
        return p.leader if p is not None and p.leader >= 0 else None

    def leader_epoch(self, tp: TopicPartition) -> int:
        info = self.topics.get(tp.topic)
        p = info.partitions.get(tp.partition) if info else None
        return p.leader_epoch if p is not None else -1

    def partitions(self, topic: str) -> list[int]:
        info = self.topics.get(topic)
        return sorted(info.partitions) if info else []

    def topic_id(self, topic: str) -> uuid.UUID:
        info = self.topics.get(topic)
        return info.topic_id if info else ZERO_UUID

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        for info in self.topics.values():
            if info.topic_id == topic_id:
                return info.name
        return None
