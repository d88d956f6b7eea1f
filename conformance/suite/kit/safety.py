"""Keeping generated requests harmless to the target's own data.

The spec-derived tests send hypothesis-generated valid requests for every API in scope. Against a
cluster somebody else owns, that must not create, alter or delete anything outside what the suite
owns. The rules, applied to every generated value before it is sent:

* **Names go into the suite's namespace.** Every string whose spec ``entityType`` is a topic name,
  group id or transactional id, and every config/ACL/quota resource or entity name, is replaced
  by ``kc-suite-<hash of the generated text>`` (deterministic, so map keys stay unique). A test
  that sends drawn requests salts the hash with its own id, so that tests running at once never
  meet on one name (hypothesis draws ``''`` in every test: unsalted, every group test's ``''``
  was one group, and a JoinGroup without protocols, which breaks that group on tansu 0.6, broke
  the other tests' requests to it).
* **Admin mutations only validate.** ``ValidateOnly`` is set wherever the version has it
  (CreateTopics, CreatePartitions, AlterConfigs, IncrementalAlterConfigs, AlterClientQuotas); in
  versions without it only suite-named resources can be touched, with small partition counts.
* **ACL filters and creations are literal**, on suite-named resources only, so no filter can
  match (and DeleteAcls delete) anybody else's ACLs.
* **No request waits, poses as a replica or asks for much**: Fetch and ListOffsets are sent as
  a consumer (replica id -1) with short waits and at most 1 MiB per answer; Produce uses acks
  -1 or 1 (acks 0 has no answer) and is not transactional; group timeouts are short.
* **Enumerations with a fixed set of values** keep a defined one (IsolationLevel 0 or 1), and
  the ACL APIs' resource type, operation and permission type (:data:`ACL_ENUMS`) are never
  UNKNOWN (0): Apache Kafka's request classes refuse that code while parsing, so such a
  request is malformed, not a valid one, and its connection is closed. Other out-of-range
  numbers (partitions, offsets, resource types Kafka does not define) stay: their answers are
  error codes, which is what the test checks.
* **Inter-broker (cluster action) APIs are never generated** (:data:`CLUSTER_ACTION`: the
  replication, registration, KRaft quorum and voter, transaction marker and share-group state
  APIs) and get one fixed, inert request each — stale epochs, ids no node has, another cluster
  id, empty lists — and only the shape of the answer is checked. A target may refuse them from
  a client by closing the connection. WriteTxnMarkers carries one marker, for a producer id
  nobody has on a suite topic that does not exist, so that its answer holds an error code.
* **Cluster-wide admin stays on suite names or validates only**: ElectLeaders never sends a
  null partition list (every partition), UpdateFeatures v0 (no ValidateOnly) sends no update,
  AlterUserScramCredentials only names suite users.
* **A streams-group heartbeat carries no topology**: with one, Kafka's group coordinator creates
  the topology's internal topics, with partition counts and configs the request names; without
  one the heartbeat only joins (or is refused for) a suite-named group.
* Values the spec allows but Kafka documents as not to be sent are not sent: Metadata v10-11
  topics always carry a name (topic-id lookups arrived with v12).
* Unknown tagged fields are removed (they have their own test, PROTOCOL.R12).
"""

from __future__ import annotations

import hashlib
import time
import uuid
from typing import Any

from conformance.protocol import (
    AclOperation,
    AclPatternType,
    AclPermissionType,
    AclResourceType,
    ApiKey,
)
from conformance.protocol.compiler import UNKNOWN_TAGS
from conformance.protocol.framing import encode_request
from conformance.protocol.records import (
    LegacyMessage,
    build_batch,
    encode_batch,
    encode_message_set,
)
from conformance.protocol.spec import MessageSpec, StructSpec

PREFIX = "kc-suite-"


def fresh_name(what: str = "") -> str:
    """A name in the suite's namespace that no other test uses (topics, groups, members):
    the prefix, what it is for, 12 random hex digits; the suite touches only what it made."""
    return f"{PREFIX}{what}{'-' if what else ''}{uuid.uuid4().hex[:12]}"


NAME_ENTITIES = {"topicName", "groupId", "transactionalId"}
NAME_FIELDS = {"ResourceName", "ResourceNameFilter", "EntityName"}
#: the broker id the inert requests use: one no cluster has
NO_BROKER = 2147483646
#: the producer id the inert requests use: one no coordinator hands out
NO_PRODUCER = 9223372036854775806

#: APIs only brokers and controllers send each other (cluster action): one inert request each
CLUSTER_ACTION = {
    int(k): k.api_name
    for k in (
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.WRITE_TXN_MARKERS,
        ApiKey.VOTE,
        ApiKey.BEGIN_QUORUM_EPOCH,
        ApiKey.END_QUORUM_EPOCH,
        ApiKey.ALTER_PARTITION,
        ApiKey.ENVELOPE,
        ApiKey.FETCH_SNAPSHOT,
        ApiKey.BROKER_REGISTRATION,
        ApiKey.BROKER_HEARTBEAT,
        ApiKey.UNREGISTER_BROKER,
        ApiKey.ALLOCATE_PRODUCER_IDS,
        ApiKey.CONTROLLER_REGISTRATION,
        ApiKey.ASSIGN_REPLICAS_TO_DIRS,
        ApiKey.ADD_RAFT_VOTER,
        ApiKey.REMOVE_RAFT_VOTER,
        ApiKey.UPDATE_RAFT_VOTER,
        ApiKey.INITIALIZE_SHARE_GROUP_STATE,
        ApiKey.READ_SHARE_GROUP_STATE,
        ApiKey.WRITE_SHARE_GROUP_STATE,
        ApiKey.DELETE_SHARE_GROUP_STATE,
        ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
        ApiKey.UNREGISTER_CONTROLLER,
    )
}


def suite_name(text: str, salt: str = "") -> str:
    if text.startswith(PREFIX):
        return text
    salted = f"{salt}\x00{text}" if salt else text
    return PREFIX + hashlib.sha1(salted.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def _clamp(v: Any, lo: int, hi: int) -> Any:
    return v if not isinstance(v, int) or isinstance(v, bool) else max(lo, min(hi, v))


#: field name -> how to make it harmless, wherever it occurs in a request
_FIELD_RULES: dict[str, Any] = {
    "ValidateOnly": lambda v: True,
    "validateOnly": lambda v: True,  # CreateTopics' spelling of the same flag
    "ReplicaId": lambda v: -1,
    "MaxWaitMs": lambda v: _clamp(v, 0, 100),
    "MinBytes": lambda v: _clamp(v, 0, 1),
    "MaxBytes": lambda v: _clamp(v, 0, 1 << 20),
    "PartitionMaxBytes": lambda v: _clamp(v, 0, 1 << 20),
    "TimeoutMs": lambda v: _clamp(v, 0, 3000),
    "SessionTimeoutMs": lambda v: 1000,
    "RebalanceTimeoutMs": lambda v: 1000,
    "NumPartitions": lambda v: _clamp(v, -1, 2),
    "ReplicationFactor": lambda v: _clamp(v, -1, 1),
    "Count": lambda v: _clamp(v, 0, 3),
    "Assignments": lambda v: [] if isinstance(v, list) else None,
    "PatternTypeFilter": lambda v: AclPatternType.LITERAL,
    "ResourcePatternType": lambda v: AclPatternType.LITERAL,
    "TransactionTimeoutMs": lambda v: _clamp(v, 1, 60000),
    "IsolationLevel": lambda v: v if v in (0, 1) else 0,
}


#: the ACL APIs' enumerations whose UNKNOWN Kafka refuses while parsing, by field; ANY stands
#: for it (a filter's wildcard; a creation naming it is refused with an error code)
ACL_ENUMS: dict[str, type[AclResourceType | AclOperation | AclPermissionType]] = {
    "ResourceType": AclResourceType,
    "ResourceTypeFilter": AclResourceType,
    "Operation": AclOperation,
    "PermissionType": AclPermissionType,
}
ACL_APIS = {ApiKey.DESCRIBE_ACLS, ApiKey.CREATE_ACLS, ApiKey.DELETE_ACLS}
#: the topic of WriteTxnMarkers' inert marker: a suite name no test creates
NO_TOPIC = PREFIX + "no-such-topic"


def make_safe(spec: MessageSpec, version: int, value: dict, salt: str = "") -> dict:
    """The generated request ``value`` with the rules above applied (a new dict); names hashed
    with ``salt`` (the sending test's id) where given."""
    out = _struct(spec.struct, version, value, salt)
    if spec.api_key == ApiKey.PRODUCE:  # Produce
        if out.get("Acks") not in (-1, 1):
            out["Acks"] = -1
        out["TransactionalId"] = None
        out["TimeoutMs"] = _clamp(out.get("TimeoutMs", 0), 0, 3000)
        for topic in out.get("TopicData") or []:
            for part in topic.get("PartitionData") or []:
                part["Records"] = valid_records(version, part.get("Records"))
    if spec.api_key in ACL_APIS:
        for item in (out, *(out.get("Creations") or []), *(out.get("Filters") or [])):
            for name, enum in ACL_ENUMS.items():
                if item.get(name) == enum.UNKNOWN:
                    item[name] = enum.ANY
    if spec.api_key == ApiKey.ELECT_LEADERS and out.get("TopicPartitions") is None:
        out["TopicPartitions"] = []  # null would elect leaders of every partition
    if spec.api_key == ApiKey.STREAMS_GROUP_HEARTBEAT:
        out["Topology"] = None  # a topology makes the coordinator create internal topics
    if spec.api_key == ApiKey.UPDATE_FEATURES and version == 0:
        out["FeatureUpdates"] = []  # v0 cannot validate only
    if spec.api_key == ApiKey.ALTER_USER_SCRAM_CREDENTIALS:
        for change in (*(out.get("Deletions") or []), *(out.get("Upsertions") or [])):
            change["Name"] = suite_name(change.get("Name") or "", salt)
    if (
        spec.api_key == ApiKey.METADATA
    ):  # Metadata: never auto-create (where the version can say so)
        out["AllowAutoTopicCreation"] = False
        if version < 12:  # null names are for topic-id lookups, which v10-11 must not use
            for i, topic in enumerate(out.get("Topics") or []):
                if topic.get("Name") is None:
                    topic["Name"] = suite_name(f"unnamed-{i}", salt)
    return out


def valid_records(produce_version: int, payload: bytes | None) -> bytes:
    """One record holding ``payload``, in the record format of that Produce version (v2
    batches from v3, magic 1 messages in v2, magic 0 before): a generated request carries
    records a broker can append rather than bytes it must reject."""
    value = payload or b""
    now = int(time.time() * 1000)
    if produce_version >= 3:
        return encode_batch(build_batch([(now, None, value)]))
    if produce_version == 2:
        return encode_message_set([LegacyMessage(0, None, value, magic=1, timestamp=now)])
    return encode_message_set([LegacyMessage(0, None, value, magic=0)])


def _struct(struct: StructSpec, version: int, value: dict, salt: str) -> dict:
    out: dict[str, Any] = {}
    for f in struct.fields:
        v = value.get(f.name)
        if f.is_struct and v is not None:
            v = (
                [_struct(f.struct, version, x, salt) for x in v]
                if f.is_array
                else _struct(f.struct, version, v, salt)
            )
        elif f.element_type == "string" and (
            f.entity_type in NAME_ENTITIES or f.name in NAME_FIELDS
        ):
            if f.is_array and v is not None:
                v = list(dict.fromkeys(suite_name(x, salt) for x in v))
            elif isinstance(v, str):
                v = suite_name(v, salt)
            elif v is None and f.name in NAME_FIELDS:
                v = suite_name("", salt)
        if f.name in _FIELD_RULES and version in f.versions:
            v = _FIELD_RULES[f.name](v)
        out[f.name] = v
    out.pop(UNKNOWN_TAGS, None)
    return _dedupe_map_keys(struct, version, out)


def _dedupe_map_keys(struct: StructSpec, version: int, value: dict) -> dict:
    """Renaming cannot create duplicates (the hash is injective enough), but clamping can't
    either; kept as a guard: arrays of structs keyed by a map key keep the first of each key."""
    for f in struct.fields:
        items = value.get(f.name)
        if not (f.is_array and f.is_struct and items):
            continue
        keys = [k.name for k in f.struct.fields if k.map_key and version in k.versions]
        if not keys:
            continue
        seen: set = set()
        kept = []
        for item in items:
            k = tuple(item.get(n) for n in keys)
            if k not in seen:
                seen.add(k)
                kept.append(item)
        value[f.name] = kept
    return value


def inert_request(codec, api_key: int, version: int) -> dict:
    """The fixed, harmless request of a cluster-action API (see the module's docstring)."""
    body: dict[str, Any] = {}
    stale = {"ControllerId": -1, "ControllerEpoch": 0, "BrokerEpoch": 0}
    if api_key in (4, 5, 6):
        body.update(stale)
    elif api_key == ApiKey.CONTROLLED_SHUTDOWN:
        body.update({"BrokerId": -1, "BrokerEpoch": 0})
    elif api_key == ApiKey.ALTER_PARTITION:
        body.update({"BrokerId": -1, "BrokerEpoch": 0, "Topics": []})
    elif api_key == ApiKey.BROKER_REGISTRATION:
        body.update(
            {
                "BrokerId": NO_BROKER,
                "ClusterId": PREFIX + "not-this-cluster",
                "IncarnationId": uuid.UUID(int=1),
                "Listeners": [],
                "Features": [],
                "Rack": None,
            }
        )
    elif api_key == ApiKey.BROKER_HEARTBEAT:
        body.update({"BrokerId": NO_BROKER, "BrokerEpoch": 0})
    elif api_key == ApiKey.UNREGISTER_BROKER:
        body.update({"BrokerId": NO_BROKER})
    elif api_key == ApiKey.WRITE_TXN_MARKERS:
        marker = {"ProducerId": NO_PRODUCER, "ProducerEpoch": 0, "TransactionResult": False}
        marker |= {"Topics": [{"Name": NO_TOPIC, "PartitionIndexes": [0]}], "CoordinatorEpoch": 0}
        markers = codec.message(api_key, "request").struct.fields[0].struct
        body["Markers"] = [{f.name: marker.get(f.name, f.default_value()) for f in markers.fields}]
    elif api_key == ApiKey.ENVELOPE:
        inner = encode_request(codec, ApiKey.DESCRIBE_CLUSTER, 0, 1, "kc-envelope", {})
        body.update(
            {
                "RequestData": inner,
                "RequestPrincipal": b"",
                "ClientHostAddress": bytes([127, 0, 0, 1]),
            }
        )
    spec = codec.message(api_key, "request")
    fields = {f.name for f in spec.struct.fields}
    for name in ("BrokerId", "ControllerId", "VoterId"):  # nobody's id
        if name in fields:
            body.setdefault(name, NO_BROKER)
    if "ClusterId" in fields:
        body.setdefault("ClusterId", PREFIX + "not-this-cluster")
    return {f.name: body.get(f.name, f.default_value()) for f in spec.struct.fields}
