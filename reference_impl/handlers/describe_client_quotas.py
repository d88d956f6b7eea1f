"""DescribeClientQuotas (48), served by brokers from the quotas UpdateMetadata brought them.

Each filter component matches an entity type exactly by name (0), its default entity (1), or
any specified name (2). ``Strict`` keeps only entities with no other entity types. A component
of an entity type Kafka does not know is UNSUPPORTED_VERSION (an empty one INVALID_REQUEST), as
Kafka answers them.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey, ErrorCode, KafkaError
from reference_impl.handlers.alter_client_quotas import ENTITY_TYPES, check_entity
from reference_impl.net.listener import Api, RequestContext
from reference_impl.roles import BrokerView
from reference_impl.security_hooks import CLUSTER

EXACT, DEFAULT, SPECIFIED = 0, 1, 2


def api(node: BrokerView) -> Api:
    async def handle(ctx: RequestContext, body: dict) -> dict:
        if not node.authorize(ctx.session, "DESCRIBE_CONFIGS", CLUSTER):
            return _error(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, None)
        components = body["Components"]
        try:
            for c in components:  # Kafka refuses an unknown entity type before anything else
                if c["EntityType"] == "":
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "Invalid empty entity type")
                if c["EntityType"] not in ENTITY_TYPES:
                    raise KafkaError(
                        ErrorCode.UNSUPPORTED_VERSION, f"Unsupported entity type {c['EntityType']}"
                    )
            if components:
                check_entity(components)
            for c in components:
                if c["MatchType"] not in (EXACT, DEFAULT, SPECIFIED):
                    raise KafkaError(ErrorCode.INVALID_REQUEST, f"match type {c['MatchType']}")
                if c["MatchType"] == EXACT and c["Match"] is None:
                    raise KafkaError(ErrorCode.INVALID_REQUEST, "exact match needs a name")
        except KafkaError as e:
            return _error(e.code, e.message)
        entries = []
        for entity, values in node.metadata_cache.quotas:
            names = dict(entity)
            if body["Strict"] and set(names) != {c["EntityType"] for c in components}:
                continue
            if all(_matches(c, names) for c in components):
                entries.append(
                    {
                        "Entity": [{"EntityType": t, "EntityName": n} for t, n in entity],
                        "Values": [{"Key": k, "Value": v} for k, v in sorted(values.items())],
                    }
                )
        return {"ThrottleTimeMs": 0, "ErrorCode": 0, "ErrorMessage": None, "Entries": entries}

    return Api(ApiKey.DESCRIBE_CLIENT_QUOTAS, handle)


def _matches(component: dict, names: dict[str, str | None]) -> bool:
    kind = component["EntityType"]
    if kind not in names:
        return False
    name = names[kind]
    if component["MatchType"] == EXACT:
        return name == component["Match"]
    if component["MatchType"] == DEFAULT:
        return name is None
    return name is not None


def _error(code: int, message: str | None) -> dict[str, Any]:
    return {"ThrottleTimeMs": 0, "ErrorCode": int(code), "ErrorMessage": message, "Entries": None}
