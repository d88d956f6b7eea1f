"""KIP-78.R9 on the client side: the suite's own client tells its ClusterResourceListeners
(interceptors and serialisers that have ``on_update``) the cluster id the target reports.

The suite's test (``test_cluster_resource_listener``) and the project's tests of the client
against tansu and the reference cluster run this same scenario.
"""

from __future__ import annotations

from typing import Any

from conformance.client.interceptors import ClusterResource, ProducerInterceptor
from conformance.client.producer import Producer
from conformance.suite.kip42.env import ClientEnv, json_serializer
from conformance.suite.kit.verify import check


async def cluster_resource(env: ClientEnv, expected_cluster_id: str | None) -> None:
    """ClusterResourceListeners hear the cluster id after the first Metadata response
    (KIP-78.R9): interceptors and serialisers alike, not before the client talks to the
    cluster, once per Metadata response."""
    heard: list[tuple[str, ClusterResource, int]] = []
    producer: Producer | None = None

    class Listening(ProducerInterceptor):
        def on_update(self, cluster: ClusterResource) -> None:
            heard.append(("interceptor", cluster, producer.metadata.updates if producer else -1))

    class ListeningSerializer:
        def __call__(self, topic: str, value: Any) -> bytes | None:
            return json_serializer(topic, value)

        def on_update(self, cluster: ClusterResource) -> None:
            heard.append(("serializer", cluster, producer.metadata.updates if producer else -1))

    producer = env.producer(interceptors=[Listening()], value_serializer=ListeningSerializer())
    check(not heard, f"listeners told {heard} before any Metadata response", "KIP-78.R9")
    async with producer:
        after_start = list(heard)
        updates = producer.metadata.updates
    check(
        {w for w, _, _ in after_start} == {"interceptor", "serializer"},
        f"after the first Metadata response, listeners told: {after_start}",
        "KIP-78.R9",
    )
    check(
        all(c.cluster_id == expected_cluster_id for _, c, _ in heard),
        f"listeners were told {[c.cluster_id for _, c, _ in heard]}, the target's cluster "
        f"id is {expected_cluster_id!r}",
        "KIP-78.R9",
    )
    check(
        all(n >= 1 for _, _, n in heard) and len(heard) == 2 * updates,
        f"listeners were told {len(heard)} times for {updates} Metadata responses, or "
        "before the response was taken in",
        "KIP-78.R9",
    )
