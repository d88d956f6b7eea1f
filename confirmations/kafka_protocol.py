"""Hand confirmation, on the wire, of Apache Kafka's answers behind the PROTOCOL verdicts that
are not PASS (not the suite: raw requests with the project's codec and wire client, against
released brokers started as the kafka target starts them).

Usage: python -m confirmations.kafka_protocol 3.9.1 '3.9.1?store=zookeeper' 4.0.2 4.4.0
"""

import uuid

from confirmations.launch import each_target
from conformance.client.wire import Connection, ConnectionClosed
from conformance.protocol.codec import Codec

METADATA, OFFSET_FETCH, API_VERSIONS, ADD_PARTITIONS = 3, 9, 18, 24
DESCRIBE_ACLS, GET_TELEMETRY, PUSH_TELEMETRY = 29, 71, 72
WRITE_TXN_MARKERS, PRODUCE = 27, 0
WAIT = 10.0


async def ask(codec, ep, key, version, body, timeout=WAIT):
    """What one request on a fresh connection gets: the answer, 'closed' or 'no answer'."""
    conn = await Connection.open(ep.host, ep.port, codec=codec)
    try:
        resp = await conn.request(key, version, body, timeout=timeout)
        return resp.body
    except ConnectionClosed:
        return "the connection was closed"
    except TimeoutError:
        return f"no answer within {timeout:.0f} s, the connection still open: {not conn.closed}"
    finally:
        await conn.close()


def show(what, got):
    print(f"  {what}:\n    {got}")


async def probe(target):
    codec = Codec.from_specs().strict()
    ep = target.bootstrap[0]
    conn = await Connection.open(ep.host, ep.port, codec=codec)
    advertised = await conn.api_versions()
    await conn.close()
    print(f"Apache Kafka {target.version} ({target.store}), broker {ep.host}:{ep.port}")
    for key in (OFFSET_FETCH, ADD_PARTITIONS, DESCRIBE_ACLS, GET_TELEMETRY, PUSH_TELEMETRY):
        print(f"  ApiVersions lists api key {key}: {advertised.get(key, 'not advertised')}")

    print(
        "PROTOCOL.R9: OffsetFetch v8+ naming no group, AddPartitionsToTxn v4+ naming no transaction"
    )
    for v in range(
        8,
        min(advertised[OFFSET_FETCH][1], codec.message(OFFSET_FETCH, "request").valid_versions.hi)
        + 1,
    ):
        show(
            f"OffsetFetch v{v} Groups=[]",
            await ask(codec, ep, OFFSET_FETCH, v, {"Groups": [], "RequireStable": False}),
        )
    one_group = {
        "Groups": [
            {"GroupId": "kc-suite-conf", "MemberId": None, "MemberEpoch": -1, "Topics": None}
        ],
        "RequireStable": False,
    }
    show(
        "OffsetFetch v9 with one group (the control)",
        await ask(codec, ep, OFFSET_FETCH, 9, one_group),
    )
    for v in range(
        4,
        min(
            advertised[ADD_PARTITIONS][1],
            codec.message(ADD_PARTITIONS, "request").valid_versions.hi,
        )
        + 1,
    ):
        show(
            f"AddPartitionsToTxn v{v} Transactions=[]",
            await ask(codec, ep, ADD_PARTITIONS, v, {"Transactions": []}),
        )
    one_txn = {
        "Transactions": [
            {
                "TransactionalId": "kc-suite-conf",
                "ProducerId": 1,
                "ProducerEpoch": 0,
                "VerifyOnly": True,
                "Topics": [{"Name": "kc-suite-none", "Partitions": [0]}],
            }
        ]
    }
    show(
        "AddPartitionsToTxn v4 with one transaction (the control)",
        await ask(codec, ep, ADD_PARTITIONS, 4, one_txn),
    )

    print("PROTOCOL.R9: Produce below v3, advertised or not")
    print(f"  ApiVersions lists Produce: {advertised[PRODUCE]}")
    produce = {
        "Acks": -1,
        "TimeoutMs": 1000,
        "TopicData": [{"Name": "kc-suite-conf", "PartitionData": [{"Index": 0, "Records": b""}]}],
    }
    show("Produce v0, one partition, no records", await ask(codec, ep, PRODUCE, 0, produce))

    print("PROTOCOL.R9/R10 (ACL APIs): a filter naming UNKNOWN (0) enum values, then defined ones")
    acl = {
        "ResourceTypeFilter": 0,
        "ResourceNameFilter": "kc-suite-conf",
        "PatternTypeFilter": 3,
        "PrincipalFilter": None,
        "HostFilter": None,
        "Operation": 0,
        "PermissionType": 0,
    }
    for what, changes in (
        ("resource type, operation, permission UNKNOWN (0)", {}),
        (
            "resource type TOPIC (2), operation ANY (1), permission ANY (1)",
            {"ResourceTypeFilter": 2},
        ),
        (
            "resource type 99 (no such type), operation ANY, permission ANY",
            {"ResourceTypeFilter": 99},
        ),
    ):
        defined = {"Operation": 1, "PermissionType": 1} if changes else {}
        body = {**acl, **changes, **defined}
        show(f"DescribeAcls v3, {what}", await ask(codec, ep, DESCRIBE_ACLS, 3, body))

    print("PROTOCOL.R4: WriteTxnMarkers v1, one marker for a topic that does not exist")
    marker = {
        "ProducerId": 9223372036854775806,
        "ProducerEpoch": 0,
        "TransactionResult": False,
        "Topics": [{"Name": "kc-suite-no-such-topic", "PartitionIndexes": [0]}],
        "CoordinatorEpoch": 0,
    }
    show("WriteTxnMarkers v1", await ask(codec, ep, WRITE_TXN_MARKERS, 1, {"Markers": [marker]}))

    print("PROTOCOL.R11: the client-telemetry APIs (KIP-714), advertised or not")
    show(
        "GetTelemetrySubscriptions v0",
        await ask(codec, ep, GET_TELEMETRY, 0, {"ClientInstanceId": uuid.UUID(int=0)}),
    )

    print("PROTOCOL.R12: Metadata v12 with no topics, asked ten times on one connection")
    conn = await Connection.open(ep.host, ep.port, codec=codec)
    ids = []
    for _ in range(10):
        body = (
            await conn.request(
                METADATA,
                12,
                {
                    "Topics": [],
                    "AllowAutoTopicCreation": False,
                    "IncludeTopicAuthorizedOperations": False,
                },
            )
        ).body
        ids.append(body["ControllerId"])
    await conn.close()
    show("ControllerId of each answer", ids)


if __name__ == "__main__":
    each_target(probe)
