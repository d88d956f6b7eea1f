"""Valid, harmless request bodies for one-off requests (the version tests' control and probe).

A body built from defaults alone is often not a request a broker can act on (a JoinGroup with no
protocols, an OffsetCommit naming no topic), and a target may close the connection on it for that
reason rather than for the version. :func:`valid_body` gives one element in every list, fresh
suite-owned names (never shared with another test, so no test meets state another left) and the
documented values in :data:`MEANINGFUL`; then :func:`conformance.suite.kit.safety.make_safe`
applies.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import (
    AclOperation,
    AclPermissionType,
    AclResourceType,
    ApiKey,
    Codec,
    ConfigResourceType,
)
from conformance.protocol.spec import StructSpec
from conformance.suite.kit.safety import (
    CLUSTER_ACTION,
    NAME_ENTITIES,
    NAME_FIELDS,
    fresh_name,
    inert_request,
    make_safe,
)

#: (api key, field name) -> the value a real client sends, where the default is not one
MEANINGFUL: dict[tuple[int, str], Any] = {
    (ApiKey.JOIN_GROUP, "ProtocolType"): "consumer",  # the consumer group protocol
    (
        ApiKey.JOIN_GROUP,
        "Name",
    ): "range",  # Protocols[].Name: a Java consumer assignor
    (ApiKey.SYNC_GROUP, "ProtocolType"): "consumer",
    (ApiKey.SYNC_GROUP, "ProtocolName"): "range",
    (ApiKey.LIST_OFFSETS, "Timestamp"): -1,  # the latest offset
    (ApiKey.DESCRIBE_CONFIGS, "ResourceType"): ConfigResourceType.TOPIC,
    (ApiKey.DESCRIBE_CONFIGS, "ConfigurationKeys"): ["cleanup.policy"],  # a topic config
    (ApiKey.INCREMENTAL_ALTER_CONFIGS, "ResourceType"): ConfigResourceType.TOPIC,
    (ApiKey.ALTER_CONFIGS, "ResourceType"): ConfigResourceType.TOPIC,
    (ApiKey.CREATE_TOPICS, "NumPartitions"): 1,
    (ApiKey.CREATE_TOPICS, "ReplicationFactor"): 1,
    # ACLs: a filter matching any operation and permission on a topic; a creation allowing a
    # suite principal to read a (suite-named) topic from any host
    (ApiKey.DESCRIBE_ACLS, "ResourceTypeFilter"): AclResourceType.TOPIC,
    (ApiKey.DESCRIBE_ACLS, "Operation"): AclOperation.ANY,
    (ApiKey.DESCRIBE_ACLS, "PermissionType"): AclPermissionType.ANY,
    (ApiKey.DELETE_ACLS, "ResourceTypeFilter"): AclResourceType.TOPIC,
    (ApiKey.DELETE_ACLS, "Operation"): AclOperation.ANY,
    (ApiKey.DELETE_ACLS, "PermissionType"): AclPermissionType.ANY,
    (ApiKey.CREATE_ACLS, "ResourceType"): AclResourceType.TOPIC,
    (ApiKey.CREATE_ACLS, "Principal"): "User:kc-suite-principal",
    (ApiKey.CREATE_ACLS, "Host"): "*",
    (ApiKey.CREATE_ACLS, "Operation"): AclOperation.READ,
    (ApiKey.CREATE_ACLS, "PermissionType"): AclPermissionType.ALLOW,
}


def valid_body(codec: Codec, api_key: int, version: int) -> dict:
    """A valid, harmless request of ``api_key`` (encodable at every version of the spec)."""
    if api_key in CLUSTER_ACTION:
        return inert_request(codec, api_key, version)
    spec = codec.message(api_key, "request")
    names: dict[str, str] = {}
    return make_safe(spec, version, _struct(api_key, spec.struct, names, 0))


def _struct(api_key: int, struct: StructSpec, names: dict[str, str], depth: int) -> dict:
    out: dict[str, Any] = {}
    for f in struct.fields:
        if (api_key, f.name) in MEANINGFUL:
            out[f.name] = MEANINGFUL[(api_key, f.name)]
            continue
        if f.is_struct:
            one = _struct(api_key, f.struct, names, depth + 1)
            out[f.name] = ([one] if depth < 3 else []) if f.is_array else one
        elif f.element_type == "string" and (
            f.entity_type in NAME_ENTITIES or f.name in NAME_FIELDS
        ):
            # one fresh name per kind, so that a group id and its topic stay consistent
            name = names.setdefault(f.entity_type or f.name, fresh_name())
            out[f.name] = [name] if f.is_array else name
        else:
            out[f.name] = f.default_value()
    return out
