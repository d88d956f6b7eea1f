"""Interop: kafka-python's and confluent-kafka's admin clients against the reference cluster.

Through every broker as the only bootstrap server, each client creates, describes and deletes a
topic (forwarded to the controller, KIP-590) and reads the KIP-78 cluster id, in both stores.
"""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as ConfluentNewTopic
from kafka.admin import KafkaAdminClient
from kafka.admin import NewTopic as KafkaPythonNewTopic

from reference_impl.launcher import Cluster
from tests.reference.control_plane import metadata, wait_until

BROKERS = ("broker-1", "broker-2", "broker-3")


def bootstrap(cluster: Cluster, broker: str) -> str:
    host, port = cluster.broker_address(cluster.nodes[broker])
    return f"{host}:{port}"


@pytest.mark.parametrize("broker", BROKERS)
def test_kafka_python_admin(shared_cluster: Cluster, broker: str) -> None:
    cluster_id = metadata(shared_cluster, "broker-1")["ClusterId"]
    name = f"kp-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap(shared_cluster, broker), request_timeout_ms=15000
    )
    try:
        assert admin.describe_cluster()["cluster_id"] == cluster_id
        created = admin.create_topics([KafkaPythonNewTopic(name, 3, 2)])
        assert created["topics"][0]["error_code"] == 0
        (described,) = admin.describe_topics([name])
        assert described["error_code"] == 0 and len(described["partitions"]) == 3
        assert all(len(p["replica_nodes"]) == 2 for p in described["partitions"])
        assert name in admin.list_topics()
        admin.delete_topics([name])
        wait_until(lambda: name not in admin.list_topics())
    finally:
        admin.close()


@pytest.mark.parametrize("broker", BROKERS)
def test_confluent_kafka_admin(shared_cluster: Cluster, broker: str) -> None:
    cluster_id = metadata(shared_cluster, "broker-1")["ClusterId"]
    name = f"ck-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap(shared_cluster, broker)})
    try:
        assert admin.describe_cluster(request_timeout=15).result(15).cluster_id == cluster_id
        for future in admin.create_topics([ConfluentNewTopic(name, 2, 3)]).values():
            assert future.result(15) is None
        topics = admin.list_topics(timeout=15)  # all topics: librdkafka's own Metadata form
        assert topics.cluster_id == cluster_id
        assert {b.id for b in topics.brokers.values()} == {1, 2, 3}
        assert len(topics.topics[name].partitions) == 2
        assert all(len(p.replicas) == 3 for p in topics.topics[name].partitions.values())
        for future in admin.delete_topics([name]).values():
            assert future.result(15) is None
        with pytest.raises(KafkaException):
            for future in admin.create_topics([ConfluentNewTopic(name, 0, 1)]).values():
                future.result(15)
    finally:
        # an AdminClient has no close(): its threads stop with its last reference, and
        # without this the three clients outlived the test (still reconnecting to a stopped
        # cluster from the CI log, and alive at the session's end even after gc.collect())
        del admin
