"""How the log-partition model (``specs/models/log-partition.json``) meets a target.

Each entity is a fresh suite topic (one partition) named per runner, so examples never share
a topic; where the suite cannot create and delete topics itself, the entities are topics
obtained once through ``provision`` (auto-created or given), Live from the start. Topic
mutations go to the bootstrap (the controller where that answers NOT_CONTROLLER); other
requests go to the partition's leader once the topic exists (the bootstrap before), at the
highest version both sides know within what ``conformance.suite.kit.partitions`` encodes; the body
a template gives is adapted where versions differ (DeleteTopics by name before v6, a
replication factor of 1 before CreateTopics v4). ``Records`` given as a count becomes a batch
of that many records, and each fetched partition gains ``FetchedRecords`` and ``FirstOffset``
so the model can speak of what a Fetch returned.
"""

from __future__ import annotations

from typing import Any

from conformance.protocol import ApiKey
from conformance.protocol.records import CorruptRecordError
from conformance.protocol.spec import ZERO_UUID
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.models import Binding, Model, ModelRunner
from conformance.suite.kit.partitions import (
    PRODUCE_VERSIONS,
    SuiteTopic,
    batch_bytes,
    create_again,
    now_ms,
    records_of,
)
from conformance.suite.kit.records_io import admin_call, quiet_version
from conformance.suite.kit.safety import fresh_name

#: topic mutations, sent as the admin client sends them (``records_io.admin_call``)
ADMIN = (ApiKey.CREATE_TOPICS, ApiKey.DELETE_TOPICS, ApiKey.CREATE_PARTITIONS)

#: the version range of each API the binding sends
WITHIN: dict[int, str | None] = {
    ApiKey.PRODUCE: PRODUCE_VERSIONS,
    ApiKey.FETCH: "4-12",
    ApiKey.LIST_OFFSETS: "1+",
}


class TopicsBinding(Binding):
    """Suite topics as model entities: requests to their leaders, created ones deleted at the
    end."""

    #: whether requests go to the partition leader (learned after each creation); the topics
    #: model sends only admin requests and reads Metadata of the bootstrap
    follows_leaders = True

    def __init__(
        self,
        harness: Harness,
        what: str,
        count: int,
        obtained: list[SuiteTopic] | None = None,
        ends: dict[str, int] | None = None,
    ) -> None:
        self.harness = harness
        self.count = count
        self.topics = obtained or [
            SuiteTopic(harness, fresh_name(f"{what}-{i}"), 1) for i in range(count)
        ]
        #: topics obtained before the run (``provision``: created, auto-created or given) are
        #: Live from the start and kept across examples, each starting at the log end the
        #: previous one left (``ends``); the others are Absent and created by the model
        self.obtained = obtained is not None
        self.ends = ends if ends is not None else {}
        self._by_name = {t.name: t for t in self.topics}
        #: names this binding deleted and has not created again: their re-creation is retried
        #: while the name is still taken (``partitions.create_again``)
        self.deleted: set[str] = set()

    def entity_id(self, index: int) -> str:
        return self.topics[index].name

    def start(self, index: int) -> tuple[str, dict[str, Any]] | None:
        if not self.obtained:
            return None
        return "Live", {"end": self.ends.get(self.topics[index].name, 0)}

    def version(self, api_key: int) -> int:
        return quiet_version(self.harness, api_key, WITHIN.get(api_key))

    def adapt(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        """The template's body in the form ``version`` takes."""
        if api_key == ApiKey.CREATE_TOPICS and version < 4:
            for t in body["Topics"]:
                if t["ReplicationFactor"] == -1:
                    t["ReplicationFactor"] = 1
        if api_key == ApiKey.DELETE_TOPICS:
            names = [t["Name"] for t in body.pop("Topics")]
            if version >= 6:
                body["Topics"] = [{"Name": n, "TopicId": ZERO_UUID} for n in names]
            else:
                body["TopicNames"] = names
        if api_key == ApiKey.PRODUCE:
            for t in body["TopicData"]:
                for p in t["PartitionData"]:
                    if isinstance(p["Records"], int):
                        ts = now_ms()
                        p["Records"] = batch_bytes(
                            [(ts, None, f"record {i}".encode()) for i in range(p["Records"])]
                        )
        return body

    def topic_of(self, api_key: int, body: dict[str, Any]) -> SuiteTopic | None:
        entries = body.get("Topics") or body.get("TopicData") or []
        name = entries[0].get("Name", entries[0].get("Topic")) if entries else None
        return self._by_name.get(name)

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        api_key = request["api_key"]
        version = self.version(api_key)
        topic = self.topic_of(api_key, body)
        body = self.adapt(api_key, version, body)

        def send() -> dict[str, Any]:
            if api_key in ADMIN:
                return admin_call(self.harness, api_key, version, body)
            conn = topic.conn(0) if topic is not None else self.harness.connect()
            return conn.request(api_key, version, body).body

        if api_key == ApiKey.CREATE_TOPICS and topic is not None and topic.name in self.deleted:
            answer = create_again(send)
        else:
            answer = send()
        created = api_key == ApiKey.CREATE_TOPICS and not body.get("validateOnly")
        if created and topic is not None and answer["Topics"][0]["ErrorCode"] == 0:
            self.deleted.discard(topic.name)
        if created and topic is not None and self.follows_leaders:
            if answer["Topics"] and answer["Topics"][0]["ErrorCode"] == 0:
                topic.learn_leaders()
        if api_key == ApiKey.DELETE_TOPICS and topic is not None:
            topic.leaders = {}
            if answer["Responses"] and answer["Responses"][0]["ErrorCode"] == 0:
                self.deleted.add(topic.name)
        if api_key == ApiKey.FETCH:
            for t in answer["Responses"]:
                for p in t["Partitions"]:
                    try:
                        _, records = records_of(p["Records"])
                    except CorruptRecordError as e:
                        raise verify.Failed(f"{name}: fetched records do not decode: {e}") from None
                    p["FetchedRecords"] = len(records)
                    p["FirstOffset"] = records[0].offset if records else -1
        return answer

    def cleanup(self, runner: ModelRunner) -> None:
        for e in runner.entities:
            if self.obtained:
                self.ends[self.topics[e.index].name] = e.vars["end"]
            elif runner.model.visible(e.state):
                self.topics[e.index].delete()


def only_when_applicable(machine: type, model: Model) -> type:
    """Give each event's rule a hypothesis precondition: some entity can take the event from
    its state. Examples are then made of requests the model predicts, not of skipped steps
    (hypothesis's simplest example would otherwise repeat the first rule, e.g. a create of a
    topic that exists)."""
    from hypothesis.stateful import precondition

    def takes(runner: ModelRunner, event: str, index: int) -> bool:
        options = runner.applicable(event, index)
        return bool(options) and options[0][0] == runner.entities[index].state

    for ev in model.events.values():
        fn = getattr(machine, ev.method, None)
        if fn is None or ev.wait is not None:
            continue

        def can(self: Any, event: str = ev.name) -> bool:
            return any(takes(self.runner, event, i) for i in range(self.runner.count))

        setattr(machine, ev.method, precondition(can)(fn))
    return machine
