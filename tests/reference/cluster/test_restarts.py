"""kill -9 and restart of each node kind, in both stores: nothing of the metadata is lost.

Also: the embedded metadata log survives a torn last write, and a restarted broker reports a
later KIP-536 start time and a larger broker epoch, with the same KIP-78 cluster id.
"""

from __future__ import annotations

import json
import uuid

import pytest

from conformance.protocol import ApiKey
from reference_impl import extensions
from reference_impl.config import ListenerConfig, NodeConfig
from reference_impl.controller.store import EmbeddedStore
from reference_impl.launcher import Cluster
from reference_impl.metadata.image import MetadataImage
from tests.reference.control_plane import (
    STORES,
    call,
    controller_address,
    metadata,
    new_cluster,
    run,
    scrape,
    topic_body,
    wait_until,
)


def snapshot(cluster: Cluster, broker: str) -> dict:
    """What a broker says about topics, their configs and the client quotas."""
    address = cluster.broker_address(cluster.nodes[broker])
    md = metadata(cluster, broker)
    topics = {
        t["Name"]: (
            t["TopicId"],
            sorted((p["PartitionIndex"], tuple(p["ReplicaNodes"])) for p in t["Partitions"]),
        )
        for t in md["Topics"]
    }
    configs = {}
    for name in topics:
        result = call(
            address,
            ApiKey.DESCRIBE_CONFIGS,
            4,
            {
                "Resources": [{"ResourceType": 2, "ResourceName": name, "ConfigurationKeys": None}],
                "IncludeSynonyms": False,
                "IncludeDocumentation": False,
            },
        )["Results"][0]
        configs[name] = {c["Name"]: c["Value"] for c in result["Configs"] if c["ConfigSource"] == 1}
    quotas = call(address, ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, {"Components": [], "Strict": False})[
        "Entries"
    ]
    return {
        "cluster_id": md["ClusterId"],
        "topics": topics,
        "configs": configs,
        "quotas": sorted(json.dumps(q, sort_keys=True) for q in quotas),
    }


def populate(cluster: Cluster, tag: str) -> None:
    address = cluster.broker_address(cluster.nodes["broker-1"])
    name = f"kept-{tag}"
    created = call(
        address, ApiKey.CREATE_TOPICS, 7, topic_body(name, 3, 2, {"retention.ms": "5000"})
    )
    assert created["Topics"][0]["ErrorCode"] == 0
    grown = call(
        address,
        ApiKey.CREATE_PARTITIONS,
        3,
        {
            "Topics": [{"Name": name, "Count": 4, "Assignments": None}],
            "TimeoutMs": 5000,
            "ValidateOnly": False,
        },
    )
    assert grown["Results"][0]["ErrorCode"] == 0
    altered = call(
        address,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "Resources": [
                {
                    "ResourceType": 2,
                    "ResourceName": name,
                    "Configs": [{"Name": "segment.ms", "ConfigOperation": 0, "Value": "70000"}],
                }
            ],
            "ValidateOnly": False,
        },
    )
    assert altered["Responses"][0]["ErrorCode"] == 0
    quota = call(
        address,
        ApiKey.ALTER_CLIENT_QUOTAS,
        1,
        {
            "Entries": [
                {
                    "Entity": [
                        {"EntityType": "user", "EntityName": f"u-{tag}"},
                        {"EntityType": "client-id", "EntityName": None},
                    ],
                    "Ops": [{"Key": "consumer_byte_rate", "Value": 2048.0, "Remove": False}],
                }
            ],
            "ValidateOnly": False,
        },
    )
    assert quota["Entries"][0]["ErrorCode"] == 0


def broker_facts(cluster: Cluster, broker_id: int) -> tuple[int, int]:
    """(KIP-536 start time as served, broker epoch from the broker's metrics)."""
    entry = next(b for b in metadata(cluster, "broker-1")["Brokers"] if b["NodeId"] == broker_id)
    samples = scrape(cluster.nodes[f"broker-{broker_id}"].config.metrics_port)
    return extensions.start_time(entry), int(samples[("kafka_broker_epoch", frozenset())])


def fenced_everywhere(cluster: Cluster, broker_id: int) -> bool:
    """BROKER-REGISTRATION.R4, R5, R11: a silent broker is fenced: in no Metadata or
    DescribeCluster, leading no partition, and the controller's state metric says so."""
    for broker in ("broker-1", "broker-3"):
        md = metadata(cluster, broker)
        if broker_id in {b["NodeId"] for b in md["Brokers"]}:
            return False
        assert all(p["LeaderId"] != broker_id for t in md["Topics"] for p in t["Partitions"])
    described = call(controller_address(cluster), 60, 1, {"EndpointType": 1})
    assert broker_id not in {b["BrokerId"] for b in described["Brokers"]}
    samples = scrape(cluster.nodes["controller-0"].config.metrics_port)
    state = (
        "kafka_controller_broker_state",
        frozenset({("broker_id", str(broker_id)), ("state", "fenced")}),
    )
    return samples[state] == 1


@pytest.mark.parametrize("store", STORES)
def test_kill_9_of_each_node_kind_loses_no_metadata(
    store: str, tmp_path, request: pytest.FixtureRequest
) -> None:
    zookeeper = request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    cluster = new_cluster(tmp_path, store, zookeeper)
    cluster.start()
    try:
        populate(cluster, "a")
        before = snapshot(cluster, "broker-1")
        assert before["configs"]["kept-a"] == {"retention.ms": "5000", "segment.ms": "70000"}

        cluster.kill("controller-0")
        cluster.start_node("controller-0")
        populate(cluster, "b")  # the restarted controller takes mutations again
        after = wait_until(
            lambda: (
                (s := snapshot(cluster, "broker-3"))["topics"].keys() >= {"kept-a", "kept-b"} and s
            )
        )
        assert after["cluster_id"] == before["cluster_id"]
        assert after["topics"]["kept-a"] == before["topics"]["kept-a"]
        assert after["configs"]["kept-a"] == before["configs"]["kept-a"]
        assert set(before["quotas"]) < set(after["quotas"])

        started, epoch = broker_facts(cluster, 2)
        cluster.kill("broker-2")
        wait_until(lambda: fenced_everywhere(cluster, 2))
        cluster.start_node("broker-2")
        cluster.wait_ready(timeout=30)
        restarted, new_epoch = broker_facts(cluster, 2)
        assert restarted > started  # KIP-536.R4
        assert new_epoch > epoch  # BROKER-REGISTRATION.R7
        assert snapshot(cluster, "broker-2") == after  # KIP-78.R6 and everything else

        cluster.stop()
        cluster.start()
        assert snapshot(cluster, "broker-1") == after
    finally:
        cluster.stop()


def test_the_metadata_log_cuts_a_torn_tail(tmp_path) -> None:
    config = NodeConfig(
        role="controller",
        node_id=0,
        data_dir=str(tmp_path),
        listeners=[ListenerConfig("CONTROLLER", 0)],
    )

    async def write_and_replay() -> tuple[MetadataImage, MetadataImage]:
        store = EmbeddedStore(config)
        await store.open()
        cluster_id = await store.cluster_id()
        image = await store.load()
        topic = str(uuid.uuid4())
        for i, record in enumerate([{"type": "topic", "name": "t", "topic_id": topic}]):
            image.apply(record, image.offset + 1 + i)
        await store.append([{"type": "topic", "name": "t", "topic_id": topic}], image)
        await store.close()
        with open(tmp_path / "metadata.log", "ab") as f:
            f.write(b'{"records":[{"type":"remove_topic","na')  # killed mid-write
        again = EmbeddedStore(config)
        await again.open()
        assert await again.cluster_id() == cluster_id
        replayed = await again.load()
        await again.close()
        return image, replayed

    written, replayed = run(write_and_replay())
    assert set(replayed.topics) == {"t"} and replayed.offset == written.offset
    assert (tmp_path / "metadata.log").read_bytes().endswith(b"}\n")
