"""Targets that give the suite no CreateTopics: a small broker that creates topics on first use,
a cluster whose principal may not create topics, one that does neither.

Each is a :class:`tests.support.faults_log.Fault` for ``ProxiedCluster`` in front of the reference
cluster (which auto-creates, as Kafka's ``auto.create.topics.enable`` does by default), and
:class:`Chain` puts a data-plane fault behind one, so that a broken broker without CreateTopics
can be shown to FAIL.
"""

from __future__ import annotations

from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.framing import decode_response, encode_response
from tests.support.faults_log import CODEC, Fault


class HideApis(Fault):
    """ApiVersions answers leave ``hidden`` out (the broker still serves them to whoever asks;
    the suite must not), the version-0 answer to a version too new included."""

    responses = (ApiKey.API_VERSIONS,)
    hidden: tuple[int, ...] = ()

    def __init__(self, *hidden: int) -> None:
        super().__init__()
        self.hidden = hidden or self.hidden

    def on_response(self, api, version, body, asked) -> bool:
        keys = [k for k in body["ApiKeys"] if k["ApiKey"] not in self.hidden]
        changed = len(keys) != len(body["ApiKeys"])
        body["ApiKeys"] = keys
        return changed

    def request(self, api: int, version: int, frame: bytes) -> bytes:
        return frame  # passed on as sent: a version too new for our specs must reach the broker

    def response(self, api: int, version: int, frame: bytes) -> bytes:
        if api != ApiKey.API_VERSIONS:
            return frame
        for v in dict.fromkeys((version, 0)):  # an error answer comes in v0
            try:
                header, body = decode_response(CODEC, api, v, frame)
            except Exception:
                continue
            if v != 0 and body["ErrorCode"] != ErrorCode.NONE:
                continue
            if not self.on_response(api, v, body, {}):
                return frame
            self.changed += 1
            return encode_response(CODEC, api, v, header["CorrelationId"], body)
        return frame


class HideCreateTopics(HideApis):
    """A broker that creates topics on first use only: no CreateTopics advertised."""

    hidden = (ApiKey.CREATE_TOPICS,)


class RefuseCreateTopics(Fault):
    """CreateTopics is advertised but every topic is refused TOPIC_AUTHORIZATION_FAILED, as by
    a cluster whose ACLs do not let the suite's principal create topics (the broker only
    validates the request, so nothing is created)."""

    requests = responses = (ApiKey.CREATE_TOPICS,)

    def on_request(self, api, version, body) -> bool:
        body["validateOnly"] = True
        return True

    def on_response(self, api, version, body, asked) -> bool:
        for t in body["Topics"]:
            t["ErrorCode"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            t["ErrorMessage"] = "not authorized to create topics"
        return True


class NoAutoCreation(Fault):
    """Metadata never auto-creates: AllowAutoTopicCreation is cleared on the way in (the suite
    asks at v4+, where the field exists)."""

    requests = (ApiKey.METADATA,)

    def on_request(self, api, version, body) -> bool:
        if version < 4 or not body.get("AllowAutoTopicCreation"):
            return False
        body["AllowAutoTopicCreation"] = False
        return True


class Chain(Fault):
    """Several faults in turn: requests through each in order, answers in reverse."""

    def __init__(self, *faults: Fault) -> None:
        super().__init__()
        self.faults = faults

    def request(self, api: int, version: int, frame: bytes) -> bytes:
        for f in self.faults:
            frame = f.request(api, version, frame)
        return frame

    def response(self, api: int, version: int, frame: bytes) -> bytes:
        for f in reversed(self.faults):
            frame = f.response(api, version, frame)
        return frame

    @property  # type: ignore[override]
    def changed(self) -> int:
        return sum(f.changed for f in self.faults)

    @changed.setter
    def changed(self, value: int) -> None:
        pass


#: the small pure-Python broker of issue 24: the APIs it serves, each up to the version it has
SMALL_BROKER = {
    ApiKey.PRODUCE: 8,
    ApiKey.FETCH: 6,
    ApiKey.LIST_OFFSETS: 5,
    ApiKey.METADATA: 8,
    ApiKey.OFFSET_COMMIT: 7,
    ApiKey.OFFSET_FETCH: 5,
    ApiKey.FIND_COORDINATOR: 2,
    ApiKey.JOIN_GROUP: 5,
    ApiKey.HEARTBEAT: 3,
    ApiKey.LEAVE_GROUP: 3,
    ApiKey.SYNC_GROUP: 3,
    ApiKey.API_VERSIONS: 3,
}


class SmallBroker(HideApis):
    """ApiVersions lists only the small broker's APIs, each up to its version (no CreateTopics:
    it creates topics on first use, which the reference behind does through Metadata)."""

    def on_response(self, api, version, body, asked) -> bool:
        body["ApiKeys"] = [
            dict(k, MaxVersion=min(k["MaxVersion"], SMALL_BROKER[k["ApiKey"]]))
            for k in body["ApiKeys"]
            if k["ApiKey"] in SMALL_BROKER
        ]
        return True
