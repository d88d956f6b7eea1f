"""The per-API authorisation gate (``security/authorize.py``) on fake nodes, in process.

It must record the client host for ACL host matching, skip forwarded APIs on brokers (the
controller authorises them as the Envelope's principal), and apply Kafka's rules for the APIs
whose handlers do not: the ACL APIs, InitProducerId, transactional Produce.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from conformance.protocol import ApiKey, Codec
from conformance.protocol.records.batch import build_batch, encode_batch
from reference_impl.net.listener import Api, RequestContext, Session
from reference_impl.security.acl import AclAuthorizer, AclBinding, AclOperation
from reference_impl.security.authorize import gated

CODEC = Codec.from_specs()


class FakeNode:
    """A node whose authorizer is an ACL authorizer over fixed bindings (host-aware)."""

    def __init__(self, role: str, bindings: list[AclBinding]) -> None:
        self.role = role
        self.codec = CODEC
        self.acl = AclAuthorizer(bindings)
        self.authorizer = self
        self.asked: list[tuple] = []

    def authorize(self, session: Session, operation: str, resource: tuple[str, str]) -> bool:
        host = session.state.get("host", "")
        self.asked.append((session.principal, host, operation, resource))
        return self.acl.authorize(session.principal, host, operation, *resource)

    def authorize_any(self, session: Session, operation: str, rtype: str) -> bool:
        return self.acl.authorize_any(session.principal, session.state["host"], operation, rtype)


def allow(rtype: str, name: str, op: str, host: str = "*") -> AclBinding:
    from reference_impl.security import acl

    return AclBinding(
        acl.resource_type(rtype),
        name,
        acl.AclPatternType.LITERAL,
        "User:alice",
        host,
        AclOperation[op],
        acl.AclPermissionType.ALLOW,
    )


def serve(node: FakeNode, key: int, version: int, body: dict) -> tuple[Any, list]:
    called: list[dict] = []

    async def handler(ctx: RequestContext, b: dict) -> dict:
        called.append(b)
        return {"ok": True}

    api = gated(node, Api(key, handler))
    ctx = RequestContext(None, key, version, {}, Session("User:alice"), "10.1.2.3:5555")  # type: ignore[arg-type]
    return asyncio.run(api.handler(ctx, body)), called


def test_the_client_host_decides_host_bound_acls() -> None:
    body = {
        "ResourceTypeFilter": 1,
        "ResourceNameFilter": None,
        "PatternTypeFilter": 1,
        "PrincipalFilter": None,
        "HostFilter": None,
        "Operation": 1,
        "PermissionType": 1,
    }
    here = FakeNode("broker", [allow("CLUSTER", "kafka-cluster", "DESCRIBE", "10.1.2.3")])
    elsewhere = FakeNode("broker", [allow("CLUSTER", "kafka-cluster", "DESCRIBE", "10.9.9.9")])
    assert serve(here, 29, 3, body)[0] == {"ok": True}
    answer, called = serve(elsewhere, 29, 3, body)
    assert answer["ErrorCode"] == 31 and not called
    assert here.asked[0][1] == "10.1.2.3"


@pytest.mark.parametrize("key", [30, 31])
def test_forwarded_acl_mutations_are_checked_on_the_controller_only(key) -> None:
    body = {"Creations": [{}]} if key == ApiKey.CREATE_ACLS else {"Filters": [{}]}
    answer, called = serve(FakeNode("broker", []), key, 3, body)
    assert answer == {"ok": True} and called
    answer, called = serve(FakeNode("controller", []), key, 3, body)
    results = answer["Results"] if key == ApiKey.CREATE_ACLS else answer["FilterResults"]
    assert [r["ErrorCode"] for r in results] == [31] and not called
    granted = FakeNode("controller", [allow("CLUSTER", "kafka-cluster", "ALTER")])
    assert serve(granted, key, 3, body)[0] == {"ok": True}


@pytest.mark.parametrize(
    ("bindings", "tid", "code"),
    [
        ([allow("TOPIC", "t", "WRITE")], None, None),
        ([allow("CLUSTER", "kafka-cluster", "IDEMPOTENT_WRITE")], None, None),
        ([allow("TOPIC", "t", "READ")], None, 31),
        ([allow("TOPIC", "t", "WRITE")], "tx", 53),
        ([allow("TRANSACTIONAL_ID", "tx", "WRITE")], "tx", None),
    ],
)
def test_init_producer_id(bindings, tid, code) -> None:
    body = {
        "TransactionalId": tid,
        "TransactionTimeoutMs": 1000,
        "ProducerId": -1,
        "ProducerEpoch": -1,
    }
    answer, called = serve(FakeNode("broker", bindings), 22, 4, body)
    if code is None:
        assert answer == {"ok": True} and called
    else:
        assert answer["ErrorCode"] == code and not called


@pytest.mark.parametrize("transactional", [False, True])
@pytest.mark.parametrize("acks", [0, -1])
def test_transactional_produce_needs_write_on_the_transactional_id(transactional, acks) -> None:
    batch = build_batch([(0, b"k", b"v")], is_transactional=transactional, producer_id=7)
    body = {
        "TransactionalId": None,
        "Acks": acks,
        "TimeoutMs": 1000,
        "TopicData": [
            {"Name": "t", "PartitionData": [{"Index": 0, "Records": encode_batch(batch)}]}
        ],
    }
    answer, called = serve(FakeNode("broker", [allow("TOPIC", "t", "WRITE")]), 0, 9, body)
    if not transactional:
        assert answer == {"ok": True} and called
    elif acks == 0:
        assert repr(answer) == "CLOSE" and not called
    else:
        codes = [p["ErrorCode"] for t in answer["Responses"] for p in t["PartitionResponses"]]
        assert codes == [53] and not called


def test_a_refused_envelope_is_an_unknown_server_error_for_the_client() -> None:
    """KIP-590: CLUSTER_AUTHORIZATION_FAILED on the Envelope is the cluster's set-up failing,
    not the client: the forwarding broker answers UNKNOWN_SERVER_ERROR (-1)."""
    from types import SimpleNamespace
    from unittest.mock import MagicMock

    from reference_impl.broker.forwarding import Forwarder

    sent: list[tuple] = []

    async def request(api_key, body, timeout):
        sent.append((api_key, body["RequestPrincipal"]))
        return SimpleNamespace(body={"ErrorCode": 31, "ResponseData": None})

    broker = SimpleNamespace(
        codec=CODEC,
        metrics=MagicMock(),
        config=SimpleNamespace(request_timeout_ms=1000),
        controller_channel=SimpleNamespace(request=request),
    )
    ctx = RequestContext(None, 30, 3, {}, Session("User:alice"), "10.1.2.3:5555", b"raw")  # type: ignore[arg-type]
    body = {"Creations": [{}, {}]}
    answer = asyncio.run(Forwarder(broker).forward(ctx, body))
    assert [r["ErrorCode"] for r in answer["Results"]] == [-1, -1]
    from reference_impl.principal import deserialize

    assert [(k, deserialize(p)) for k, p in sent] == [(58, "User:alice")]


@pytest.mark.parametrize(
    ("security", "reason"),
    [
        ({"sasl_mechanisms": ["GSSAPI"]}, "unsupported SASL mechanism 'GSSAPI'"),
        ({"authorizer": "ranger"}, "authorizer must be 'acl' or null"),
        ({"userz": {}}, "unknown security settings: userz"),
    ],
)
def test_a_bad_security_section_stops_the_node_with_one_line(tmp_path, capsys, security, reason):
    from reference_impl.broker.broker import main as broker_main
    from reference_impl.config import ControllerAddress, ListenerConfig, NodeConfig

    config = NodeConfig(
        "broker",
        1,
        str(tmp_path / "data"),
        [ListenerConfig("PLAINTEXT", 0, security_protocol="SASL_PLAINTEXT")],
        controllers=[ControllerAddress(0, "127.0.0.1", 1)],
        settings={"security": security},
    )
    config.dump(tmp_path / "config.json")
    import sys

    argv, sys.argv = sys.argv, ["broker", str(tmp_path / "config.json")]
    try:
        assert broker_main() == 1
    finally:
        sys.argv = argv
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("broker 1: error: ") and reason in err[-1]
