"""Where the suite's topics come from, and where they go: the one create-then-clean-up helper.

A test that needs a topic to write to asks :func:`obtain` for one. The ways to get one are
tried in order, and what a way cannot do is learnt once per run (so a target without it costs
one probe, not one per test):

1. **CreateTopics**, where the target advertises it and the suite may use it: a fresh
   ``kc-suite-`` name with the partitions, configs and placement the test asks for. A refusal
   for authorization (TOPIC_ or CLUSTER_AUTHORIZATION_FAILED) or no answer ends this way for
   the run; any other refusal is the test's missing precondition.
2. **Auto-creation**, as Kafka's ``auto.create.topics.enable`` does: Metadata naming a fresh
   suite name with AllowAutoTopicCreation (implied before v4). The partition count the target
   gives is read back; a test needing more gets them with CreatePartitions where the target
   has it, else (or needing configs) the next way.
3. **Topics the user gave** for the run (``--topics``: names, or ``PREFIX*`` for every topic
   whose name starts so), each used by one test, with its partition count read from Metadata.

When none works, the test is SKIP naming what was missing ("no way to obtain a topic: ..."),
never UNSUPPORTED: the API the requirement judges may well be there. ``SET_UP_MISSING`` starts
every such message, so the run summary counts the requirements that could not be set up.

Clean-up (:func:`delete_topics`) deletes what the suite created where DeleteTopics is
advertised; elsewhere only ``kc-suite-`` names are left behind, and given topics are never
deleted.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from conformance.client.wire import ConnectionClosed
from conformance.protocol import ApiKey, ErrorCode
from conformance.protocol.spec import ZERO_UUID
from conformance.results.summary import SET_UP_MISSING
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.records_io import (
    NOT_PERMITTED,
    admin_call,
    known_everywhere,
    quiet_version,
)
from conformance.suite.kit.safety import PREFIX, fresh_name

#: how long an auto-created topic may take to get a leader for every partition
AUTO_CREATE_WAIT = 15.0
#: how many new topics (and seconds) a test that wants its partitions on one broker may go
#: through for one the target placed there (each lands there 1 in N brokers)
PLACEMENT_TRIES, PLACEMENT_WAIT = 12, 10.0


@dataclass(frozen=True)
class Obtained:
    """A topic a test may use: how it came to be and whether the suite deletes it after."""

    name: str
    partitions: int
    how: str
    owned: bool


@dataclass
class RunTopics:
    """What this run learnt about obtaining topics (one per harness)."""

    #: why CreateTopics cannot be used in this run (None: not found out yet, or usable)
    create_blocked: str | None = None
    #: whether a validate-only CreateTopics was accepted in this run (``create_topics_usable``)
    create_works: bool = False
    #: partitions an auto-created topic gets (None: not tried yet; 0: no auto-creation)
    auto_partitions: int | None = None
    auto_blocked: str = ""
    #: why an auto-created topic cannot be grown with CreatePartitions (None: not found out)
    grow_blocked: str | None = None
    #: the user's ``--topics`` entries, and the given topics resolved from them (name ->
    #: partitions; None until first needed)
    given_spec: tuple[str, ...] = ()
    given: dict[str, int] | None = None
    used: set[str] = field(default_factory=set)


_RUNS: weakref.WeakKeyDictionary[Harness, RunTopics] = weakref.WeakKeyDictionary()


def run_topics(harness: Harness) -> RunTopics:
    return _RUNS.setdefault(harness, RunTopics())


def give(harness: Harness, topics: str | None) -> None:
    """The run's ``--topics`` option: comma-separated names, a ``PREFIX*`` for every topic whose
    name starts with PREFIX."""
    spec = tuple(t.strip() for t in (topics or "").split(",") if t.strip())
    run_topics(harness).given_spec = spec


def topic_body(
    name: str,
    partitions: int,
    version: int,
    configs: dict[str, str] | None = None,
    on_broker: int | None = None,
) -> dict[str, Any]:
    """A CreateTopics entry: the target's default replication, or every partition on one
    broker (``on_broker``, replication factor 1)."""
    settings = [{"Name": k, "Value": v} for k, v in (configs or {}).items()]
    if on_broker is not None:
        return {
            "Name": name,
            "NumPartitions": -1,
            "ReplicationFactor": -1,
            "Assignments": [
                {"PartitionIndex": i, "BrokerIds": [on_broker]} for i in range(partitions)
            ],
            "Configs": settings,
        }
    return {
        "Name": name,
        "NumPartitions": partitions,
        "ReplicationFactor": -1 if version >= 4 else 1,
        "Assignments": [],
        "Configs": settings,
    }


# --- obtaining ----------------------------------------------------------------------------------


def obtain(
    harness: Harness,
    what: str,
    partitions: int = 1,
    *,
    configs: dict[str, str] | None = None,
    on_broker: int | None = None,
    exact: bool = False,
    prefer: int | None = None,
    given: bool = True,
) -> Obtained:
    """A topic for the test: at least ``partitions`` partitions (exactly, when ``exact``;
    ``prefer`` of them where the suite creates it), ``configs`` set, every partition led by
    ``on_broker`` (placed so by CreateTopics; a topic had another way is taken only where its
    leaders are there already); not one the user gave unless ``given`` (a test that changes a
    topic's configs, or deletes it, takes only the suite's own). MissingPrecondition naming
    every way that failed when there is none."""
    state = run_topics(harness)
    why: list[str] = []
    made = max(partitions, prefer or 0)
    got = _by_create_topics(harness, state, what, made, configs, on_broker, why)
    if got is not None:
        known_everywhere(harness, got.name, got.partitions)
        return got
    ways = []
    if not configs:
        ways.append(
            lambda: _by_auto_creation(harness, state, what, partitions, exact, on_broker, why)
        )
        if given:
            ways.append(lambda: _given(harness, state, partitions, exact, why))
        else:
            why.append("the test changes or deletes its topic, so takes none the user gave")
    else:
        why.append(f"the test needs topic configs {configs} only CreateTopics sets")
    for way in ways:
        # a new topic's first leader is the target's choice: a fresh one is asked for again
        # (bounded) while it lands elsewhere; a given topic is what it is
        deadline = time.monotonic() + PLACEMENT_WAIT
        for _ in range(PLACEMENT_TRIES):
            got = way()
            if got is None:
                break
            known_everywhere(harness, got.name, got.partitions)
            placed = on_broker is None or _placed(harness, got, on_broker)
            if placed is True:
                return got
            release(harness, [got])
            if not got.owned or time.monotonic() > deadline:
                why.append(placed)
                break
        else:
            why.append(f"{placed} ({PLACEMENT_TRIES} new topics)")
    raise MissingPrecondition(f"{SET_UP_MISSING}: {'; '.join(why)}")


def _placed(harness: Harness, got: Obtained, broker: int) -> str | bool:
    """True where every partition of ``got`` is led by ``broker``; else where they are."""
    body = {"Topics": [{"Name": got.name}], "AllowAutoTopicCreation": False}
    topics = harness.setup_request(harness.connect(), ApiKey.METADATA, body, "1-12").body["Topics"]
    leaders = {
        p["PartitionIndex"]: p["LeaderId"]
        for t in topics
        if t["Name"] == got.name
        for p in t["Partitions"]
    }
    elsewhere = {p: node for p, node in sorted(leaders.items()) if node != broker}
    if not elsewhere:
        return True
    return (
        f"the test needs every partition led by broker {broker}: {got.how} gave leaders "
        f"{elsewhere} (partition: broker)"
    )


def create_topics_usable(harness: Harness) -> str | None:
    """None where the suite may create topics with CreateTopics in this run (a test that
    creates and deletes topics itself, such as the log model, asks), else why not: a
    validate-only creation of a fresh name finds out, once per run."""
    why: list[str] = []
    state = run_topics(harness)
    if state.create_works:
        return None
    got = _by_create_topics(harness, state, "probe", 1, None, None, why, validate_only=True)
    if got is None:
        return "; ".join(why)
    state.create_works = True
    # nothing to delete where validate-only is honoured; a target that creates anyway (or
    # CreateTopics v0, which has no validate-only) is not left with the probe's topic
    delete_topics(harness, [got.name])
    return None


def _by_create_topics(
    harness: Harness,
    state: RunTopics,
    what: str,
    partitions: int,
    configs: dict[str, str] | None,
    on_broker: int | None,
    why: list[str],
    validate_only: bool = False,
) -> Obtained | None:
    if ApiKey.CREATE_TOPICS not in harness.advertised:
        why.append("CreateTopics not advertised")
        return None
    if state.create_blocked is not None:
        why.append(state.create_blocked)
        return None
    version = quiet_version(harness, ApiKey.CREATE_TOPICS)
    name = fresh_name(what)
    body = {
        "Topics": [topic_body(name, partitions, version, configs, on_broker)],
        "timeoutMs": 10000,
        "validateOnly": validate_only and version >= 1,
    }
    try:
        answer = admin_call(harness, ApiKey.CREATE_TOPICS, version, body, refusal_skips=False)
        code = answer["Topics"][0]["ErrorCode"]
    except (TimeoutError, ConnectionClosed) as e:
        state.create_blocked = f"CreateTopics v{version} not answered ({e})"
        why.append(state.create_blocked)
        return None
    if code in NOT_PERMITTED:
        state.create_blocked = f"CreateTopics refused (error {code}, {code_name(code)})"
        why.append(state.create_blocked)
        return None
    if code != ErrorCode.NONE:
        raise MissingPrecondition(f"cannot create the suite's topic {name}: error {code}")
    return Obtained(name, partitions, f"CreateTopics v{version}", owned=True)


def _by_auto_creation(
    harness: Harness,
    state: RunTopics,
    what: str,
    partitions: int,
    exact: bool,
    on_broker: int | None,
    why: list[str],
) -> Obtained | None:
    if state.auto_partitions == 0:
        why.append(state.auto_blocked)
        return None
    if state.auto_partitions is not None and not _fits(harness, state, partitions, exact):
        why.append(_too_few("auto-creation", state.auto_partitions, partitions, exact, state))
        return None
    if ApiKey.METADATA not in harness.advertised:
        state.auto_partitions, state.auto_blocked = 0, "no auto-creation (Metadata not advertised)"
        why.append(state.auto_blocked)
        return None
    version = quiet_version(harness, ApiKey.METADATA, "1-12")
    name = fresh_name(what)
    count, error = _auto_create(harness, name, version)
    if not count:
        state.auto_partitions = 0
        state.auto_blocked = f"no auto-creation (Metadata v{version} of a new name: {error})"
        why.append(state.auto_blocked)
        return None
    state.auto_partitions = count
    how = f"auto-creation (Metadata v{version})"
    if count < partitions and _fits(harness, state, partitions, exact):
        state.grow_blocked = _grow(harness, name, count, partitions, on_broker)
        if not state.grow_blocked:
            return Obtained(name, partitions, f"{how}, grown by CreatePartitions", owned=True)
    if not _enough(count, partitions, exact):
        delete_topics(harness, [name])
        why.append(_too_few("auto-creation", count, partitions, exact, state))
        return None
    return Obtained(name, count, how, owned=True)


def _fits(harness: Harness, state: RunTopics, partitions: int, exact: bool) -> bool:
    """Whether an auto-created topic has, or can be grown to, what the test needs."""
    have = state.auto_partitions or 0
    if _enough(have, partitions, exact):
        return True
    can_grow = ApiKey.CREATE_PARTITIONS in harness.advertised and state.grow_blocked is None
    return have < partitions and can_grow


def _grow(
    harness: Harness, name: str, have: int, partitions: int, on_broker: int | None
) -> str | None:
    """CreatePartitions of the auto-created ``name`` from ``have`` up to ``partitions`` (the new
    ones on ``on_broker`` where named): None once done, else why it could not be (remembered
    for the run)."""
    version = quiet_version(harness, ApiKey.CREATE_PARTITIONS)
    assignments = None
    if on_broker is not None:
        assignments = [{"BrokerIds": [on_broker]} for _ in range(partitions - have)]
    body = {
        "Topics": [{"Name": name, "Count": partitions, "Assignments": assignments}],
        "TimeoutMs": 10000,
        "ValidateOnly": False,
    }
    try:
        answer = admin_call(harness, ApiKey.CREATE_PARTITIONS, version, body, refusal_skips=False)
    except (TimeoutError, ConnectionClosed) as e:
        return f"CreatePartitions v{version} not answered ({e})"
    code = answer["Results"][0]["ErrorCode"] if answer["Results"] else -1
    if code != ErrorCode.NONE:
        return f"CreatePartitions v{version} refused (error {code}, {code_name(code)})"
    return None


def auto_create(harness: Harness, name: str) -> tuple[str, int, str]:
    """Auto-creation of ``name`` (a test making a deleted topic again where CreateTopics is not
    to be had): how it was asked, the partitions it got and, for none, what was answered."""
    version = quiet_version(harness, ApiKey.METADATA, "1-12")
    count, error = _auto_create(harness, name, version)
    return f"Metadata v{version} with AllowAutoTopicCreation", count, error


def _auto_create(harness: Harness, name: str, version: int) -> tuple[int, str]:
    """Ask for ``name`` with auto-creation allowed until Metadata lists a leader for each of
    its partitions: (partitions, "") or (0, what the target answered)."""
    body = {"Topics": [{"Name": name}], "AllowAutoTopicCreation": True}
    conn = harness.connect()
    deadline = time.monotonic() + AUTO_CREATE_WAIT
    code = ErrorCode.NONE
    while True:
        try:
            got = harness.setup_request(conn, ApiKey.METADATA, body, f"1-{version}")
            topics = got.body["Topics"]
        except (TimeoutError, ConnectionClosed) as e:
            return 0, f"not answered ({e})"
        mine = [t for t in topics if t["Name"] == name]
        code = mine[0]["ErrorCode"] if mine else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        if code == ErrorCode.NONE and mine[0]["Partitions"]:
            parts = mine[0]["Partitions"]
            if all(p["LeaderId"] >= 0 for p in parts):
                return len(parts), ""
        elif code not in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE):
            break
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    return 0, f"error {code} ({code_name(code)})"


def _given(
    harness: Harness, state: RunTopics, partitions: int, exact: bool, why: list[str]
) -> Obtained | None:
    if not state.given_spec:
        why.append("none given (--topics)")
        return None
    if state.given is None:
        state.given = _resolve(harness, state.given_spec)
    free = {n: c for n, c in state.given.items() if n not in state.used}
    fit = [n for n, c in free.items() if _enough(c, partitions, exact)]
    if not fit:
        why.append(
            f"none of the {len(state.given)} given topics left with "
            f"{'exactly' if exact else 'at least'} {partitions} partitions "
            f"({len(free)} unused: {dict(sorted(free.items()))})"
        )
        return None
    name = fit[0]
    state.used.add(name)
    return Obtained(name, state.given[name], "given (--topics)", owned=False)


def _resolve(harness: Harness, spec: tuple[str, ...]) -> dict[str, int]:
    """Every given topic that Metadata lists: name -> its partition count."""
    body = {"Topics": None, "AllowAutoTopicCreation": False}
    topics = harness.setup_request(harness.connect(), ApiKey.METADATA, body, "1-12").body["Topics"]
    listed = {t["Name"]: len(t["Partitions"]) for t in topics if t["ErrorCode"] == 0}
    out: dict[str, int] = {}
    for item in spec:
        if item.endswith("*"):
            out.update({n: c for n, c in sorted(listed.items()) if n.startswith(item[:-1])})
        elif item in listed:
            out[item] = listed[item]
    return out


def code_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return "unknown error code"


def _enough(have: int, need: int, exact: bool) -> bool:
    return have == need if exact else have >= need


def _too_few(how: str, have: int, need: int, exact: bool, state: RunTopics | None = None) -> str:
    grow = ""
    if state is not None and have < need:
        grow = f" ({state.grow_blocked or 'no CreatePartitions to grow it'})"
    return (
        f"{how} gives {have} partition{'s' if have != 1 else ''}, the test needs "
        f"{'exactly' if exact else 'at least'} {need}{grow}"
    )


# --- cleaning up --------------------------------------------------------------------------------


def delete_topics(harness: Harness, names: list[str]) -> None:
    """Delete topics the suite created (best effort: no verdict depends on it): only names in
    the suite's namespace, never a topic the user gave. Where the target has no DeleteTopics
    the suite-prefixed names stay."""
    given = run_topics(harness).given or {}
    names = [n for n in names if n.startswith(PREFIX) and n not in given]
    if not names or ApiKey.DELETE_TOPICS not in harness.advertised:
        return
    try:
        version = quiet_version(harness, ApiKey.DELETE_TOPICS)
        body: dict[str, Any] = {"TimeoutMs": 10000}
        if version >= 6:
            body["Topics"] = [{"Name": n, "TopicId": ZERO_UUID} for n in names]
        else:
            body["TopicNames"] = names
        admin_call(harness, ApiKey.DELETE_TOPICS, version, body, refusal_skips=False)
    except Exception:
        pass


def release(harness: Harness, topics: list[Obtained]) -> None:
    """The end of the test's use of ``topics``: what the suite created is deleted."""
    delete_topics(harness, [t.name for t in topics if t.owned])


class Topics:
    """``with Topics(harness, "what", count, partitions) as topics``: ``count`` topics obtained
    for the test, each with at least ``partitions`` (``obtain``'s keywords pass on), released
    when the block ends. Iterating gives their names; ``obtained`` says how each came."""

    def __init__(
        self, harness: Harness, what: str, count: int = 1, partitions: int = 1, **kw: Any
    ) -> None:
        self.harness, self.what, self.count = harness, what, count
        self.partitions, self.kw = partitions, kw
        self.obtained: list[Obtained] = []

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.obtained]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def open(self) -> Topics:
        """Obtain them (what was obtained is released when a later one cannot be)."""
        try:
            for _ in range(self.count):
                self.obtained.append(obtain(self.harness, self.what, self.partitions, **self.kw))
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        release(self.harness, self.obtained)
        self.obtained = []

    def __enter__(self) -> Topics:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()
