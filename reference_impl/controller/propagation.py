"""How the controller tells brokers what it decided: LeaderAndIsr, StopReplica, UpdateMetadata.

One sender per registered broker (Kafka's ControllerChannelManager): after every change it
sends the broker LeaderAndIsr for the partitions it hosts whose state changed since the broker
last acknowledged them, StopReplica for partitions it no longer hosts, then UpdateMetadata (live
brokers with endpoints, rack and KIP-536 start time; partition states; the metadata offset and
dynamic configs as the reference's tagged fields). Rounds coalesce: a broker that is slow or
unreachable gets the latest state when it answers again, and never holds up the others. A broker
has *acknowledged* an offset when its UpdateMetadata for it succeeded.

As Kafka's ZooKeeper-mode controller does, UpdateMetadata is a full one (every partition) only
for a broker that has acknowledged nothing yet (a new registration, a new controller, a failed
round); otherwise it is incremental (v8+ Type): the partitions whose state changed since the image
the broker acknowledged, deleted ones with leader -2, the config image only when it changed.
Encoding every partition every round, and decoding it in every broker, grew with the suite's
topics.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

from conformance.client.wire import Connection, pick_version
from conformance.protocol import ApiKey, ConfigResourceType
from reference_impl import extensions, security_hooks
from reference_impl.broker_state import BrokerState
from reference_impl.metadata.image import (
    BrokerRegistration,
    MetadataImage,
)
from reference_impl.roles import ControllerView

log = logging.getLogger(__name__)

INCREMENTAL = 1
FULL = 2
#: the first UpdateMetadata version with a Type field: below it every body is a full one
TYPED_VERSION = 8
#: Kafka's "leader during delete": the partition state of a deleted partition
LEADER_DURING_DELETE = -2
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}


class PropagationError(Exception):
    pass


def config_image(image: MetadataImage) -> dict[str, Any]:
    return {
        "topics": {n: v for (t, n), v in image.configs.items() if t == ConfigResourceType.TOPIC},
        "brokers": {n: v for (t, n), v in image.configs.items() if t == ConfigResourceType.BROKER},
        "groups": {n: v for (t, n), v in image.configs.items() if t == ConfigResourceType.GROUP},
        "quotas": [[[list(e) for e in entity], values] for entity, values in image.quotas.items()],
        "acls": image.acls,
        "scram": image.scram,
    }


def live_brokers(image: MetadataImage, version: int) -> list[dict[str, Any]]:
    out = []
    for reg in image.visible_brokers():
        entry = {
            "Id": reg.broker_id,
            "V0Host": reg.listeners[0]["host"],
            "V0Port": reg.listeners[0]["port"],
            "Endpoints": [
                {
                    "Port": lst["port"],
                    "Host": lst["host"],
                    "Listener": lst["name"],
                    "SecurityProtocol": SECURITY_PROTOCOLS.get(lst["security_protocol"], 0),
                }
                for lst in reg.listeners
            ],
            "Rack": reg.rack,
        }
        out.append(extensions.with_start_time(entry, reg.start_time_ms, version >= 6))
    return out


def partition_state(
    image: MetadataImage, name: str, index: int, live: set[int], controller_epoch: int
) -> dict[str, Any]:
    p = image.topics[name].partitions[index]
    return {
        "TopicName": name,
        "PartitionIndex": index,
        "ControllerEpoch": controller_epoch,
        "Leader": p.leader,
        "LeaderEpoch": p.leader_epoch,
        "Isr": list(p.isr),
        "ZkVersion": p.partition_epoch,
        "PartitionEpoch": p.partition_epoch,
        "Replicas": list(p.replicas),
        "OfflineReplicas": [b for b in p.replicas if b not in live],
    }


def update_metadata_body(
    image: MetadataImage, live: set[int], v: int, controller_id: int
) -> dict[str, Any]:
    """The full UpdateMetadata of ``image`` at version ``v``, but for its BrokerEpoch (-1)."""
    states = {
        name: [
            partition_state(image, name, i, live, image.controller_epoch)
            for i in sorted(topic.partitions)
        ]
        for name, topic in sorted(image.topics.items())
    }
    body: dict[str, Any] = {
        "ControllerId": controller_id,
        "ControllerEpoch": image.controller_epoch,
        "BrokerEpoch": -1,
        "Type": FULL,
        "LiveBrokers": live_brokers(image, v),
    }
    if v >= 5:
        body["TopicStates"] = [
            {"TopicName": n, "TopicId": image.topics[n].topic_id, "PartitionStates": ps}
            for n, ps in states.items()
        ]
    else:
        body["UngroupedPartitionStates"] = [s for ps in states.values() for s in ps]
    if v >= 6:
        extensions.put_int64(body, extensions.METADATA_OFFSET_TAG, image.offset)
        extensions.put_json(body, extensions.CONFIG_IMAGE_TAG, config_image(image))
    return body


def update_metadata_delta(
    since: MetadataImage, image: MetadataImage, v: int, controller_id: int
) -> dict[str, Any] | None:
    """The incremental UpdateMetadata from ``since`` (what the broker acknowledged) to
    ``image``, but for its BrokerEpoch; None where only a full body will do."""
    if v < TYPED_VERSION or since.controller_epoch != image.controller_epoch:
        return None
    epoch = image.controller_epoch
    live = {r.broker_id for r in image.visible_brokers()}
    live_before = {r.broker_id for r in since.visible_brokers()}
    moved = live ^ live_before  # their replicas' OfflineReplicas may have changed
    topic_states = []
    for name, old in sorted(since.topics.items()):
        new = image.topics.get(name)
        kept = new.partitions if new is not None and new.topic_id == old.topic_id else {}
        gone = [i for i in sorted(old.partitions) if i not in kept]
        if gone:  # deletions first: a topic made anew under the same name follows
            states = [partition_state(since, name, i, live_before, epoch) for i in gone]
            for state in states:
                state["Leader"] = LEADER_DURING_DELETE
            topic_states.append(
                {"TopicName": name, "TopicId": old.topic_id, "PartitionStates": states}
            )
    for name, topic in sorted(image.topics.items()):
        old = since.topics.get(name)
        before = old.partitions if old is not None and old.topic_id == topic.topic_id else {}
        changed = [
            i
            for i, p in sorted(topic.partitions.items())
            if before.get(i) != p or (moved and not moved.isdisjoint(p.replicas))
        ]
        if changed:
            topic_states.append(
                {
                    "TopicName": name,
                    "TopicId": topic.topic_id,
                    "PartitionStates": [
                        partition_state(image, name, i, live, epoch) for i in changed
                    ],
                }
            )
    body: dict[str, Any] = {
        "ControllerId": controller_id,
        "ControllerEpoch": epoch,
        "BrokerEpoch": -1,
        "Type": INCREMENTAL,
        "LiveBrokers": live_brokers(image, v),
        "TopicStates": topic_states,
    }
    extensions.put_int64(body, extensions.METADATA_OFFSET_TAG, image.offset)
    if (since.configs, since.quotas, since.acls, since.scram) != (
        image.configs,
        image.quotas,
        image.acls,
        image.scram,
    ):
        extensions.put_json(body, extensions.CONFIG_IMAGE_TAG, config_image(image))
    return body


class BrokerSender:
    def __init__(self, controller: ControllerView, broker_id: int) -> None:
        self.controller = controller
        self.broker_id = broker_id
        self.dirty = asyncio.Event()
        self.dirty.set()
        self.acked_offset = -1
        self.acked_at = 0.0
        #: partition -> (leader epoch, partition epoch) the broker has acknowledged
        self.known: dict[tuple[str, int], tuple[int, int]] = {}
        #: the image of the broker's last acknowledged UpdateMetadata (None: it gets a full one)
        self.acked_image: MetadataImage | None = None
        self.epoch = -1
        self.conn: Connection | None = None
        self.versions: dict[int, tuple[int, int]] = {}
        self.task: asyncio.Task | None = None

    def reset(self) -> None:
        """The broker registered anew: it remembers nothing we told its previous incarnation."""
        self.known.clear()
        self.acked_offset = -1
        self.acked_image = None
        self.dirty.set()

    async def run(self) -> None:
        backoff = 0.02
        while True:
            await self.dirty.wait()
            self.dirty.clear()
            try:
                await self.send_round()
                backoff = 0.02
            except asyncio.CancelledError:
                raise
            except Exception as e:
                log.debug("broker %d: propagation failed: %r", self.broker_id, e)
                # it may have applied what it did not acknowledge: a full body puts that right
                self.acked_image = None
                await self.disconnect()
                self.dirty.set()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 0.5)

    async def disconnect(self) -> None:
        if self.conn is not None:
            conn, self.conn = self.conn, None
            with contextlib.suppress(Exception):
                await conn.close()

    async def _connect(self, host: str, port: int) -> Connection:
        if self.conn is None or self.conn.closed:
            self.conn = await security_hooks.connect(
                host,
                port,
                codec=self.controller.codec,
                client_id=f"controller-{self.controller.node_id}",
                timeout=2.0,
            )
            self.versions = await self.conn.api_versions()
        return self.conn

    def _version(self, api_key: int) -> int:
        v = pick_version(self.versions, self.controller.codec, api_key)
        if v is None:
            raise PropagationError(f"broker {self.broker_id} does not serve api {api_key}")
        return v

    async def send_round(self) -> None:
        c = self.controller
        image = c.image
        if image is None:
            return
        reg = image.brokers.get(self.broker_id)
        if reg is None or reg.state == BrokerState.OFFLINE:
            return
        if reg.epoch != self.epoch:
            self.epoch = reg.epoch
            self.known.clear()
            self.acked_image = None
        endpoint = c.propagator.endpoint_of(reg)
        conn = await self._connect(endpoint["host"], endpoint["port"])
        timeout = 5.0
        live = {r.broker_id for r in image.visible_brokers()}
        hosted = {
            (name, index)
            for name, topic in image.topics.items()
            for index, p in topic.partitions.items()
            if self.broker_id in p.replicas
        }
        changed = sorted(
            key
            for key in hosted
            if self.known.get(key)
            != (
                image.topics[key[0]].partitions[key[1]].leader_epoch,
                image.topics[key[0]].partitions[key[1]].partition_epoch,
            )
        )
        if changed:
            v = self._version(ApiKey.LEADER_AND_ISR)
            body = self._leader_and_isr(image, changed, live, v, reg.epoch)
            resp = await conn.request(ApiKey.LEADER_AND_ISR, v, body, timeout=timeout)
            if resp.body["ErrorCode"]:
                raise PropagationError(f"LeaderAndIsr: error {resp.body['ErrorCode']}")
            for key in changed:
                p = image.topics[key[0]].partitions[key[1]]
                self.known[key] = (p.leader_epoch, p.partition_epoch)
        gone = sorted(set(self.known) - hosted)
        if gone:
            v = self._version(ApiKey.STOP_REPLICA)
            body = self._stop_replica(image, gone, v, reg.epoch)
            resp = await conn.request(ApiKey.STOP_REPLICA, v, body, timeout=timeout)
            if resp.body["ErrorCode"]:
                raise PropagationError(f"StopReplica: error {resp.body['ErrorCode']}")
            for key in gone:
                self.known.pop(key, None)
        v = self._version(ApiKey.UPDATE_METADATA)
        body = c.propagator.update_metadata(image, live, v, reg.epoch, self.acked_image)
        resp = await conn.request(ApiKey.UPDATE_METADATA, v, body, timeout=timeout)
        if resp.body["ErrorCode"]:
            raise PropagationError(f"UpdateMetadata: error {resp.body['ErrorCode']}")
        self.acked_image = image
        self.acked_offset = image.offset
        self.acked_at = time.monotonic()
        c.propagator.acked()

    def _leader_and_isr(
        self, image: MetadataImage, keys: list[tuple[str, int]], live: set[int], v: int, epoch: int
    ) -> dict[str, Any]:
        c = self.controller
        states: dict[str, list[dict]] = {}
        leaders = set()
        for name, index in keys:
            s = partition_state(image, name, index, live, image.controller_epoch)
            s["IsNew"] = (name, index) not in self.known and s["PartitionEpoch"] == 0
            states.setdefault(name, []).append(s)
            leaders.add(s["Leader"])
        body: dict[str, Any] = {
            "ControllerId": c.node_id,
            "ControllerEpoch": image.controller_epoch,
            "BrokerEpoch": epoch,
            "Type": 0,
            "LiveLeaders": [
                {
                    "BrokerId": b,
                    "HostName": c.propagator.endpoint_of(image.brokers[b])["host"],
                    "Port": c.propagator.endpoint_of(image.brokers[b])["port"],
                }
                for b in sorted(leaders)
                if b in image.brokers
            ],
        }
        if v >= 2:
            body["TopicStates"] = [
                {"TopicName": n, "TopicId": image.topics[n].topic_id, "PartitionStates": ps}
                for n, ps in states.items()
            ]
        else:
            body["UngroupedPartitionStates"] = [s for ps in states.values() for s in ps]
        return body

    def _stop_replica(
        self, image: MetadataImage, keys: list[tuple[str, int]], v: int, epoch: int
    ) -> dict[str, Any]:
        by_topic: dict[str, list[int]] = {}
        for name, index in keys:
            by_topic.setdefault(name, []).append(index)
        body: dict[str, Any] = {
            "ControllerId": self.controller.node_id,
            "ControllerEpoch": image.controller_epoch,
            "BrokerEpoch": epoch,
            "DeletePartitions": True,
        }
        if v >= 3:
            body["TopicStates"] = [
                {
                    "TopicName": n,
                    "PartitionStates": [
                        {"PartitionIndex": i, "LeaderEpoch": -2, "DeletePartition": True}
                        for i in idx
                    ],
                }
                for n, idx in by_topic.items()
            ]
        elif v >= 1:
            body["Topics"] = [{"Name": n, "PartitionIndexes": idx} for n, idx in by_topic.items()]
        else:
            body["UngroupedPartitions"] = [
                {"TopicName": n, "PartitionIndex": i} for n, idx in by_topic.items() for i in idx
            ]
        return body


class Propagator:
    def __init__(self, controller: ControllerView) -> None:
        self.controller = controller
        self.senders: dict[int, BrokerSender] = {}
        self._event = asyncio.Event()
        #: the image the bodies below were built from (a published image is never mutated)
        self._built_from: MetadataImage | None = None
        #: UpdateMetadata version -> its body for ``_built_from``, but for the BrokerEpoch
        self._bodies: dict[int, dict[str, Any]] = {}
        #: (id of the acknowledged image, version) -> (that image, the incremental body)
        self._deltas: dict[tuple[int, int], tuple[MetadataImage, dict[str, Any] | None]] = {}

    def endpoint_of(self, reg: BrokerRegistration) -> dict[str, Any]:
        """The broker's inter-broker listener (by name; its first listener otherwise)."""
        name = self.controller.config.inter_broker_listener
        return next((lst for lst in reg.listeners if lst["name"] == name), reg.listeners[0])

    def update_metadata(
        self,
        image: MetadataImage,
        live: set[int],
        v: int,
        broker_epoch: int,
        since: MetadataImage | None = None,
    ) -> dict[str, Any]:
        """The broker's UpdateMetadata: incremental from ``since``, the image it acknowledged
        last, else full; each built once for every broker of a round that acknowledged the same
        image (only BrokerEpoch differs between brokers; the encoder only reads bodies)."""
        if image is not self._built_from:
            self._built_from = image
            self._bodies = {}
            self._deltas = {}
        shared = None
        if since is not None:
            built = self._deltas.get((id(since), v))
            if built is None or built[0] is not since:
                delta = update_metadata_delta(since, image, v, self.controller.node_id)
                built = self._deltas[(id(since), v)] = (since, delta)
            shared = built[1]
        if shared is None:
            shared = self._bodies.get(v)
        if shared is None:
            shared = self._bodies[v] = update_metadata_body(image, live, v, self.controller.node_id)
        body = dict(shared)
        body["BrokerEpoch"] = broker_epoch
        return body

    def changed(self) -> None:
        """The image changed: every registered broker gets a new round."""
        image = self.controller.image
        if image is None:
            return
        for broker_id, reg in image.brokers.items():
            sender = self.senders.get(broker_id)
            if sender is None and reg.state != BrokerState.OFFLINE:
                sender = self.senders[broker_id] = BrokerSender(self.controller, broker_id)
                sender.task = self.controller.spawn(sender.run(), f"sender-{broker_id}")
            if sender is not None:
                sender.dirty.set()
        for broker_id in list(self.senders):
            reg = image.brokers.get(broker_id)
            if reg is None or reg.state == BrokerState.OFFLINE:
                self._drop(broker_id)
        self.acked()

    def registered(self, broker_id: int) -> None:
        sender = self.senders.get(broker_id)
        if sender is not None:
            sender.reset()

    def _drop(self, broker_id: int) -> None:
        sender = self.senders.pop(broker_id)
        if sender.task is not None:
            sender.task.cancel()
        if sender.conn is not None:
            self.controller.spawn(sender.disconnect(), f"disconnect-{broker_id}")

    def acked(self) -> None:
        """Wake the waiters of ``wait_acked`` (an ack arrived, or the set of brokers changed)."""
        self._event.set()
        self._event = asyncio.Event()

    def acked_offset(self, broker_id: int) -> int:
        sender = self.senders.get(broker_id)
        return sender.acked_offset if sender is not None else -1

    def caught_up(self, offset: int) -> bool:
        """Every Online broker has acknowledged ``offset``."""
        image = self.controller.image
        if image is None:
            return False
        return all(self.acked_offset(b) >= offset for b in image.active_brokers())

    async def wait_acked(self, offset: int, timeout: float) -> bool:
        """Wait until every Online broker has acknowledged ``offset``; False on timeout."""
        try:
            async with asyncio.timeout(timeout):
                while not self.caught_up(offset):
                    await self._event.wait()
            return True
        except TimeoutError:
            return False

    def stop(self) -> None:
        for broker_id in list(self.senders):
            self._drop(broker_id)
