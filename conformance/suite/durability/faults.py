"""Faults the suite injects into a target whose processes it runs, and the cluster as Metadata
shows it meanwhile.

:class:`Faults` reaches the target's processes only through :class:`~conformance.targets.base.
Target`'s fault methods (``fault_nodes``, ``signal_node``, ``start_node``), and only where the
suite manages the target: an external one gives UNSUPPORTED ("the suite cannot stop the
target's brokers"). Whatever a test did, leaving it undoes it: paused nodes are resumed, killed
ones started again on their data and ports, and the test waits until every broker serves again,
so that the tests after it meet the whole cluster.

:class:`Wire` sends requests without the harness's bookkeeping of unanswered requests: a broker
that is down or paused is the point of these tests, not a finding about its API.
"""

from __future__ import annotations

import signal
import time
from dataclasses import dataclass, field
from typing import Any

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, ErrorCode
from conformance.results.verdicts import MissingPrecondition, Unsupported
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.records_io import admin_call, quiet_version
from conformance.targets.base import CANNOT_STOP, Endpoint, Target, TargetError

#: how long a node may take to serve again after it was started (a JVM broker replays its log)
BACK_WITHIN = 90.0
#: a request to a broker that may be down or paused waits this long
SHORT = 3.0
#: how soon a target that does not say (``Target.failure_detection_s``) is assumed to notice a
#: dead or frozen broker: Kafka's default broker session (9 s)
DEFAULT_DETECTION = 9.0


class Wire:
    """Connections to the target's brokers, one per endpoint, dropped on any failure."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self._conns: dict[Endpoint, Connection] = {}

    def request(
        self, ep: Endpoint, api: int, version: int, body: dict, timeout: float = SHORT
    ) -> dict[str, Any]:
        """The answer's body; OSError, TimeoutError or ConnectionError when there is none."""
        h = self.harness
        conn = self._conns.get(ep)
        try:
            if conn is None or conn.closed:
                conn = h.call(
                    Connection.open(ep.host, ep.port, codec=h.codec, timeout=timeout),
                    timeout + 5,
                )
                self._conns[ep] = conn
            return h.call(conn.request(api, version, body, timeout=timeout), timeout + 5).body
        except BaseException:
            self.drop(ep)
            raise

    def drop(self, ep: Endpoint) -> None:
        conn = self._conns.pop(ep, None)
        if conn is not None:
            try:
                self.harness.call(conn.close(), 5)
            except Exception:  # already gone: nothing to close
                pass

    def close(self) -> None:
        for ep in list(self._conns):
            self.drop(ep)


@dataclass
class PartitionView:
    """One partition as a broker's Metadata gives it."""

    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    brokers: dict[int, Endpoint]
    controller: int


def managed(harness: Harness) -> Target:
    """The target, where the suite runs its processes; UNSUPPORTED otherwise."""
    target = harness.target
    if not target.manages_processes or not target.fault_nodes("broker"):
        raise Unsupported(CANNOT_STOP)
    return target


@dataclass
class Faults:
    """What a test did to the target's processes, undone when the test leaves it."""

    harness: Harness
    target: Target = field(init=False)
    wire: Wire = field(init=False)
    dead: set[int] = field(default_factory=set)
    paused: set[int] = field(default_factory=set)
    #: what happened, in order, for the checks' messages
    log: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.target = managed(self.harness)
        self.wire = Wire(self.harness)
        self._t0 = time.monotonic()

    # --- facts -------------------------------------------------------------------------------

    @property
    def brokers(self) -> list[int]:
        return self.target.fault_nodes("broker")

    @property
    def detection(self) -> float:
        """Seconds within which the target notices a dead or frozen broker: its own test-run
        settings' figure, else Kafka's default broker session."""
        return self.target.failure_detection_s or DEFAULT_DETECTION

    def within(self, factor: float, slack: float, default: float) -> float:
        """A bound on a wait the target's failure detection paces: ``factor`` times it plus
        ``slack`` where the target states it, else ``default`` (the bound for Kafka's
        production defaults). A bound only: the waits poll and end as soon as they can."""
        known = self.target.failure_detection_s
        return default if known is None else min(default, factor * known + slack)

    def need_brokers(self, n: int) -> None:
        if len(self.brokers) < n:
            raise MissingPrecondition(
                f"the scenario needs {n} brokers; the {self.target.kind} target runs "
                f"{len(self.brokers)}"
            )

    def live_endpoints(self) -> list[Endpoint]:
        eps = self.target.restartable
        down = self.dead | self.paused
        live = [ep for i, ep in sorted(eps.items()) if i not in down]
        return live or list(self.target.bootstrap)

    def metadata(
        self, topic: str | None, wire: Wire | None = None, at: Endpoint | None = None
    ) -> dict[str, Any] | None:
        """Metadata from the first live broker that answers (None: none did), ``at`` first
        where given, on ``wire`` (another thread's connections) or the test's."""
        wire = wire or self.wire
        version = quiet_version(self.harness, ApiKey.METADATA, "1-12")
        topics = [{"Name": topic}] if topic else []
        body = {"Topics": topics, "AllowAutoTopicCreation": False}
        for ep in [at] * (at is not None) + self.live_endpoints():
            try:
                return wire.request(ep, ApiKey.METADATA, version, body)
            except (OSError, TimeoutError, ConnectionError):
                continue
        return None

    def partition(
        self, topic: str, wire: Wire | None = None, at: Endpoint | None = None
    ) -> PartitionView | None:
        """Partition 0 of ``topic`` as a live broker's Metadata gives it (``at``'s where it
        answers)."""
        md = self.metadata(topic, wire, at)
        if md is None:
            return None
        brokers = {b["NodeId"]: Endpoint(b["Host"], b["Port"]) for b in md["Brokers"]}
        for t in md["Topics"]:
            for p in t["Partitions"] if t["Name"] == topic else []:
                if p["PartitionIndex"] == 0:
                    return PartitionView(
                        p["LeaderId"],
                        p.get("LeaderEpoch", -1),
                        list(p["ReplicaNodes"]),
                        list(p["IsrNodes"]),
                        brokers,
                        md.get("ControllerId", -1),
                    )
        return None

    def wait_partition(
        self, topic: str, ok: Any, what: str, timeout: float, at: Endpoint | None = None
    ) -> PartitionView:
        """Until ``ok(view)`` holds for the partition (as ``at`` sees it, where given);
        TimeoutError naming ``what`` past the timeout (the caller names the requirements
        through ``verify``)."""
        deadline = time.monotonic() + timeout
        view = None
        while time.monotonic() < deadline:
            view = self.partition(topic, at=at)
            if view is not None and ok(view):
                return view
            time.sleep(0.2)
        raise TimeoutError(f"{what} within {timeout:.0f} s (last Metadata: {view})")

    # --- faults ------------------------------------------------------------------------------

    def note(self, text: str) -> None:
        self.log.append(f"{time.monotonic() - self._t0:.1f}s {text}")

    def kill(self, node_id: int) -> None:
        """kill -9 of the node's process."""
        self.dead.add(node_id)
        self.note(f"kill -9 node {node_id}")
        self.target.signal_node(node_id, signal.SIGKILL)

    def pause(self, node_id: int) -> None:
        self.paused.add(node_id)
        self.note(f"SIGSTOP node {node_id}")
        self.target.signal_node(node_id, signal.SIGSTOP)

    def resume(self, node_id: int) -> None:
        self.note(f"SIGCONT node {node_id}")
        self.target.signal_node(node_id, signal.SIGCONT)
        self.paused.discard(node_id)

    def start(self, node_id: int) -> None:
        """Start a killed node again on its data and ports."""
        self.note(f"start node {node_id}")
        self.target.start_node(node_id)
        self.dead.discard(node_id)

    def start_all(self, nodes: list[int]) -> None:
        """Start several killed nodes again from this thread, their starts overlapping where the
        target can (``Target.start_nodes``: every process spawned, then each waited for). Never
        from a pool's short-lived threads: a target's processes may be tied to the thread that
        started them (Kafka's die with it, ``PR_SET_PDEATHSIG``)."""
        if not nodes:
            return
        self.note(f"start nodes {nodes}")
        try:
            self.target.start_nodes(nodes)
        except TargetError as e:
            raise TargetError(f"nodes {nodes} did not all start again: {e}") from None
        self.dead.difference_update(nodes)

    def pause_leader(self, topic: str, leader: int, at_most: float) -> None:
        """SIGSTOP of ``leader`` until the partition has another leader (the target noticed the
        frozen broker: its session ended), then a second more, at most ``at_most`` seconds in
        all; SIGCONT. A target that never moves the leadership is resumed after ``at_most``."""
        self.pause(leader)
        deadline = time.monotonic() + at_most
        try:
            while time.monotonic() < deadline:
                view = self.partition(topic)
                if view is not None and view.leader not in (-1, leader):
                    self.note(f"leader {view.leader} while {leader} is paused")
                    time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
                    break
                time.sleep(0.2)
        finally:
            self.resume(leader)

    def controllers(self) -> list[int]:
        """The controller processes to kill: the target's own controller nodes, or (ZooKeeper
        mode with brokers as controllers) the broker Metadata names as controller."""
        own = self.target.fault_nodes("controller")
        if own:
            return own
        md = self.metadata(None)
        if self.target.zookeeper is not None and md and md.get("ControllerId", -1) in self.brokers:
            return [md["ControllerId"]]
        raise MissingPrecondition(
            f"the {self.target.kind} target runs no controller process the suite can stop"
        )

    # --- restore -----------------------------------------------------------------------------

    def serving(self) -> bool:
        """Whether every broker answers Metadata listing every broker."""
        version = quiet_version(self.harness, ApiKey.METADATA, "1-12")
        body = {"Topics": [], "AllowAutoTopicCreation": False}
        want = set(self.brokers)
        for ep in self.target.restartable.values() or self.target.bootstrap:
            try:
                md = self.wire.request(ep, ApiKey.METADATA, version, body)
            except (OSError, TimeoutError, ConnectionError):
                return False
            if not want <= {b["NodeId"] for b in md["Brokers"]}:
                return False
        return True

    def restore(self) -> None:
        """Resume what is paused, start what is dead (controllers first), and wait until every
        broker serves; Failed when the target does not come back (a finding: the suite stopped
        nothing it did not start again)."""
        for node in sorted(self.paused):
            self.resume(node)
        controllers = set(self.target.fault_nodes("controller"))
        dead = sorted(self.dead)
        for group in (
            [n for n in dead if n in controllers],
            [n for n in dead if n not in controllers],
        ):
            try:
                self.start_all(group)
            except TargetError as e:
                raise verify.Failed(str(e)) from None
        deadline = time.monotonic() + BACK_WITHIN
        while not self.serving():
            if time.monotonic() > deadline:
                raise verify.Failed(
                    f"the target's brokers do not all serve {BACK_WITHIN:.0f} s after the "
                    f"faults were undone ({'; '.join(self.log)})"
                )
            time.sleep(0.3)

    def __enter__(self) -> Faults:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.restore()
        finally:
            self.wire.close()


# --- the scenarios' topic -------------------------------------------------------------------


def create_topic(
    faults: Faults, name: str, replicas: int, min_isr: int, brokers: list[int] | None = None
) -> None:
    """One partition on ``replicas`` brokers (the first of ``brokers``, else of the target's)
    with ``min.insync.replicas``; waits until it has a leader and its whole ISR."""
    harness = faults.harness
    version = quiet_version(harness, ApiKey.CREATE_TOPICS)
    ids = (brokers or faults.brokers)[:replicas]
    body = {
        "Topics": [
            {
                "Name": name,
                "NumPartitions": -1,
                "ReplicationFactor": -1,
                "Assignments": [{"PartitionIndex": 0, "BrokerIds": ids}],
                "Configs": [{"Name": "min.insync.replicas", "Value": str(min_isr)}],
            }
        ],
        "timeoutMs": 15000,
        "validateOnly": False,
    }
    if ApiKey.CREATE_TOPICS not in harness.advertised:
        raise MissingPrecondition("the scenario's topic needs CreateTopics (not advertised)")
    answer = admin_call(harness, ApiKey.CREATE_TOPICS, version, body, refusal_skips=True)
    code = answer["Topics"][0]["ErrorCode"]
    if code != ErrorCode.NONE:
        raise MissingPrecondition(
            f"cannot create the scenario's topic {name} on brokers {ids}: error {code}"
        )

    def settled(v: PartitionView) -> bool:
        return v.leader >= 0 and sorted(v.isr) == sorted(ids)

    what = f"{name}-0 has a leader and ISR {ids}"
    try:
        view = faults.wait_partition(name, settled, what, 30)
        # and as the leader sees it: a broker applies a new topic a moment after another one
        # may show it (a Produce to the leader before was refused UNKNOWN_TOPIC_OR_PARTITION:
        # kafka:4.4.0, share-groups/restart, once in eight runs)
        faults.wait_partition(name, settled, what, 30, at=view.brokers.get(view.leader))
    except TimeoutError as e:
        raise MissingPrecondition(f"the scenario's topic never settled: {e}") from None
