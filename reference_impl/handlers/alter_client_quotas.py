"""AlterClientQuotas (49): brokers forward it (KIP-590); the controller stores the quotas.

Entities combine ``user`` and ``client-id`` (a null name is the default entity), or are a
single ``ip``. Keys: producer_byte_rate, consumer_byte_rate, request_percentage,
controller_mutation_rate for users and clients; connection_creation_rate for ips. Anything
else, a repeated entity type, or a value that is not positive is INVALID_REQUEST.
"""

from __future__ import annotations

import ipaddress
import math
from typing import Any

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.forwarded import mutation_api
from reference_impl.metadata.image import quota_entity, quota_record
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import ControllerView, NodeView
from reference_impl.security_hooks import CLUSTER

ROLES = ("broker", "controller")
CLIENT_KEYS = frozenset(
    {"producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate"}
)
IP_KEYS = frozenset({"connection_creation_rate"})
ENTITY_TYPES = frozenset({"user", "client-id", "ip"})


def api(node: NodeView) -> Api:
    return mutation_api(node, ApiKey.ALTER_CLIENT_QUOTAS, alter)


def check_entity(entity: list[dict]) -> None:
    """Shared with DescribeClientQuotas' components: which entity type combinations exist."""
    types = [e["EntityType"] for e in entity]
    if not types:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "empty entity")
    if len(set(types)) != len(types):
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"duplicate entity type in {types}")
    unknown = set(types) - ENTITY_TYPES
    if unknown:
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"unknown entity type {sorted(unknown)[0]!r}")
    if "ip" in types and len(types) > 1:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, "ip quotas cannot be combined with other entities"
        )


def _check(entry: dict) -> None:
    entity = entry["Entity"]
    check_entity(entity)
    is_ip = entity[0]["EntityType"] == "ip"
    if is_ip and entity[0]["EntityName"] is not None:
        try:
            ipaddress.ip_address(entity[0]["EntityName"])
        except ValueError:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, f"{entity[0]['EntityName']!r} is not an IP address"
            ) from None
    keys = IP_KEYS if is_ip else CLIENT_KEYS
    seen = set()
    for op in entry["Ops"]:
        if op["Key"] not in keys:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"unknown quota key {op['Key']!r}")
        if op["Key"] in seen:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"quota key {op['Key']!r} twice")
        seen.add(op["Key"])
        value = op["Value"]
        if not op["Remove"] and (not math.isfinite(value) or value <= 0):
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, f"{op['Key']} must be positive, not {value}"
            )


def _entity_key(entity: list[dict]) -> tuple[tuple[str, str | None], ...]:
    """An entity as Kafka keys it: a map of entity types to names (a repeated type keeps its
    last name), so entries listing the same pairs in any order are one entity."""
    return tuple(sorted({e["EntityType"]: e["EntityName"] for e in entity}.items(), key=str))


async def alter(node: ControllerView, ctx: RequestContext, body: dict) -> dict:
    """One answer per distinct entity, as Kafka's controller answers from a map of entities:
    a repeated entity is INVALID_REQUEST ("Ignoring duplicate entity"), the answer to its first
    entry replaced while that entry's changes stay (ClientQuotaControlManager; seen on Kafka
    4.4.0: diff, AlterClientQuotas v1, two empty entities answered once)."""
    node.require_active()
    allowed = node.authorize(ctx.session, "ALTER_CONFIGS", CLUSTER)
    entries: dict[tuple, dict[str, Any]] = {}
    records: list[dict[str, Any]] = []
    for entry in body["Entries"]:
        key = _entity_key(entry["Entity"])
        if not allowed:
            code = int(ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
            entries[key] = {"ErrorCode": code, "ErrorMessage": None, "Entity": entry["Entity"]}
            continue
        if key in entries:
            entries[key].update(
                ErrorCode=int(ErrorCode.INVALID_REQUEST), ErrorMessage="Ignoring duplicate entity"
            )
            continue
        result = {"ErrorCode": 0, "ErrorMessage": None, "Entity": entry["Entity"]}
        entries[key] = result
        try:
            _check(entry)
        except KafkaError as e:
            result.update(ErrorCode=int(e.code), ErrorMessage=e.message)
            continue
        entity = quota_entity([(e["EntityType"], e["EntityName"]) for e in entry["Entity"]])
        if not body["ValidateOnly"]:
            records.extend(
                quota_record(entity, op["Key"], None if op["Remove"] else op["Value"])
                for op in entry["Ops"]
            )
    if records:
        offset = await node.commit(records)
        await node.wait_propagated(offset, 5000)
    return {"ThrottleTimeMs": 0, "Entries": list(entries.values())}
