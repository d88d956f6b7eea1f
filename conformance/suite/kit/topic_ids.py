"""Topic ids for the suite's hand-built bodies of the versions that name topics by id
(OffsetCommit and OffsetFetch v10, TxnOffsetCommit v6; issue 37).

A suite body names each topic both ways, ``Name`` and ``TopicId``, and the codec writes the one
the version carries, so one body serves every version. The ids come from the target's own
Metadata (v10+), asked only when the version sends ids; a name Metadata does not know gets the
zero id, which no topic has, so the target answers it as the unknown topic it is. Answers by id
are read back to names with the same table (:func:`name_of`).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID, FieldSpec
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.partitions import SuiteTopic

#: Metadata versions that give topic ids (KIP-516) and name topics in the request
METADATA_WITH_IDS = "10-12"


def sends_ids(harness: Harness, api_key: int, version: int) -> bool:
    """Whether ``api_key``'s request at ``version`` names topics by a TopicId field (read off
    the message spec, so no table repeats it)."""

    def walk(fields: list[FieldSpec]) -> bool:
        for f in fields:
            if version not in f.versions:
                continue
            if f.name == "TopicId" and f.type == "uuid":
                return True
            if f.is_struct and f.struct is not None and walk(f.struct.fields):
                return True
        return False

    return walk(harness.codec.message(api_key, "request").fields)


def ids_of(harness: Harness, names: Iterable[str] | None) -> dict[str, uuid.UUID]:
    """The id the target's Metadata gives each of ``names`` (a set-up request, not noted);
    the zero id for a name it does not know. ``None``: every topic Metadata lists."""
    wanted = None if names is None else sorted(set(names))
    if wanted == []:
        return {}
    topics = None if wanted is None else [{"Name": n} for n in wanted]
    body = {"Topics": topics, "AllowAutoTopicCreation": False}
    answer = harness.setup_request(harness.connect(), ApiKey.METADATA, body, METADATA_WITH_IDS)
    known = {
        t["Name"]: t.get("TopicId") or ZERO_UUID
        for t in answer.body["Topics"]
        if t["ErrorCode"] == ErrorCode.NONE
    }
    return known if wanted is None else {n: known.get(n, ZERO_UUID) for n in wanted}


def name_both_ways(
    harness: Harness, api_key: int, version: int, topics: list[dict[str, Any]]
) -> dict[str, uuid.UUID]:
    """Give each topic entry (``Name``) its ``TopicId`` too, when ``version`` sends ids; the
    ids used (empty when the version names topics by name)."""
    if not sends_ids(harness, api_key, version):
        return {}
    ids = ids_of(harness, (t["Name"] for t in topics))
    for t in topics:
        t["TopicId"] = ids[t["Name"]]
    return ids


def complete(harness: Harness, entries: list[dict[str, Any]], ids: dict[str, uuid.UUID]) -> None:
    """Add to ``ids`` every topic Metadata lists when an answer's entry names by id a topic
    the request did not (an OffsetFetch of all a group's offsets, v10)."""
    sent = set(ids.values())
    if any(not e.get("Name") and e.get("TopicId") not in sent for e in entries):
        ids.update(ids_of(harness, None))


def name_of(entry: dict[str, Any], ids: dict[str, uuid.UUID]) -> str:
    """The topic an answer's entry names: its Name, or the name whose id it carries (the id's
    text for an id the request did not send)."""
    if entry.get("Name"):
        return entry["Name"]
    by_id = {v: k for k, v in ids.items()}
    got = entry.get("TopicId") or ZERO_UUID
    return by_id.get(got, str(got))


def unknown_id(topic: SuiteTopic) -> uuid.UUID:
    """An id no topic has: derived from the test's fresh topic name, so the same run sends the
    same one, and never the topic's own."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-conformance/unknown/{topic.name}")


def with_id(harness: Harness, what: str) -> SuiteTopic:
    """A fresh one-partition suite topic with the id Metadata gave it; MissingPrecondition
    where Metadata gives none."""
    topic = SuiteTopic.create(harness, what)
    if topic.topic_id is None:
        topic.delete()
        raise MissingPrecondition(f"Metadata gave no topic id for {topic.name}")
    return topic
