"""A secured reference cluster: SASL on every listener, the ACL authorizer, broker principals.

Every listener (client, inter-broker, controller) is SASL_PLAINTEXT; nodes authenticate to each
other as ``User:broker`` (SCRAM-SHA-256), ``User:admin`` is a super user, ``alice`` and ``bob``
are ordinary users. Real clients (kafka-python, confluent-kafka) authenticate with PLAIN and
SCRAM-SHA-256; ACLs created through one broker (forwarded to the controller) are seen by every
broker, and decide what alice may produce and which topics her Metadata shows. The cluster runs
in both metadata stores (ACLs are metadata: the embedded log, or ZooKeeper's /kafka-acl znodes).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from conformance.client.sasl import SaslAuthenticationError, open_authenticated
from conformance.client.wire import Connection, ConnectionClosed
from conformance.protocol import (
    AclOperation,
    AclPatternType,
    AclResourceType,
    ApiKey,
)
from conformance.protocol.framing import encode_request
from conformance.protocol.records.batch import build_batch, encode_batch
from conformance.suite.security.shared import acl_filter
from conformance.suite.security.shared import binding as acl
from reference_impl.launcher import Cluster
from reference_impl.principal import address_bytes, serialize
from tests.reference.control_plane import CODEC, STORES, new_cluster, run, topic_body

USERS = {
    "broker": "broker-secret",
    "admin": "admin-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
}
SECURITY = {
    "sasl_mechanisms": ["PLAIN", "SCRAM-SHA-256"],
    "users": USERS,
    "inter_node": {"mechanism": "SCRAM-SHA-256", "username": "broker", "password": "broker-secret"},
    "authorizer": "acl",
}
BROKERS = ("broker-1", "broker-2", "broker-3")


class SecuredCluster(Cluster):
    """The launcher's cluster with every listener SASL_PLAINTEXT; readiness asked as admin."""

    def secure(self) -> SecuredCluster:
        for node in self.nodes.values():
            for listener in node.config.listeners:
                listener.security_protocol = "SASL_PLAINTEXT"
            node.config.dump(node.config_path)
        return self

    async def _all_see(self, names: list[str], expected: set[int]) -> bool:
        for name in names:
            try:
                conn = await connect(self.broker_address(self.nodes[name]), "admin", timeout=1)
                async with conn:
                    resp = await conn.request(ApiKey.METADATA, 9, {"Topics": []}, timeout=1)
            except (OSError, ConnectionError, TimeoutError):
                return False
            if not expected <= {b["NodeId"] for b in resp.body["Brokers"]}:
                return False
        return True


async def connect(
    address: tuple[str, int], user: str, mechanism: str = "SCRAM-SHA-256", timeout: float = 5
) -> Connection:
    return await open_authenticated(
        address[0],
        address[1],
        codec=CODEC,
        mechanism=mechanism,
        username=user,
        password=USERS[user],
        timeout=timeout,
    )


def call(address: tuple[str, int], user: str, api_key: int, version: int, body: dict) -> dict:
    async def go() -> dict:
        async with await connect(address, user) as conn:
            return (await conn.request(api_key, version, body, timeout=20)).body

    return run(go())


@pytest.fixture(scope="module", params=STORES)
def cluster(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[SecuredCluster]:
    store = request.param
    zookeeper = request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    plain = new_cluster(
        tmp_path_factory.mktemp(f"secured-{store}"),
        store,
        zookeeper,
        overrides={"settings": {"security": SECURITY}, "super_users": ["User:admin"]},
        client_controller_listener=True,
    )
    secured = SecuredCluster(
        plain.data_dir,
        brokers=plain.brokers,
        metadata_store=plain.metadata_store,
        nodes=plain.nodes,
    ).secure()
    secured.start(timeout=60)
    try:
        yield secured
    finally:
        secured.stop()


def address(cluster: Cluster, name: str = "broker-1") -> tuple[str, int]:
    return cluster.broker_address(cluster.nodes[name])


def controller_external(cluster: Cluster) -> tuple[str, int]:
    return ("127.0.0.1", cluster.controller_nodes()[0].config.listener("EXTERNAL").port)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def described(cluster: Cluster, broker: str, principal: str) -> set[tuple]:
    body = call(
        address(cluster, broker), "admin", ApiKey.DESCRIBE_ACLS, 3, acl_filter(None, principal)
    )
    assert body["ErrorCode"] == 0, body
    return {
        (r["ResourceType"], r["ResourceName"], r["PatternType"], a["Operation"])
        for r in body["Resources"]
        for a in r["Acls"]
    }


def wait_for(check, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.05)


def create_topic(cluster: Cluster, name: str, rf: int = 3) -> None:
    body = call(address(cluster), "admin", ApiKey.CREATE_TOPICS, 7, topic_body(name, 1, rf))
    assert body["Topics"][0]["ErrorCode"] == 0, body
    assert wait_for(
        lambda: all(
            any(t["Name"] == name for t in metadata_as(cluster, "admin", b)["Topics"])
            for b in BROKERS
        )
    )


def metadata_as(cluster: Cluster, user: str, broker: str = "broker-1", topics=None) -> dict:
    return call(address(cluster, broker), user, ApiKey.METADATA, 12, {"Topics": topics})


def produce_as(cluster: Cluster, user: str, topic: str, acks: int = -1) -> int:
    """Produce one record to partition 0 through its leader; the partition's error code."""
    meta = metadata_as(cluster, "admin", topics=[{"Name": topic, "TopicId": uuid.UUID(int=0)}])
    leader = meta["Topics"][0]["Partitions"][0]["LeaderId"]
    records = encode_batch(build_batch([(int(time.time() * 1000), b"k", b"v")]))
    body = {
        "TransactionalId": None,
        "Acks": acks,
        "TimeoutMs": 10000,
        "TopicData": [{"Name": topic, "PartitionData": [{"Index": 0, "Records": records}]}],
    }
    resp = call(address(cluster, f"broker-{leader}"), user, ApiKey.PRODUCE, 9, body)
    return resp["Responses"][0]["PartitionResponses"][0]["ErrorCode"]


# --- authentication ----------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_kafka_python_authenticates_and_fails_with_wrong_password(
    cluster, mechanism, caplog
) -> None:
    from kafka import KafkaAdminClient
    from kafka.errors import KafkaError

    def admin(password: str) -> KafkaAdminClient:
        return KafkaAdminClient(
            bootstrap_servers=cluster.bootstrap_servers,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            sasl_plain_username="admin",
            sasl_plain_password=password,
            request_timeout_ms=5000,
            bootstrap_timeout_ms=2500,
        )

    client = admin("admin-secret")
    try:
        assert client.describe_cluster()["cluster_id"] == cluster.cluster_id
    finally:
        client.close()
    with pytest.raises(KafkaError):
        admin("wrong").close()
    failures = [r.getMessage() for r in caplog.records if "Error 58" in r.getMessage()]
    assert failures and all("SaslAuthenticationFailedError" in f for f in failures)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_confluent_kafka_authenticates_and_fails_with_wrong_password(cluster, mechanism) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    def admin(password: str, errors: list) -> AdminClient:
        return AdminClient(
            {
                "bootstrap.servers": cluster.bootstrap_servers,
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": mechanism,
                "sasl.username": "admin",
                "sasl.password": password,
                "error_cb": errors.append,
            }
        )

    errors: list = []
    good = admin("admin-secret", errors)
    described = good.describe_cluster(request_timeout=10).result()
    assert described.cluster_id == cluster.cluster_id and len(described.nodes) == 3
    assert errors == []
    errors = []
    bad = admin("wrong", errors)
    with pytest.raises(KafkaException):
        bad.describe_cluster(request_timeout=1).result()
    deadline = time.monotonic() + 10
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        assert time.monotonic() < deadline, errors
        bad.poll(0.1)  # error callbacks are served by poll


def test_wrong_password_is_answered_then_the_connection_closed(cluster) -> None:
    async def go():
        conn = await Connection.open(*address(cluster), codec=CODEC)
        try:
            from conformance.client.sasl import authenticate

            with pytest.raises(SaslAuthenticationError) as failure:
                await authenticate(conn, "PLAIN", "alice", "wrong")
            return failure.value.error_code, await conn.wait_closed_by_peer(5)
        finally:
            await conn.close()

    assert run(go()) == (58, True)


@pytest.mark.parametrize("listener", ["client", "controller"])
def test_nothing_is_served_before_authentication(cluster, listener) -> None:
    where = address(cluster) if listener == "client" else controller_external(cluster)

    async def go():
        async with await Connection.open(*where, codec=CODEC) as conn:
            with pytest.raises(ConnectionClosed):
                await conn.request(ApiKey.METADATA, 12, {"Topics": None}, timeout=5)

    run(go())


def test_replication_runs_between_authenticated_brokers(cluster) -> None:
    """acks=all on three replicas: the followers' fetches are authenticated broker principals."""
    name = unique("replicated")
    create_topic(cluster, name, rf=3)
    assert produce_as(cluster, "admin", name) == 0


# --- ACLs -------------------------------------------------------------------------------------


def test_acl_round_trip_through_brokers_is_seen_by_every_broker(cluster) -> None:
    name = unique("acl")
    principal = f"User:{unique('carol')}"
    created = call(
        address(cluster, "broker-1"),
        "admin",
        ApiKey.CREATE_ACLS,
        3,
        {
            "Creations": [
                acl(name, principal, AclOperation.READ),
                acl(name[:4], principal, AclOperation.WRITE, pattern=AclPatternType.PREFIXED),
            ]
        },
    )
    assert [r["ErrorCode"] for r in created["Results"]] == [0, 0]
    expected = {
        (AclResourceType.TOPIC, name, AclPatternType.LITERAL, AclOperation.READ),
        (AclResourceType.TOPIC, name[:4], AclPatternType.PREFIXED, AclOperation.WRITE),
    }
    for broker in BROKERS:
        assert wait_for(lambda b=broker: described(cluster, b, principal) == expected), broker
    deleted = call(
        address(cluster, "broker-2"),
        "admin",
        ApiKey.DELETE_ACLS,
        3,
        {"Filters": [acl_filter(name, principal)]},
    )
    matched = deleted["FilterResults"][0]["MatchingAcls"]
    assert [(m["ResourceName"], m["Operation"]) for m in matched] == [(name, AclOperation.READ)]
    remaining = {(AclResourceType.TOPIC, name[:4], AclPatternType.PREFIXED, AclOperation.WRITE)}
    for broker in BROKERS:
        assert wait_for(lambda b=broker: described(cluster, b, principal) == remaining), broker


def test_confluent_admin_client_creates_and_describes_acls(cluster) -> None:
    from confluent_kafka.admin import (
        AclBinding,
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        AdminClient,
        ResourcePatternType,
        ResourceType,
    )

    admin = AdminClient(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "admin",
            "sasl.password": "admin-secret",
        }
    )
    principal = f"User:{unique('dave')}"
    binding = AclBinding(
        ResourceType.GROUP,
        "readers",
        ResourcePatternType.PREFIXED,
        principal,
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    for future in admin.create_acls([binding]).values():
        future.result(timeout=10)
    flt = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        principal,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    found = wait_for(lambda: admin.describe_acls(flt).result(timeout=10))
    assert found == [binding]


def test_non_super_user_is_held_to_acls(cluster) -> None:
    """alice may write and describe one topic: Produce elsewhere is TOPIC_AUTHORIZATION_FAILED,
    Metadata of all topics shows only hers; a topic named explicitly is refused, not hidden."""
    mine, other = unique("alice-topic"), unique("other-topic")
    create_topic(cluster, mine)
    create_topic(cluster, other)
    created = call(
        address(cluster),
        "admin",
        ApiKey.CREATE_ACLS,
        3,
        {"Creations": [acl(mine, "User:alice", AclOperation.WRITE)]},
    )
    assert created["Results"][0]["ErrorCode"] == 0
    for broker in BROKERS:
        assert wait_for(
            lambda b=broker: (
                (AclResourceType.TOPIC, mine, AclPatternType.LITERAL, AclOperation.WRITE)
                in described(cluster, b, "User:alice")
            )
        )
    assert produce_as(cluster, "alice", mine) == 0
    assert produce_as(cluster, "alice", other) == 29
    assert produce_as(cluster, "bob", mine) == 29
    for broker in BROKERS:
        shown = {t["Name"] for t in metadata_as(cluster, "alice", broker)["Topics"]}
        assert mine in shown and other not in shown, (broker, shown)
    named = metadata_as(cluster, "alice", topics=[{"Name": other, "TopicId": uuid.UUID(int=0)}])
    assert named["Topics"][0]["ErrorCode"] == 29


def test_acl_mutations_are_authorised_as_the_forwarded_principal(cluster) -> None:
    """alice has no ALTER on CLUSTER: the controller, acting as the principal the Envelope
    carries, refuses her CreateAcls; DescribeAcls needs DESCRIBE on CLUSTER likewise."""
    body = {"Creations": [acl(unique("x"), "User:alice", AclOperation.READ)]}
    refused = call(address(cluster, "broker-3"), "alice", ApiKey.CREATE_ACLS, 3, body)
    assert [r["ErrorCode"] for r in refused["Results"]] == [31]
    described_body = call(address(cluster), "alice", ApiKey.DESCRIBE_ACLS, 3, acl_filter())
    assert described_body["ErrorCode"] == 31


def test_envelope_from_a_client_principal_is_refused(cluster) -> None:
    """KIP-590: only broker principals may send Envelope (ClusterAction on CLUSTER); the
    refused Envelope's inner request is not executed."""
    name = unique("envelope")
    inner = encode_request(CODEC, ApiKey.CREATE_TOPICS, 7, 7, "client", topic_body(name, 1, 1))
    envelope = {
        "RequestData": inner,
        "RequestPrincipal": serialize("User:admin"),
        "ClientHostAddress": address_bytes("127.0.0.1:1"),
    }

    def exists() -> bool:
        return any(t["Name"] == name for t in metadata_as(cluster, "admin")["Topics"])

    refused = call(controller_external(cluster), "alice", ApiKey.ENVELOPE, 0, envelope)
    assert refused == {"ResponseData": None, "ErrorCode": 31}
    time.sleep(0.3)
    assert not exists()
    served = call(controller_external(cluster), "broker", ApiKey.ENVELOPE, 0, envelope)
    assert served["ErrorCode"] == 0 and served["ResponseData"]
    assert wait_for(exists)
