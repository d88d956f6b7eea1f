"""Where the KIP-42 scenarios' clients connect: the target's client listener, JSON values."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from conformance.client.consumer import Consumer
from conformance.client.create_topics import create_topics
from conformance.client.metadata import ClusterMetadata
from conformance.client.producer import Producer
from conformance.protocol import ApiKey, Codec
from conformance.suite.kit.safety import fresh_name

if TYPE_CHECKING:
    from conformance.suite.kit.harness import Harness
    from conformance.suite.kit.provision import Topics


#: partitions of every topic a scenario makes
PARTITIONS = 3


# --- environment -------------------------------------------------------------------------------


@dataclass
class ClientEnv:
    """Where and how the scenarios' clients connect."""

    bootstrap: Any
    codec: Codec | None = None
    sasl: Any = None
    timeout: float = 30.0

    def producer(self, **kw: Any) -> Producer:
        kw.setdefault("value_serializer", json_serializer)
        return Producer(self.bootstrap, codec=self.codec, sasl=self.sasl, **kw)

    def consumer(self, **kw: Any) -> Consumer:
        kw.setdefault("value_deserializer", json_deserializer)
        return Consumer(self.bootstrap, codec=self.codec, sasl=self.sasl, **kw)

    async def new_topic(self, partitions: int = PARTITIONS) -> str:
        """A topic made with the client's CreateTopics (the client's own tests; the suite's
        tests obtain theirs through :func:`suite_topic`)."""
        name = fresh_name("kip42")
        cluster = ClusterMetadata(self.bootstrap, codec=self.codec, sasl=self.sasl)
        try:
            await cluster.start()
            await create_topics(cluster, {name: partitions}, timeout=self.timeout)
        finally:
            await cluster.close()
        return name


def harness_env(harness: Harness, *, commits: bool = False) -> ClientEnv:
    """The target's client listener as a ClientEnv, once the APIs the client needs are there."""
    harness.pick_version(ApiKey.FETCH, "4+")
    harness.pick_version(ApiKey.PRODUCE, "3+")
    if commits:
        for api in (ApiKey.FIND_COORDINATOR, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH):
            harness.require(api)
    t = harness.target
    return ClientEnv(t.bootstrap, harness.codec, t.sasl)


def suite_topic(harness: Harness) -> Topics:
    """The scenario's topic, obtained as every suite topic is (``provision``): PARTITIONS of
    them where the suite creates it, whatever auto-creation or the user gives otherwise (the
    scenarios read the count from the client's metadata)."""
    from conformance.suite.kit.provision import Topics

    return Topics(harness, "kip42", partitions=1, prefer=PARTITIONS)


def json_serializer(topic: str, value: Any) -> bytes | None:
    return None if value is None else json.dumps(value).encode()


def json_deserializer(topic: str, data: bytes | None) -> Any:
    return None if data is None else json.loads(data)
