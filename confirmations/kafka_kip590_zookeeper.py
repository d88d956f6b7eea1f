# ruff: noqa: E501 - the printed lines say what Kafka answers, in full
"""Hand confirmation on the wire: Apache Kafka 3.x in ZooKeeper mode does not forward admin
mutations (KIP-590.R1, R3, R4, R5), apart from the suite: the project's codec and wire client.

A broker that is not the controller (Metadata's ControllerId) answers CreateTopics,
CreatePartitions and DeleteTopics NOT_CONTROLLER itself, and applies IncrementalAlterConfigs
itself; an Envelope makes it close the connection. The controller broker serves them.

    .venv/bin/python -m confirmations.kafka_kip590_zookeeper 3.9.1
"""

import asyncio
import uuid

from confirmations.launch import each_version
from conformance.client.create_topics import create_body
from conformance.client.wire import Connection, ConnectionClosed
from conformance.protocol.codec import Codec
from conformance.protocol.framing import encode_request
from conformance.protocol.kafka_errors import error_name
from conformance.targets.kafka import KafkaTarget

METADATA, CREATE, DELETE, PARTITIONS, INCREMENTAL, DESCRIBE, ENVELOPE = 3, 19, 20, 37, 44, 32, 58


async def confirm(version: str, target: KafkaTarget) -> None:
    codec = Codec.from_specs().strict()
    conns = {}
    for ep in target.bootstrap:
        conns[ep] = await Connection.open(ep.host, ep.port, codec=codec)
    first = next(iter(conns.values()))
    md = (await first.request(METADATA, 12, {"Topics": None, "AllowAutoTopicCreation": False})).body
    controller = md["ControllerId"]
    by_id = {
        b["NodeId"]: next(c for ep, c in conns.items() if ep.port == b["Port"])
        for b in md["Brokers"]
    }
    print(
        f"== Apache Kafka {version}, ZooKeeper mode: brokers {sorted(by_id)}, Metadata's ControllerId {controller}"
    )
    versions = await first.api_versions()
    print(f"Envelope (58) advertised on the client listener: {58 in versions}")
    other = next(i for i in sorted(by_id) if i != controller)
    topic = f"kc-confirm-590-{uuid.uuid4().hex[:8]}"

    def one_topic(validate_only: bool) -> dict:
        return create_body({topic: 1}, timeout_ms=15000, validate_only=validate_only)

    for broker in sorted(by_id):
        b = (await by_id[broker].request(CREATE, 7, one_topic(True))).body
        role = "the controller" if broker == controller else "not the controller"
        print(
            f"R1 CreateTopics v7 (validate-only) to broker {broker} ({role}) -> {error_name(b['Topics'][0]['ErrorCode'])}"
        )
    b = (await by_id[other].request(CREATE, 7, one_topic(False))).body
    print(
        f"R1 CreateTopics v7 {topic} to broker {other} (not the controller) -> {error_name(b['Topics'][0]['ErrorCode'])}"
    )
    b = (await by_id[controller].request(CREATE, 7, one_topic(False))).body
    print(
        f"R1 CreateTopics v7 {topic} to broker {controller} (the controller) -> {error_name(b['Topics'][0]['ErrorCode'])}"
    )
    await asyncio.sleep(1.0)
    b = (await by_id[other].request(CREATE, 7, one_topic(False))).body
    print(
        f"R3 CreateTopics v7 of the existing {topic} to broker {other} (not the controller) -> {error_name(b['Topics'][0]['ErrorCode'])} (the controller would say TOPIC_ALREADY_EXISTS)"
    )
    body = {
        "Topics": [{"Name": topic, "Count": 2, "Assignments": None}],
        "TimeoutMs": 15000,
        "ValidateOnly": False,
    }
    b = (await by_id[other].request(PARTITIONS, 3, body)).body
    print(
        f"R1 CreatePartitions v3 (to 2) to broker {other} -> {error_name(b['Results'][0]['ErrorCode'])}"
    )
    alter = {
        "Resources": [
            {
                "ResourceType": 2,
                "ResourceName": topic,
                "Configs": [{"Name": "retention.ms", "ConfigOperation": 0, "Value": "7200000"}],
            }
        ],
        "ValidateOnly": False,
    }
    b = (await by_id[other].request(INCREMENTAL, 1, alter)).body
    print(
        f"R1/R4 IncrementalAlterConfigs v1 retention.ms=7200000 to broker {other} (not the controller) -> {error_name(b['Responses'][0]['ErrorCode'])}"
    )
    await asyncio.sleep(1.0)
    describe = {
        "Resources": [
            {"ResourceType": 2, "ResourceName": topic, "ConfigurationKeys": ["retention.ms"]}
        ],
        "IncludeSynonyms": False,
        "IncludeDocumentation": False,
    }
    b = (await by_id[controller].request(DESCRIBE, 4, describe)).body
    print(
        f"   DescribeConfigs at the controller broker {controller}: retention.ms = {b['Results'][0]['Configs'][0]['Value']}"
    )
    inner = encode_request(codec, CREATE, 7, 1, "kc-confirm", one_topic(True))
    envelope = {
        "RequestData": inner,
        "RequestPrincipal": b"",
        "ClientHostAddress": bytes([127, 0, 0, 1]),
    }
    for broker in (other, controller):
        ep = next(ep for ep, c in conns.items() if c is by_id[broker])
        c = await Connection.open(ep.host, ep.port, codec=codec)
        try:
            b = (await asyncio.wait_for(c.request(ENVELOPE, 0, envelope), 10)).body
            print(f"R2/R5 Envelope v0 to broker {broker} -> {error_name(b['ErrorCode'])}")
        except (ConnectionClosed, ConnectionError) as e:
            print(f"R2/R5 Envelope v0 to broker {broker} -> connection closed ({type(e).__name__})")
        except TimeoutError:
            print(f"R2/R5 Envelope v0 to broker {broker} -> no answer in 10 s")
        await c.close()
    body = {
        "TopicNames": [topic],
        "Topics": [{"Name": topic, "TopicId": uuid.UUID(int=0)}],
        "TimeoutMs": 15000,
    }
    b = (await by_id[other].request(DELETE, 6, body)).body
    print(f"R1 DeleteTopics v6 to broker {other} -> {error_name(b['Responses'][0]['ErrorCode'])}")
    b = (await by_id[controller].request(DELETE, 6, body)).body
    print(
        f"R1 DeleteTopics v6 to broker {controller} (the controller) -> {error_name(b['Responses'][0]['ErrorCode'])}"
    )
    for c in conns.values():
        await c.close()


if __name__ == "__main__":
    each_version(confirm, "?store=zookeeper")
