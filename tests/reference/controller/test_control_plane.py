"""The reference cluster's control plane over the wire, in both metadata stores.

KIP-78 cluster id, KIP-536 start time, KIP-590 forwarding (and the Envelope refused to client
principals), the registration draft's Online brokers, listeners and metrics; the cluster is
shared by the session (``shared_cluster``), so every test names its own topics.
"""

from __future__ import annotations

import asyncio
import base64
import json
import re
import time
import uuid
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from conformance.protocol import ApiKey
from conformance.protocol.framing import encode_request
from reference_impl import extensions
from reference_impl.cluster_id import read_meta_properties
from reference_impl.launcher import Cluster
from reference_impl.principal import address_bytes, serialize
from tests.reference.control_plane import (
    CODEC,
    acall,
    api_versions,
    call,
    controller_address,
    metadata,
    run,
    scrape,
    topic_body,
    wait_until,
)

BROKERS = ("broker-1", "broker-2", "broker-3")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def zk_get(cluster: Cluster, path: str) -> dict | None:
    """A znode's JSON under the cluster's chroot (None when absent)."""
    connect = cluster.metadata_store.removeprefix("zookeeper://")
    client = KazooClient(hosts=connect.split("/", 1)[0])
    client.start(timeout=10)
    try:
        chroot = "/" + connect.split("/", 1)[1]
        if not client.exists(chroot + path):
            return None
        return json.loads(client.get(chroot + path)[0])
    finally:
        client.stop()
        client.close()


def zk_mode(cluster: Cluster) -> bool:
    return cluster.metadata_store.startswith("zookeeper://")


# --- KIP-78 ---------------------------------------------------------------------------------


def test_cluster_id_has_the_kip78_form_and_every_node_agrees(shared_cluster: Cluster) -> None:
    """KIP-78.R1, R3-R5, R7, R8: one id everywhere: Metadata, DescribeCluster, metrics, disk,
    every node's log."""
    ids = set()
    for name in BROKERS:
        for version in (2, 9, 12):
            ids.add(metadata(shared_cluster, name, version)["ClusterId"])
        body = call(
            shared_cluster.broker_address(shared_cluster.nodes[name]),
            ApiKey.DESCRIBE_CLUSTER,
            1,
            {"IncludeClusterAuthorizedOperations": False},
        )
        ids.add(body["ClusterId"])
    for node in shared_cluster.nodes.values():
        ids.add(read_meta_properties(node.config.data_dir)["cluster.id"])
        logged = re.findall(r"INFO .* cluster id (\S+)$", node.log_path.read_text(), re.M)
        assert logged, f"{node.name} did not log its cluster id"
        ids.update(logged)
        samples = scrape(node.config.metrics_port)
        ids.update(dict(k[1])["id"] for k in samples if k[0] == "kafka_cluster_info")
    assert len(ids) == 1, ids
    (cluster_id,) = ids
    assert re.fullmatch(r"[a-zA-Z0-9_-]{22}", cluster_id)
    assert len(base64.urlsafe_b64decode(cluster_id + "==")) == 16
    if zk_mode(shared_cluster):
        assert zk_get(shared_cluster, "/cluster/id") == {"version": 1, "id": cluster_id}


def test_metadata_before_v2_has_no_cluster_id(shared_cluster: Cluster) -> None:
    """KIP-78.R2: v0 and v1 decode exactly as their schema (the codec refuses extra bytes)."""
    assert metadata(shared_cluster, "broker-1", 1)["ClusterId"] is None
    assert len(metadata(shared_cluster, "broker-1", 0, [])["Brokers"]) == 3


# --- KIP-536 --------------------------------------------------------------------------------


def test_start_time_is_served_in_flexible_versions_and_agreed(shared_cluster: Cluster) -> None:
    """KIP-536.R1-R3, R5: the tagged start time on Metadata and DescribeCluster broker entries."""
    runtime = {
        n.config.node_id: n.runtime()["start_time_ms"] for n in shared_cluster.broker_nodes()
    }
    assert all(0 < t <= time.time() * 1000 for t in runtime.values())
    for name in BROKERS:
        for version in (9, 12):
            brokers = metadata(shared_cluster, name, version)["Brokers"]
            assert {b["NodeId"]: extensions.start_time(b) for b in brokers} == runtime
        brokers = call(
            shared_cluster.broker_address(shared_cluster.nodes[name]),
            ApiKey.DESCRIBE_CLUSTER,
            0,
            {},
        )["Brokers"]
        assert {b["BrokerId"]: extensions.start_time(b) for b in brokers} == runtime
        old = metadata(shared_cluster, name, 8)["Brokers"]
        assert all("_unknown_tagged_fields" not in b for b in old)
    if zk_mode(shared_cluster):
        for broker_id, start in runtime.items():
            assert int(zk_get(shared_cluster, f"/brokers/ids/{broker_id}")["timestamp"]) == start


# --- the draft: Online brokers, listeners, metrics ----------------------------------------------


def test_every_broker_is_online_in_metrics_and_in_the_registration_record(
    shared_cluster: Cluster,
) -> None:
    """BROKER-REGISTRATION.R3, R8: Online everywhere; in ZooKeeper the controller's
    /cluster/brokers/N."""
    controller = scrape(shared_cluster.controller_nodes()[0].config.metrics_port)
    for node in shared_cluster.broker_nodes():
        samples = scrape(node.config.metrics_port)
        assert samples[("kafka_broker_state", frozenset({("kafka_broker_state", "online")}))] == 1
        key = (
            "kafka_controller_broker_state",
            frozenset({("broker_id", str(node.config.node_id)), ("state", "online")}),
        )
        assert controller[key] == 1
        if zk_mode(shared_cluster):
            record = zk_get(shared_cluster, f"/cluster/brokers/{node.config.node_id}")
            assert record["state"] == "ONLINE" and record["version"] == 1
            assert record["epoch"] == samples[("kafka_broker_epoch", frozenset())]
            settings = record["settings"]
            assert settings["listener_security_protocol_map"] == {
                "PLAINTEXT": "PLAINTEXT",
                "INTERNAL": "PLAINTEXT",
            }
            host, port = shared_cluster.broker_address(node)
            assert f"PLAINTEXT://{host}:{port}" in settings["endpoints"]
            assert "rack" in settings


def test_api_versions_differ_per_listener(shared_cluster: Cluster) -> None:
    """Brokers serve the client APIs, the controller listener the controller ones."""
    broker = api_versions(shared_cluster.broker_address(shared_cluster.nodes["broker-1"]))
    controller = api_versions(controller_address(shared_cluster))
    assert {
        ApiKey.METADATA,
        ApiKey.CREATE_TOPICS,
        ApiKey.DESCRIBE_CLUSTER,
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
    } <= set(broker)
    assert not {
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.UNREGISTER_BROKER,
        ApiKey.ENVELOPE,
    } & set(broker)
    assert {
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.UNREGISTER_BROKER,
        ApiKey.ENVELOPE,
        ApiKey.ALTER_PARTITION,
        ApiKey.CREATE_TOPICS,
        ApiKey.DESCRIBE_CLUSTER,
    } <= set(controller)
    assert ApiKey.METADATA not in controller and ApiKey.DESCRIBE_CLIENT_QUOTAS not in controller
    for address in (
        shared_cluster.broker_address(shared_cluster.nodes["broker-1"]),
        controller_address(shared_cluster),
    ):
        body = _api_versions_at(address, 99)
        assert body["ErrorCode"] == 35
        assert 18 in {k["ApiKey"] for k in body["ApiKeys"]}


def _api_versions_at(address: tuple[str, int], version: int) -> dict:
    import asyncio
    import struct

    from conformance.protocol.framing import decode_response

    async def go() -> dict:
        reader, writer = await asyncio.open_connection(*address)
        frame = encode_request(CODEC, 18, 3, 5, "t", {})
        frame = frame[:2] + struct.pack(">h", version) + frame[4:]
        writer.write(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        raw = await reader.readexactly(size)
        writer.close()
        return decode_response(CODEC, 18, 0, raw)[1]

    return run(go())


def test_describe_cluster_on_the_controller_listener(shared_cluster: Cluster) -> None:
    body = call(
        controller_address(shared_cluster),
        ApiKey.DESCRIBE_CLUSTER,
        1,
        {"IncludeClusterAuthorizedOperations": False, "EndpointType": 1},
    )
    assert body["ErrorCode"] == 0
    assert {b["BrokerId"] for b in body["Brokers"]} == {1, 2, 3}
    assert all(extensions.start_time(b) > 0 for b in body["Brokers"])
    controllers = call(
        controller_address(shared_cluster),
        ApiKey.DESCRIBE_CLUSTER,
        1,
        {"IncludeClusterAuthorizedOperations": False, "EndpointType": 2},
    )
    assert [b["BrokerId"] for b in controllers["Brokers"]] == [0]
    mismatched = call(
        shared_cluster.broker_address(shared_cluster.nodes["broker-1"]),
        ApiKey.DESCRIBE_CLUSTER,
        1,
        {"IncludeClusterAuthorizedOperations": False, "EndpointType": 2},
    )
    assert mismatched["ErrorCode"] == 114


# --- KIP-590 --------------------------------------------------------------------------------


def _topic_everywhere(cluster: Cluster, name: str) -> dict[str, dict | None]:
    out = {}
    body = {
        "Topics": [{"TopicId": uuid.UUID(int=0), "Name": name}],
        "AllowAutoTopicCreation": False,
        "IncludeTopicAuthorizedOperations": False,
    }
    for broker in BROKERS:
        t = call(cluster.broker_address(cluster.nodes[broker]), ApiKey.METADATA, 12, body)[
            "Topics"
        ][0]
        out[broker] = t if t["ErrorCode"] == 0 else None
    return out


def test_forwarded_topic_mutations_reach_every_broker(shared_cluster: Cluster) -> None:
    """KIP-590.R1, R3: create, grow and delete through different brokers; errors pass through."""
    name = unique("fwd")
    b1, b2, b3 = (shared_cluster.broker_address(shared_cluster.nodes[b]) for b in BROKERS)
    before = scrape(shared_cluster.nodes["broker-1"].config.metrics_port)
    created = call(b1, ApiKey.CREATE_TOPICS, 7, topic_body(name, 3, 2))["Topics"][0]
    assert created["ErrorCode"] == 0 and created["NumPartitions"] == 3
    seen = _topic_everywhere(shared_cluster, name)
    assert all(t is not None and len(t["Partitions"]) == 3 for t in seen.values()), seen
    assert {t["TopicId"] for t in seen.values()} == {created["TopicId"]}
    again = call(b2, ApiKey.CREATE_TOPICS, 5, topic_body(name))["Topics"][0]
    assert again["ErrorCode"] == 36  # TOPIC_ALREADY_EXISTS, the controller's inner answer
    after = scrape(shared_cluster.nodes["broker-1"].config.metrics_port)
    key = ("kafka_server_num_messages_redirected_total", frozenset({("api", "CreateTopics")}))
    assert after[key] - before.get(key, 0) == 1

    grown = call(
        b2,
        ApiKey.CREATE_PARTITIONS,
        3,
        {
            "Topics": [{"Name": name, "Count": 5, "Assignments": None}],
            "TimeoutMs": 10000,
            "ValidateOnly": False,
        },
    )
    assert grown["Results"][0]["ErrorCode"] == 0
    assert all(len(t["Partitions"]) == 5 for t in _topic_everywhere(shared_cluster, name).values())
    if zk_mode(shared_cluster):
        znode = zk_get(shared_cluster, f"/brokers/topics/{name}")
        assert sorted(znode["partitions"], key=int) == ["0", "1", "2", "3", "4"]
        state = zk_get(shared_cluster, f"/brokers/topics/{name}/partitions/0/state")
        assert state["leader"] in znode["partitions"]["0"]

    deleted = call(
        b3,
        ApiKey.DELETE_TOPICS,
        6,
        {"Topics": [{"Name": name, "TopicId": uuid.UUID(int=0)}], "TimeoutMs": 10000},
    )
    assert deleted["Responses"][0]["ErrorCode"] == 0
    assert all(t is None for t in _topic_everywhere(shared_cluster, name).values())
    if zk_mode(shared_cluster):
        assert zk_get(shared_cluster, f"/brokers/topics/{name}") is None


def _describe_topic_config(address: tuple[str, int], name: str, key: str) -> dict:
    body = call(
        address,
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "Resources": [{"ResourceType": 2, "ResourceName": name, "ConfigurationKeys": [key]}],
            "IncludeSynonyms": True,
            "IncludeDocumentation": False,
        },
    )
    result = body["Results"][0]
    assert result["ErrorCode"] == 0, result
    (entry,) = result["Configs"]
    return entry


def test_forwarded_config_changes_are_described_by_every_broker(shared_cluster: Cluster) -> None:
    """KIP-590.R1, R4: IncrementalAlterConfigs/AlterConfigs via a broker; ZooKeeper gets it."""
    name = unique("cfg")
    b1, b2, b3 = (shared_cluster.broker_address(shared_cluster.nodes[b]) for b in BROKERS)
    assert call(b1, ApiKey.CREATE_TOPICS, 7, topic_body(name, 1, 1))["Topics"][0]["ErrorCode"] == 0
    body = {
        "Resources": [
            {
                "ResourceType": 2,
                "ResourceName": name,
                "Configs": [
                    {"Name": "retention.ms", "ConfigOperation": 0, "Value": "12345"},
                    {"Name": "cleanup.policy", "ConfigOperation": 2, "Value": "compact"},
                ],
            }
        ],
        "ValidateOnly": False,
    }
    answer = call(b2, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert answer["Responses"][0]["ErrorCode"] == 0, answer
    for address in (b1, b2, b3):
        entry = _describe_topic_config(address, name, "retention.ms")
        assert (entry["Value"], entry["ConfigSource"]) == ("12345", 1)
        assert _describe_topic_config(address, name, "cleanup.policy")["Value"] == "delete,compact"
    if zk_mode(shared_cluster):
        assert zk_get(shared_cluster, f"/config/topics/{name}") == {
            "version": 1,
            "config": {"retention.ms": "12345", "cleanup.policy": "delete,compact"},
        }
    bad = call(
        b3,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "Resources": [
                {
                    "ResourceType": 2,
                    "ResourceName": name,
                    "Configs": [{"Name": "no.such.config", "ConfigOperation": 0, "Value": "1"}],
                }
            ],
            "ValidateOnly": False,
        },
    )
    assert bad["Responses"][0]["ErrorCode"] == 40  # INVALID_CONFIG
    replaced = call(
        b3,
        ApiKey.ALTER_CONFIGS,
        2,
        {
            "Resources": [
                {
                    "ResourceType": 2,
                    "ResourceName": name,
                    "Configs": [{"Name": "segment.ms", "Value": "60000"}],
                }
            ],
            "ValidateOnly": False,
        },
    )
    assert replaced["Responses"][0]["ErrorCode"] == 0
    for address in (b1, b2, b3):
        assert _describe_topic_config(address, name, "retention.ms")["ConfigSource"] == 5
        assert _describe_topic_config(address, name, "segment.ms")["Value"] == "60000"


def test_group_configs_reach_every_broker_and_the_store(shared_cluster: Cluster) -> None:
    """KIP-848's group configs (IncrementalAlterConfigs on a GROUP) via a broker: every broker
    describes them (DYNAMIC_GROUP_CONFIG, 8), ZooKeeper keeps them in /config/groups."""
    name = unique("grp")
    b1, b2, b3 = (shared_cluster.broker_address(shared_cluster.nodes[b]) for b in BROKERS)
    config = {"Name": "consumer.session.timeout.ms", "ConfigOperation": 0, "Value": "50000"}
    body = {
        "Resources": [{"ResourceType": 32, "ResourceName": name, "Configs": [config]}],
        "ValidateOnly": False,
    }
    answer = call(b2, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body)
    assert answer["Responses"][0]["ErrorCode"] == 0, answer
    describe = {
        "Resources": [
            {
                "ResourceType": 32,
                "ResourceName": name,
                "ConfigurationKeys": ["consumer.session.timeout.ms"],
            }
        ],
        "IncludeSynonyms": False,
        "IncludeDocumentation": False,
    }
    for address in (b1, b2, b3):
        (entry,) = call(address, ApiKey.DESCRIBE_CONFIGS, 4, describe)["Results"][0]["Configs"]
        assert (entry["Value"], entry["ConfigSource"]) == ("50000", 8)
    if zk_mode(shared_cluster):
        assert zk_get(shared_cluster, f"/config/groups/{name}") == {
            "version": 1,
            "config": {"consumer.session.timeout.ms": "50000"},
        }


def test_forwarded_client_quotas_are_described_by_every_broker(shared_cluster: Cluster) -> None:
    user = unique("user")
    entity = [{"EntityType": "user", "EntityName": user}]
    answer = call(
        shared_cluster.broker_address(shared_cluster.nodes["broker-1"]),
        ApiKey.ALTER_CLIENT_QUOTAS,
        1,
        {
            "Entries": [
                {
                    "Entity": entity,
                    "Ops": [{"Key": "producer_byte_rate", "Value": 1024.0, "Remove": False}],
                }
            ],
            "ValidateOnly": False,
        },
    )
    assert answer["Entries"][0]["ErrorCode"] == 0
    for broker in BROKERS:
        described = call(
            shared_cluster.broker_address(shared_cluster.nodes[broker]),
            ApiKey.DESCRIBE_CLIENT_QUOTAS,
            1,
            {
                "Components": [{"EntityType": "user", "MatchType": 0, "Match": user}],
                "Strict": False,
            },
        )
        assert described["ErrorCode"] == 0
        assert described["Entries"] == [
            {"Entity": entity, "Values": [{"Key": "producer_byte_rate", "Value": 1024.0}]}
        ]
    if zk_mode(shared_cluster):
        assert zk_get(shared_cluster, f"/config/users/{user}") == {
            "version": 1,
            "config": {"producer_byte_rate": "1024.0"},
        }


def _envelope(name: str, principal: str = "User:ANONYMOUS") -> dict:
    inner = encode_request(CODEC, ApiKey.CREATE_TOPICS, 7, 42, "client", topic_body(name, 1, 1))
    return {
        "RequestData": inner,
        "RequestPrincipal": serialize(principal),
        "ClientHostAddress": address_bytes("127.0.0.1:1"),
    }


def test_envelope_from_a_client_principal_is_refused(shared_cluster: Cluster) -> None:
    """KIP-590.R2: ClusterAction on CLUSTER is for broker principals; the inner request is not
    executed. From the broker principal the same Envelope is served; brokers do not expose it."""
    name = unique("env")
    controller = shared_cluster.controller_nodes()[0]
    external = ("127.0.0.1", controller.config.listener("EXTERNAL").port)
    refused = call(external, ApiKey.ENVELOPE, 0, _envelope(name))
    assert refused["ErrorCode"] == 31 and refused["ResponseData"] is None
    assert all(t is None for t in _topic_everywhere(shared_cluster, name).values())
    samples = scrape(controller.config.metrics_port)
    key = (
        "kafka_controller_envelope_requests_total",
        frozenset({("result", "cluster_authorization_failed")}),
    )
    assert samples[key] >= 1

    served = call(controller_address(shared_cluster), ApiKey.ENVELOPE, 0, _envelope(name))
    assert served["ErrorCode"] == 0
    from conformance.protocol.framing import decode_response

    header, inner = decode_response(CODEC, ApiKey.CREATE_TOPICS, 7, served["ResponseData"])
    assert header["CorrelationId"] == 42 and inner["Topics"][0]["ErrorCode"] == 0
    assert ApiKey.ENVELOPE not in api_versions(
        shared_cluster.broker_address(shared_cluster.nodes["broker-1"])
    )


@pytest.mark.parametrize(
    ("api_key", "version", "body"),
    [
        (
            ApiKey.UPDATE_METADATA,
            8,
            {
                "ControllerId": 0,
                "ControllerEpoch": 999,
                "BrokerEpoch": 1,
                "LiveBrokers": [],
                "TopicStates": [],
            },
        ),
        (
            ApiKey.LEADER_AND_ISR,
            7,
            {
                "ControllerId": 0,
                "ControllerEpoch": 999,
                "BrokerEpoch": 1,
                "TopicStates": [],
                "LiveLeaders": [],
            },
        ),
        (
            ApiKey.STOP_REPLICA,
            4,
            {"ControllerId": 0, "ControllerEpoch": 999, "BrokerEpoch": 1, "TopicStates": []},
        ),
    ],
    ids=["UpdateMetadata", "LeaderAndIsr", "StopReplica"],
)
def test_controller_rpcs_from_a_client_are_refused(
    shared_cluster: Cluster, api_key: int, version: int, body: dict
) -> None:
    address = shared_cluster.broker_address(shared_cluster.nodes["broker-2"])
    assert call(address, api_key, version, body)["ErrorCode"] == 31
    assert len(metadata(shared_cluster, "broker-2")["Brokers"]) == 3


def test_unknown_topics_are_created_on_request_only(shared_cluster: Cluster) -> None:
    name = unique("auto")
    body = {
        "Topics": [{"TopicId": uuid.UUID(int=0), "Name": name}],
        "AllowAutoTopicCreation": False,
        "IncludeTopicAuthorizedOperations": False,
    }
    address = shared_cluster.broker_address(shared_cluster.nodes["broker-3"])
    assert call(address, ApiKey.METADATA, 12, body)["Topics"][0]["ErrorCode"] == 3
    body["AllowAutoTopicCreation"] = True
    assert call(address, ApiKey.METADATA, 12, body)["Topics"][0]["ErrorCode"] in (0, 5)
    wait_until(lambda: all(t is not None for t in _topic_everywhere(shared_cluster, name).values()))


def test_a_mutation_is_visible_from_every_broker_quickly(shared_cluster: Cluster) -> None:
    """Measured: from sending CreateTopics to a broker until all three list the topic."""
    samples = []
    for _ in range(5):
        name = unique("vis")
        start = time.monotonic()
        call(
            shared_cluster.broker_address(shared_cluster.nodes["broker-2"]),
            ApiKey.CREATE_TOPICS,
            7,
            topic_body(name, 1, 1),
        )
        wait_until(
            lambda n=name: all(
                t is not None for t in _topic_everywhere(shared_cluster, n).values()
            ),
            interval=0.005,
        )
        samples.append(time.monotonic() - start)
    print(
        f"mutation visible everywhere ({shared_cluster.metadata_store.split(':')[0]}): "
        f"median {sorted(samples)[2] * 1000:.0f} ms, max {max(samples) * 1000:.0f} ms"
    )
    assert max(samples) < 2.0


def test_the_start_time_tag_is_the_one_kip536_json_documents() -> None:
    root = Path(__file__).resolve().parents[3]
    wire = json.loads((root / "specs/requirements/kip-536.json").read_text())["wire"]
    assert wire["tag"] == extensions.START_TIME_TAG
    assert {c["api_key"] for c in wire["carriers"]} == {3, 60, 6, 62}


def test_concurrent_creates_of_one_topic_create_it_once(shared_cluster: Cluster) -> None:
    """Three brokers forward CreateTopics for the same name at once: one wins, the others are
    told TOPIC_ALREADY_EXISTS, and the topic keeps the winner's id everywhere."""
    name = unique("race")

    async def race() -> list[dict]:
        addresses = [shared_cluster.broker_address(shared_cluster.nodes[b]) for b in BROKERS]
        return await asyncio.gather(
            *(acall(h, p, ApiKey.CREATE_TOPICS, 7, topic_body(name, 3, 3)) for h, p in addresses)
        )

    answers = [r["Topics"][0] for r in run(race())]
    codes = sorted(a["ErrorCode"] for a in answers)
    assert codes == [0, 36, 36], answers
    winner = next(a["TopicId"] for a in answers if a["ErrorCode"] == 0)
    wait_until(lambda: all(t is not None for t in _topic_everywhere(shared_cluster, name).values()))
    ids = {t["TopicId"] for t in _topic_everywhere(shared_cluster, name).values()}
    assert ids == {winner}


def documented_scope() -> dict[int, str]:
    """The APIs ARCHITECTURE.md says the reference serves and advertises (``Name key`` pairs of
    its "Scope of APIs" section, from the sentence that introduces them)."""
    text = (Path(__file__).resolve().parents[3] / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Scope of APIs", 1)[1].split("\n## ", 1)[0]
    listed = section.split("The reference serves and advertises only what it implements", 1)[1]
    return {int(k): name for name, k in re.findall(r"\b([A-Z][A-Za-z]+) (\d+)\b", listed)}


def test_the_documented_scope_is_what_the_reference_advertises(shared_cluster: Cluster) -> None:
    """ARCHITECTURE.md's list of the reference's APIs is every key some listener of a broker or
    of the controller advertises in ApiVersions, named as the specs name it."""
    nodes = [shared_cluster.nodes["broker-1"], *shared_cluster.controller_nodes()[:1]]
    advertised = {
        key
        for node in nodes
        for listener in node.config.listeners
        for key in api_versions((listener.host, listener.port))
    }
    documented = documented_scope()
    assert documented == {k: ApiKey(k).api_name for k in documented}, "a key with a wrong name"
    assert sorted(documented) == sorted(advertised), (
        f"ARCHITECTURE.md omits {sorted(set(advertised) - set(documented))}, "
        f"lists {sorted(set(documented) - set(advertised))} the reference does not advertise"
    )
