"""What the consumer-group handlers share: the node's GroupService, ACL checks, client host."""

from __future__ import annotations

from conformance.protocol import ErrorCode
from reference_impl.groups.service import GroupService, service_for
from reference_impl.net.listener import RequestContext
from reference_impl.roles import BrokerView


def groups(node: BrokerView) -> GroupService:
    return service_for(node)


def allowed(
    node: BrokerView, ctx: RequestContext, operation: str, resource: tuple[str, str]
) -> bool:
    """``node.authorize`` (Kafka's operation names). Every node has one (``Node.authorize``, the
    allow-all authorizer when ACLs are off), so nothing here lets a request through unasked."""
    return node.authorize(ctx.session, operation, resource)


def group_allowed(node: BrokerView, ctx: RequestContext, operation: str, group_id: str) -> bool:
    return allowed(node, ctx, operation, ("GROUP", group_id))


def client_id(ctx: RequestContext) -> str:
    return ctx.header.get("ClientId") or ""


def client_host(ctx: RequestContext) -> str:
    """As Kafka reports a member's host: the InetAddress string, ``/127.0.0.1``."""
    host = ctx.client_address.rsplit(":", 1)[0]
    return f"/{host}"


def partition_errors(topics: list[dict], results: dict[tuple[str, int], int]) -> list[dict]:
    """An offset commit's answer (OffsetCommit, TxnOffsetCommit): every topic and partition of
    the request with its error code."""
    return [
        {
            "Name": t["Name"],
            "Partitions": [
                {
                    "PartitionIndex": p["PartitionIndex"],
                    "ErrorCode": int(results[(t["Name"], p["PartitionIndex"])]),
                }
                for p in t["Partitions"]
            ],
        }
        for t in topics
    ]


def merged_by_id(answered: list[dict], topics: list[dict]) -> list[dict]:
    """An offset commit's answer by topic id (OffsetCommit v10+, TxnOffsetCommit v6+): one entry
    per id, the partitions of entries naming the same id together in the order asked, as Kafka
    4.4.0 answers them."""
    by_id: dict = {}
    for entry, t in zip(answered, topics, strict=True):
        merged = by_id.setdefault(t["TopicId"], {"TopicId": t["TopicId"], "Partitions": []})
        merged["Partitions"].extend(entry["Partitions"])
    return list(by_id.values())


def named_by_id(node: BrokerView, topics: list[dict]) -> tuple[list[dict], set[str]]:
    """A request's topics named by their ids (the broker's metadata gives the names) and the
    stand-in names of the ids the broker does not know (UNKNOWN_TOPIC_ID)."""
    named, unknown = [], set()
    for t in topics:
        name = node.metadata_cache.topic_ids.get(t["TopicId"])
        if name is None:
            name = f"\0unknown topic id {t['TopicId']}"
            unknown.add(name)
        named.append({**t, "Name": name})
    return named, unknown


#: a committed partition as the handlers take it: (topic name, partition index, its request entry)
Requested = tuple[str, int, dict]


def commit_topics(
    node: BrokerView, topics: list[dict], by_id: bool
) -> tuple[list[dict], list[Requested], dict[tuple[str, int], int]]:
    """An offset commit's topics (named by id where the version says so), the partitions to
    go on with, and UNKNOWN_TOPIC_ID already given to those of an id the broker does not know."""
    named, unknown = named_by_id(node, topics) if by_id else (topics, set())
    requested = [
        (t["Name"], p["PartitionIndex"], p)
        for t in named
        if t["Name"] not in unknown
        for p in t["Partitions"]
    ]
    results: dict[tuple[str, int], int] = {
        (t["Name"], p["PartitionIndex"]): ErrorCode.UNKNOWN_TOPIC_ID
        for t in named
        if t["Name"] in unknown
        for p in t["Partitions"]
    }
    return named, requested, results
