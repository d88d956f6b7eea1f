"""KIP-848 consumer groups as the suite drives them: members that heartbeat on their own
connection to the group's coordinator, the topic ids of a subscription, ConsumerGroupDescribe.
Nothing here judges the answers: the tests do, naming their requirements."""

from __future__ import annotations

import random
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from conformance.protocol import ApiKey, ConfigOperation, ConfigResourceType, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from conformance.results.verdicts import Unsupported
from conformance.suite.groups.members import TRANSIENT, find_coordinator
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness, SyncConnection
from conformance.suite.kit.safety import fresh_name

REBALANCE_MS = 10_000
#: how long the group may take to converge (Kafka computes targets at most every second)
SETTLE = 15.0
#: how long a group config may take to reach the group's coordinator (KRaft: each broker applies
#: it with the metadata, after the controller answered the alteration)
CONFIG_WAIT = 5.0


@dataclass
class Member:
    conn: SyncConnection
    member_id: str = ""
    epoch: int = 0
    instance_id: str | None = None
    version: int = 0
    #: topic id -> owned partitions, as the last assignment said
    owned: dict[Any, set[int]] = field(default_factory=dict)
    #: every member epoch the answers carried, in order
    epochs: list[int] = field(default_factory=list)
    #: its own subscription (None: the group's topics)
    topics: list[str] | None = None
    #: the partitions its last heartbeat said it owned (topic id, partition)
    acked: set[tuple[Any, int]] = field(default_factory=set)
    #: when its last heartbeat was sent (monotonic): a member falls silent from there, not from
    #: when the answers to the heartbeats sent after it came back
    sent: float = 0.0

    def owned_pairs(self) -> set[tuple[Any, int]]:
        return {(t, p) for t, ps in self.owned.items() for p in ps}

    held = owned_pairs


class HeartbeatGroup:
    """A group of a heartbeat protocol (KIP-848's consumer groups, KIP-932's share groups) as
    the suite drives it: its coordinator, an admin connection to it, and requests asked again
    while the coordinator is loading or not yet the group's. A subclass names its APIs."""

    heartbeat_key: int
    describe_key: int
    #: the describe API's name, for messages
    describe_api: str
    #: the versions of both APIs the suite judges (None: any)
    served: str | None = None
    prefix = "group"

    def __init__(
        self,
        harness: Harness,
        topics: list[str],
        name: str | None = None,
        *,
        versions: str | None = None,
    ) -> None:
        self.harness = harness
        self.name = name or fresh_name(self.prefix)
        self.topics = topics
        self.version = newest(harness, self.heartbeat_key, versions or self.served)
        fc = harness.pick_version(ApiKey.FIND_COORDINATOR)
        self.coordinator = find_coordinator(harness, self.name, fc)
        self._admin: SyncConnection | None = None

    @property
    def admin(self) -> SyncConnection:
        if self._admin is None or self._admin.closed:
            self._admin = self.harness.connect(self.coordinator.endpoint, client_id="kc-admin")
        return self._admin

    def settled(self, conn: SyncConnection, api: int, version: int, body: dict) -> dict:
        """The answer to ``body``, asked again (for up to 30 s) while its error is transient."""
        deadline = time.monotonic() + 30
        while True:
            got = verify.expect_response(conn, api, version, body).body
            first = got["Groups"][0] if api == self.describe_key else got
            if first["ErrorCode"] not in TRANSIENT or time.monotonic() > deadline:
                return got
            time.sleep(0.1)

    def describe(self, name: str | None = None) -> dict:
        """The describe API's answer for the group (or ``name``) from the group's coordinator."""
        v = newest(self.harness, self.describe_key, self.served)
        body = {"GroupIds": [name or self.name], "IncludeAuthorizedOperations": False}
        return self.settled(self.admin, self.describe_key, v, body)["Groups"][0]

    def described(self, req: str) -> dict | None:
        """The group as described (None: GROUP_ID_NOT_FOUND); another error FAILs ``req``."""
        g = self.describe()
        if g["ErrorCode"] == ErrorCode.GROUP_ID_NOT_FOUND:
            return None
        verify.check(
            g["ErrorCode"] == ErrorCode.NONE,
            f"{self.describe_api} of {self.name}: error {g['ErrorCode']}",
            req,
        )
        return g

    def delete_quietly(self) -> None:
        """DeleteGroups of the group, best effort (a model's clean-up)."""
        try:
            v = self.harness.pick_version(ApiKey.DELETE_GROUPS)
            body = {"GroupsNames": [self.name]}
            verify.expect_response(self.admin, ApiKey.DELETE_GROUPS, v, body)
        except Exception:
            pass


def set_group_configs(harness: Harness, group: str, configs: dict[str, str]) -> dict:
    """IncrementalAlterConfigs of the group's configs: the answer's entry."""
    v = harness.pick_version(ApiKey.INCREMENTAL_ALTER_CONFIGS)
    body = {
        "Resources": [
            {
                "ResourceType": ConfigResourceType.GROUP,
                "ResourceName": group,
                "Configs": [
                    {"Name": k, "ConfigOperation": ConfigOperation.SET, "Value": value}
                    for k, value in configs.items()
                ],
            }
        ],
        "ValidateOnly": False,
    }
    got = verify.expect_response(harness.connect(), ApiKey.INCREMENTAL_ALTER_CONFIGS, v, body)
    return got.body["Responses"][0]


#: the run's seed -> the member ids drawn from it, one stream per process: a run against two
#: targets gives the same members the same ids (diff --models: where members are equally loaded
#: Kafka's uniform assignor picks by the hash of their ids, and so does the reference)
_MEMBER_IDS: dict[int, random.Random] = {}


def drawn_member_id(harness: Harness) -> str:
    """A KIP-848 member id (v1: the client draws it), from the run's seed when it has one."""
    if harness.seed is None:
        return str(uuid.uuid4())
    draws = _MEMBER_IDS.setdefault(harness.seed, random.Random(harness.seed))
    return str(uuid.UUID(int=draws.getrandbits(128), version=4))


class ConsumerGroup(HeartbeatGroup):
    heartbeat_key = ApiKey.CONSUMER_GROUP_HEARTBEAT
    describe_key = ApiKey.CONSUMER_GROUP_DESCRIBE
    describe_api = "ConsumerGroupDescribe"
    prefix = "cgroup"

    def new_member(self, instance_id: str | None = None, version: int | None = None) -> Member:
        conn = self.harness.connect(self.coordinator.endpoint, client_id="kc-consumer")
        m = Member(conn, instance_id=instance_id)
        m.version = self.version if version is None else version
        if m.version >= 1:
            m.member_id = drawn_member_id(self.harness)
        return m

    def heartbeat(self, m: Member, *, full: bool = False, **override: Any) -> dict:
        """One heartbeat of ``m`` (its owned partitions acknowledged); its state follows a NONE
        answer. ``full`` (or epoch 0) sends the subscription and rebalance timeout too."""
        epoch = override.pop("MemberEpoch", m.epoch)
        full = full or epoch == 0
        body: dict[str, Any] = {
            "GroupId": self.name,
            "MemberId": m.member_id,
            "MemberEpoch": epoch,
            "InstanceId": m.instance_id,
            "RackId": None,
            "RebalanceTimeoutMs": REBALANCE_MS if full else -1,
            "SubscribedTopicNames": (
                list(self.topics if m.topics is None else m.topics) if full else None
            ),
            "ServerAssignor": None,
            "TopicPartitions": (
                [{"TopicId": t, "Partitions": sorted(ps)} for t, ps in m.owned.items()]
                if full or epoch > 0
                else None
            ),
        }
        if epoch == 0:
            body["TopicPartitions"] = []
        if m.version >= 1:
            body["SubscribedTopicRegex"] = None
        body.update(override)
        if body["TopicPartitions"] is not None:
            m.acked = {(t["TopicId"], p) for t in body["TopicPartitions"] for p in t["Partitions"]}
        m.sent = time.monotonic()
        got = self.settled(m.conn, ApiKey.CONSUMER_GROUP_HEARTBEAT, m.version, body)
        if got["ErrorCode"] == ErrorCode.NONE and "MemberId" not in override:
            if got.get("MemberId"):
                m.member_id = got["MemberId"]
            m.epoch = got["MemberEpoch"]
            m.epochs.append(m.epoch)
            if got.get("Assignment") is not None:
                m.owned = {
                    tp["TopicId"]: set(tp["Partitions"])
                    for tp in got["Assignment"]["TopicPartitions"]
                    if tp["Partitions"]
                }
        return got


def advertised(harness: Harness, api: int) -> list[int]:
    """Every version of ``api`` both the target advertises and the suite's specs know, oldest
    first."""
    harness.require(api)
    lo, hi = harness.advertised_on("client")[api]
    ours = harness.codec.message(api, "request").valid_versions
    return [v for v in range(max(lo, ours.lo), min(hi, ours.hi) + 1)]


def newest(harness: Harness, api: int, within: str | None = None) -> int:
    """The highest of ``advertised`` (within ``within``, e.g. "1+"), or Unsupported: the
    harness's own choice now that it has no Kafka 3.9 cap (issue 37)."""
    return harness.pick_version(api, within)


def topic_ids(harness: Harness, names: list[str]) -> dict[str, Any]:
    """Topic name -> id from Metadata (v10 or later, where topics carry their ids)."""

    def body(v: int) -> dict[str, Any]:
        topics = [{"Name": n, "TopicId": ZERO_UUID} if v >= 10 else {"Name": n} for n in names]
        return {
            "Topics": topics,
            "AllowAutoTopicCreation": False,
            "IncludeTopicAuthorizedOperations": False,
        }

    # a set-up look-up (issue 42): a Metadata version whose answers do not decode is one
    # set-up defect (PROTOCOL.R3), then the next lower version, not this feature's FAIL
    got = verify.setup_response(harness.connect(), ApiKey.METADATA, body, "1+").body
    return {t["Name"]: t.get("TopicId") for t in got["Topics"]}


def joined(harness: Harness, g: ConsumerGroup, m: Member, what: str) -> dict:
    got = g.heartbeat(m)
    if got["ErrorCode"] == ErrorCode.UNSUPPORTED_VERSION and m.epoch == 0:
        # Kafka 3.9 advertises ConsumerGroupHeartbeat v0 (early access) but refuses every join
        # unless the consumer protocol is enabled (group.coordinator.rebalance.protocols)
        raise Unsupported(
            f"ConsumerGroupHeartbeat v{m.version} is advertised but a join is answered "
            "UNSUPPORTED_VERSION: the target does not serve the consumer group protocol",
            ApiKey.CONSUMER_GROUP_HEARTBEAT,
        )
    verify.answered_none(
        got, f"{what}: ConsumerGroupHeartbeat v{g.version} epoch 0 answered", "CONSUMER-GROUPS.R1"
    )
    return got


def converge(
    harness: Harness,
    g: ConsumerGroup,
    members: list[Member],
    want: set,
    test: str,
    req: str | None = None,
) -> dict:
    """Heartbeat every member in turn until their assignments cover ``want`` once each and every
    member is at the assignment epoch; at every step no partition is owned by two members. The
    checks name ``req`` where given (a test judging something else), else R2 and R3."""
    r2, r3 = (req, req) if req else ("CONSUMER-GROUPS.R2", "CONSUMER-GROUPS.R3")
    deadline = time.monotonic() + SETTLE
    described: dict = {}
    while True:
        for m in members:
            got = g.heartbeat(m)
            verify.answered_none(got, f"{test}: heartbeat at epoch {m.epoch} answered", r2)
            verify.check(
                m.epochs == sorted(m.epochs),
                f"{test}: a member's epochs went back: {m.epochs}",
                r2,
            )
            seen: dict = {}
            for other in members:
                for tp in other.owned_pairs():
                    verify.check(
                        tp not in seen,
                        f"{test}: partition {tp[1]} of topic {tp[0]} owned by two members at once "
                        f"(epochs {seen.get(tp)} and {other.epoch})",
                        r3,
                    )
                    seen[tp] = other.epoch
        described = g.describe()
        owned = [tp for m in members for tp in m.owned_pairs()]
        at = {m.epoch for m in members}
        # the target of the current group epoch computed (Kafka: at most every second)
        current = described.get("AssignmentEpoch") == described.get("GroupEpoch")
        if (
            set(owned) == want
            and len(owned) == len(want)
            and at == {described.get("AssignmentEpoch")}
            and current
        ):
            return described
        if time.monotonic() > deadline:
            verify.check(
                set(owned) == want and len(owned) == len(want),
                f"{test}: after {SETTLE:.0f} s the members own {sorted(owned)}, "
                f"not each of the {len(want)} subscribed partitions once",
                r3,
            )
            verify.check(
                at == {described.get("AssignmentEpoch")},
                f"{test}: after {SETTLE:.0f} s member epochs {sorted(at)}, assignment epoch "
                f"{described.get('AssignmentEpoch')}",
                r2,
            )
            return described
        time.sleep(0.2)


def served(harness: Harness) -> None:
    """Unsupported where the consumer group protocol is not served: a probe member of a fresh
    group joins (and leaves), ``joined`` telling an UNSUPPORTED_VERSION join apart."""
    probe = ConsumerGroup(harness, [fresh_name("cg-topic")])
    x = probe.new_member()
    joined(harness, probe, x, "probe member")
    probe.heartbeat(x, MemberEpoch=-1)


def applied(g: Any, m: Any, interval_ms: int) -> dict:
    """Heartbeat ``m`` (a consumer or share group's member) until an answer carries the group's
    new heartbeat interval ``interval_ms``, for up to CONFIG_WAIT: the coordinator takes a
    member's session timeout from the group's configs at each heartbeat, with the interval it
    answers (Kafka's GroupMetadataManager and the reference alike), so from that heartbeat on the
    session set with the interval is the member's. The last answer: the test judges what
    follows, a target that never applies the configs fails there."""
    deadline = time.monotonic() + CONFIG_WAIT
    while True:
        got = g.heartbeat(m)
        if got.get("HeartbeatIntervalMs") == interval_ms or time.monotonic() > deadline:
            return got
        time.sleep(0.2)


def removed(
    harness: Harness,
    g: Any,
    gone: Any,
    stays: Any,
    want: set,
    timing: tuple[float, int, float],
    what: str,
    req: str,
) -> None:
    """``gone`` stopped at ``since`` (``timing``: since, its timeout in ms, how often ``stays``
    heartbeats): ``stays`` comes to hold ``want``, not before the timeout; the group's describe
    API then lists only ``stays``, and ``gone``'s next heartbeat is refused. ``g`` is a consumer
    group or a share group of the suite (``heartbeat``, ``describe``, ``describe_api``), its
    members say what they hold with ``held()``."""
    since, timeout_ms, every = timing
    deadline = since + timeout_ms / 1000 + SETTLE
    # the longest wait from sending one of ``stays``' heartbeats to its next answer: where it
    # passes the timeout, ``stays`` may have lapsed too (a loaded host), said in the messages
    sent, longest = None, 0.0
    while stays.held() != want and time.monotonic() < deadline:
        time.sleep(every)
        now = time.monotonic()
        g.heartbeat(stays)
        longest = max(longest, time.monotonic() - (now if sent is None else sent))
        sent = now
    took = time.monotonic() - since
    held = sorted(p for _, p in stays.held())
    gaps = f"; its heartbeats' sends at most {longest:.1f} s from the next answer"
    verify.soft(
        harness,
        stays.held() == want,
        f"{took:.1f} s after {what}, the other member holds {held}, not every partition{gaps}",
        req,
    )
    verify.soft(
        harness,
        took >= timeout_ms / 1000 * 0.9 or stays.held() != want,
        f"the other member got every partition {took:.1f} s after {what}, before the "
        f"{timeout_ms} ms timeout",
        req,
    )
    listed = [x["MemberId"] for x in g.describe().get("Members") or []]
    verify.soft(
        harness,
        listed == [stays.member_id],
        f"{g.describe_api} after the timeout lists {listed}, expected only {stays.member_id}{gaps}",
        req,
    )
    late = g.heartbeat(gone)["ErrorCode"]
    verify.soft(
        harness,
        late in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH),
        f"the removed member's heartbeat at epoch {gone.epoch}: error {late}; expected "
        "UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH",
        req,
    )
