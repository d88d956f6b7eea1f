"""Answers the differential run against Apache Kafka 4.4.0 showed the reference giving
differently (``kafka-conformance diff --target reference --target kafka:4.4.0``, issue 26), each
pinned here as Kafka gives it: topics listed with no partition, incremental fetch sessions,
ApiVersions' client software pattern, the cluster's authorized operations, refused
DescribeCluster and Metadata requests, OffsetFetch and OffsetDelete topics with no partition."""

from __future__ import annotations

import uuid
from pathlib import Path

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, ErrorCode
from tests.reference.data_plane import CODEC, fetch_body
from tests.reference.groups.test_handlers import Broker, call
from tests.reference.groups.test_handlers import run as run_groups
from tests.reference.handlers.test_produce_fetch import batch, produce, run, single

E = ErrorCode
TOKEN_BITS = (1 << 13) | (1 << 14)  # CREATE_TOKENS, DESCRIBE_TOKENS: a user's operations


def test_a_topic_listed_with_no_partition_is_not_answered(tmp_path: Path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            conn = await c.connect(1)
            empty = {"Name": "t", "Partitions": []}
            produce = {"Acks": -1, "TimeoutMs": 1000, "TopicData": [{"Name": "t"}]}
            answers = {
                "Produce": await conn.request(ApiKey.PRODUCE, 9, produce),
                "Fetch": await conn.request(
                    ApiKey.FETCH, 12, {**fetch_body("t", 0), "Topics": [{"Topic": "t"}]}
                ),
                "ListOffsets": await conn.request(
                    ApiKey.LIST_OFFSETS, 7, {"ReplicaId": -1, "Topics": [empty]}
                ),
                "DeleteRecords": await conn.request(
                    ApiKey.DELETE_RECORDS, 2, {"Topics": [empty], "TimeoutMs": 1000}
                ),
            }
            lists = {"Produce": "Responses", "Fetch": "Responses"}
            for api, resp in answers.items():
                assert resp.body[lists.get(api, "Topics")] == [], (api, resp.body)
            await conn.close()
        finally:
            await c.stop()

    run(main())


def test_a_fetch_session_epoch_other_than_0_and_minus_1_names_an_unknown_session(
    tmp_path: Path,
) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            conn = await c.connect(1)
            for epoch, code in ((-250, E.FETCH_SESSION_ID_NOT_FOUND), (3, 70), (0, 0), (-1, 0)):
                body = {**fetch_body("t", 0), "SessionId": 7, "SessionEpoch": epoch}
                resp = await conn.request(ApiKey.FETCH, 12, body)
                assert resp.body["ErrorCode"] == code, epoch
                assert resp.body["SessionId"] == 0
            await conn.close()
        finally:
            await c.stop()

    run(main())


def test_api_versions_v3_refuses_client_software_outside_kip_511s_pattern(tmp_path) -> None:
    async def main():
        c = await single(tmp_path)
        try:
            conn = await c.connect(1)
            for name, version, code in (
                ("kafka-conformance", "0.1.0", 0),
                ("", "", E.INVALID_REQUEST),
                ("a b", "1", E.INVALID_REQUEST),
                ("ok", "-1", E.INVALID_REQUEST),
            ):
                body = {"ClientSoftwareName": name, "ClientSoftwareVersion": version}
                resp = await conn.request(ApiKey.API_VERSIONS, 3, body)
                assert resp.body["ErrorCode"] == code, (name, version)
                assert bool(resp.body["ApiKeys"]) == (code == 0)
            await conn.close()
        finally:
            await c.stop()

    run(main())


def test_cluster_operations_refusals_and_topic_ids_before_v12_as_kafka(shared_cluster) -> None:
    async def main():
        host, port = shared_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conn = await Connection.open(host, int(port), codec=CODEC)
        try:
            meta = await conn.request(
                ApiKey.METADATA,
                8,
                {"Topics": [], "IncludeClusterAuthorizedOperations": True},
            )
            ops = meta.body["ClusterAuthorizedOperations"]
            assert ops > 0 and not ops & TOKEN_BITS
            described = await conn.request(
                ApiKey.DESCRIBE_CLUSTER, 1, {"IncludeClusterAuthorizedOperations": True}
            )
            assert described.body["ClusterAuthorizedOperations"] == ops
            refused = await conn.request(ApiKey.DESCRIBE_CLUSTER, 1, {"EndpointType": 82})
            assert refused.body["ErrorCode"] == E.UNSUPPORTED_ENDPOINT_TYPE
            assert (refused.body["EndpointType"], refused.body["ClusterId"]) == (1, "")
            some_id = uuid.UUID(int=5)
            v10 = await conn.request(
                ApiKey.METADATA, 10, {"Topics": [{"Name": "t", "TopicId": some_id}]}
            )
            assert [(t["Name"], t["ErrorCode"], t["TopicId"]) for t in v10.body["Topics"]] == [
                ("t", E.INVALID_REQUEST, some_id)
            ]
            assert (v10.body["Brokers"], v10.body["ClusterId"], v10.body["ControllerId"]) == (
                [],
                None,
                -1,
            )
            nameless = {"Topics": [{"Name": None, "TopicId": uuid.UUID(int=0)}]}
            v12 = await conn.request(ApiKey.METADATA, 12, nameless)
            assert (v12.body["Topics"], v12.body["Brokers"]) == ([], [])
            named = await conn.request(
                ApiKey.METADATA, 12, {"Topics": [{"Name": "nope"}], "AllowAutoTopicCreation": False}
            )
            assert named.body["Topics"][0]["ErrorCode"] == E.UNKNOWN_TOPIC_OR_PARTITION
            assert named.body["Brokers"]
        finally:
            await conn.close()

    run(main())


def test_offset_fetch_and_delete_answer_a_topic_asked_for_with_no_partition() -> None:
    async def test(broker: Broker) -> None:
        conn = await broker.connect()
        one = {"GroupId": "g", "Topics": [{"Name": "t", "PartitionIndexes": []}]}
        assert (await call(conn, ApiKey.OFFSET_FETCH, 1, one))["Topics"] == [
            {"Name": "t", "Partitions": []}
        ]
        groups = {"Groups": [{"GroupId": "g", "Topics": [{"Name": "t", "PartitionIndexes": []}]}]}
        got = (await call(conn, ApiKey.OFFSET_FETCH, 8, groups))["Groups"][0]["Topics"]
        assert [(t["Name"], t["Partitions"]) for t in got] == [("t", [])]
        await call(
            conn,
            ApiKey.OFFSET_COMMIT,
            2,
            {
                "GroupId": "g",
                "GenerationIdOrMemberEpoch": -1,
                "Topics": [
                    {"Name": "t", "Partitions": [{"PartitionIndex": 0, "CommittedOffset": 1}]}
                ],
            },
        )
        deleted = await call(
            conn,
            ApiKey.OFFSET_DELETE,
            0,
            {"GroupId": "g", "Topics": [{"Name": "t", "Partitions": []}]},
        )
        assert deleted["ErrorCode"] == 0
        assert [(t["Name"], t["Partitions"]) for t in deleted["Topics"]] == [("t", [])]

    run_groups(test)


def test_list_offsets_refuses_a_negative_timestamp_its_version_gives_no_meaning(tmp_path):
    async def main():
        c = await single(tmp_path)
        try:
            conn = await c.connect(1)
            for version, ts, code in (
                (1, -15201, E.UNSUPPORTED_VERSION),
                (1, -3, E.UNSUPPORTED_VERSION),
                (7, -3, 0),
                (1, -2, 0),
                (1, 3056, 0),
                (10, -6, E.UNSUPPORTED_VERSION),  # KIP-1023's earliest pending upload: v11+
                (11, -6, 0),
            ):
                for topic, absent in (("t", 0), ("missing", E.UNKNOWN_TOPIC_OR_PARTITION)):
                    part = {"PartitionIndex": 0, "Timestamp": ts}
                    body = {"ReplicaId": -1, "Topics": [{"Name": topic, "Partitions": [part]}]}
                    resp = await conn.request(ApiKey.LIST_OFFSETS, version, body)
                    answer = resp.body["Topics"][0]["Partitions"][0]
                    assert answer["ErrorCode"] == (code or absent), (version, ts, topic)
                    if ts == -6 and not code and not absent:  # no tiered storage: nothing
                        assert (answer["Offset"], answer["Timestamp"]) == (-1, -1), answer
            await conn.close()
        finally:
            await c.stop()

    run(main())


def test_a_fetch_out_of_range_answers_no_offsets(tmp_path: Path) -> None:
    """Kafka answers a partition whose read failed with -1 for its high watermark, last stable
    offset and log start (diff --models, log partition model, issue 26)."""

    async def main():
        c = await single(tmp_path)
        try:
            await produce(c, batch(b"x"))
            conn = await c.connect(1)
            resp = await conn.request(ApiKey.FETCH, 12, fetch_body("t", 5))
            part = resp.body["Responses"][0]["Partitions"][0]
            got = [
                part[k]
                for k in ("ErrorCode", "HighWatermark", "LastStableOffset", "LogStartOffset")
            ]
            assert got == [E.OFFSET_OUT_OF_RANGE, -1, -1, -1]
            resp = await conn.request(ApiKey.FETCH, 12, fetch_body("t", 0))
            part = resp.body["Responses"][0]["Partitions"][0]
            assert (part["HighWatermark"], part["LogStartOffset"]) == (1, 0), "read: filled in"
            await conn.close()
        finally:
            await c.stop()

    run(main())


def test_admin_refusals_in_kafkas_order(shared_cluster) -> None:
    """Config checks before the topic's existence, entity types of quota filters, DeleteTopics
    naming no topic, and the topic id of a validate-only CreateTopics."""

    async def main():
        host, port = shared_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conn = await Connection.open(host, int(port), codec=CODEC)
        try:
            for configs, code in (
                ([{"Name": "", "Value": ""}], E.INVALID_CONFIG),
                ([{"Name": "retention.ms", "Value": None}], E.INVALID_REQUEST),
                ([{"Name": "retention.ms", "Value": "1000"}], E.UNKNOWN_TOPIC_OR_PARTITION),
            ):
                resource = {"ResourceType": 2, "ResourceName": "nowhere", "Configs": configs}
                body = {"Resources": [resource], "ValidateOnly": True}
                resp = await conn.request(ApiKey.ALTER_CONFIGS, 1, body)
                assert resp.body["Responses"][0]["ErrorCode"] == code, configs
            for entity_type, code in (("", E.INVALID_REQUEST), ("n", E.UNSUPPORTED_VERSION)):
                component = {"EntityType": entity_type, "MatchType": 0, "Match": "x"}
                body = {"Components": [component], "Strict": False}
                resp = await conn.request(ApiKey.DESCRIBE_CLIENT_QUOTAS, 1, body)
                assert resp.body["ErrorCode"] == code, entity_type
            nothing = {"Topics": [{"Name": None, "TopicId": uuid.UUID(int=0)}], "TimeoutMs": 1000}
            resp = await conn.request(ApiKey.DELETE_TOPICS, 6, nothing)
            assert resp.body["Responses"][0]["ErrorCode"] == E.INVALID_REQUEST
            topic = {"Name": "validated", "NumPartitions": 1, "ReplicationFactor": 1}
            body = {"Topics": [topic], "timeoutMs": 5000, "validateOnly": True}
            resp = await conn.request(ApiKey.CREATE_TOPICS, 7, body)
            answer = resp.body["Topics"][0]
            assert answer["ErrorCode"] == 0 and answer["TopicId"] != uuid.UUID(int=0)
        finally:
            await conn.close()

    run(main())


def test_entries_naming_one_thing_twice_are_answered_once(shared_cluster) -> None:
    """Kafka reads these requests into maps: DeleteRecords by topic-partition (a topic given
    twice answered once), AddPartitionsToTxn's refused partitions by partition (a topic with
    none left out, but listed when the coordinator answers), AlterClientQuotas by entity (a
    repeated one INVALID_REQUEST, answered once)."""

    async def main():
        host, port = shared_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)
        conn = await Connection.open(host, int(port), codec=CODEC)
        try:
            twice = [
                {"Name": "nowhere", "Partitions": [{"PartitionIndex": i, "Offset": 0}]}
                for i in (0, 1)
            ]
            resp = await conn.request(ApiKey.DELETE_RECORDS, 2, {"Topics": twice, "TimeoutMs": 0})
            assert [
                (t["Name"], [p["PartitionIndex"] for p in t["Partitions"]])
                for t in resp.body["Topics"]
            ] == [("nowhere", [0, 1])], resp.body
            body = {
                "V3AndBelowTransactionalId": "kc-parity",
                "V3AndBelowProducerId": 1,
                "V3AndBelowProducerEpoch": 0,
                "V3AndBelowTopics": [
                    {"Name": "none", "Partitions": []},
                    {"Name": "nowhere", "Partitions": [0]},
                ],
            }
            resp = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, body)
            names = [t["Name"] for t in resp.body["ResultsByTopicV3AndBelow"]]
            assert names == ["nowhere"], resp.body  # a partition refused: by partition
            body["V3AndBelowTopics"] = body["V3AndBelowTopics"][:1]
            resp = await conn.request(ApiKey.ADD_PARTITIONS_TO_TXN, 3, body)
            names = [t["Name"] for t in resp.body["ResultsByTopicV3AndBelow"]]
            assert names == ["none"], resp.body  # the coordinator's answer: by request
            user, client = (
                {"EntityType": "user", "EntityName": "u"},
                {
                    "EntityType": "client-id",
                    "EntityName": "c",
                },
            )
            op = {"Key": "producer_byte_rate", "Value": 1024.0, "Remove": False}
            entries = [
                {"Entity": [], "Ops": []},
                {"Entity": [], "Ops": []},
                {"Entity": [user, client], "Ops": [op]},
                {"Entity": [client, user], "Ops": [op]},
            ]
            body = {"Entries": entries, "ValidateOnly": True}
            resp = await conn.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, body)
            answered = [(len(e["Entity"]), e["ErrorCode"]) for e in resp.body["Entries"]]
            assert answered == [(0, E.INVALID_REQUEST), (2, E.INVALID_REQUEST)], resp.body
        finally:
            await conn.close()

    run(main())
