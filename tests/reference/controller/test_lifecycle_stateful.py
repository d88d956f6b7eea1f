"""The registration draft's broker lifecycle, driven over the controller listener (hypothesis).

Fake brokers (no process behind them) register, heartbeat (caught up or not), ask to be fenced
or to shut down, go silent for longer than the session timeout, re-register (same or new
incarnation), heartbeat with an old epoch, and unregister. A model of the draft's states
(Offline, Fenced, Online, Stopping) predicts every answer; after each step the invariants are
checked over the wire: epochs only grow per broker, DescribeCluster on the controller lists
exactly the Online and Stopping brokers (fenced ones are absent), and the controller's state
metric agrees. Near the session timeout the controller may already have fenced a broker the
model still has Online: those brokers are ``uncertain`` until their next answer. (Rules that
do not apply to the model's state do nothing rather than having preconditions, since the state
depends on timing and hypothesis needs the choice of rules to be reproducible.)
"""

from __future__ import annotations

import itertools
import time
import uuid
from dataclasses import dataclass, field

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from conformance.client.ports import free_port
from conformance.protocol import ApiKey, ErrorCode
from reference_impl.launcher import Cluster
from tests.reference.control_plane import (
    STORES,
    call,
    controller_address,
    new_cluster,
    scrape,
)

SESSION_MS = 500
CAUGHT_UP, BEHIND = 2**62, -1
OFFLINE, FENCED, ONLINE, STOPPING = "offline", "fenced", "online", "stopping"
_id_blocks = itertools.count(0)


@dataclass
class Fake:
    broker_id: int
    incarnation: uuid.UUID = field(default_factory=uuid.uuid4)
    registered: bool = False
    state: str = OFFLINE
    epoch: int = -1
    epochs: list[int] = field(default_factory=list)
    contact: float = 0.0

    def uncertain(self) -> bool:
        """The controller may have fenced it since the last answer (session nearly over)."""
        return self.registered and time.monotonic() - self.contact > SESSION_MS / 2000


class LifecycleMachine(RuleBasedStateMachine):
    cluster: Cluster
    cluster_id: str
    dead_port: int

    def __init__(self) -> None:
        super().__init__()
        base = 100 + 10 * next(_id_blocks)
        self.fakes = {b: Fake(b) for b in range(base, base + 3)}
        self.address = controller_address(self.cluster)
        self.expired = False

    ids = st.sampled_from(range(3))

    def fake(self, i: int) -> Fake:
        return self.fakes[min(self.fakes) + i]

    def _register(self, f: Fake) -> dict:
        body = {
            "BrokerId": f.broker_id,
            "ClusterId": self.cluster_id,
            "IncarnationId": f.incarnation,
            "Listeners": [
                {
                    "Name": "INTERNAL",
                    "Host": "127.0.0.1",
                    "Port": self.dead_port,
                    "SecurityProtocol": 0,
                }
            ],
            "Features": [],
            "Rack": None,
        }
        return call(self.address, ApiKey.BROKER_REGISTRATION, 3, body)

    def _heartbeat(
        self,
        f: Fake,
        *,
        offset: int,
        fence: bool = False,
        shutdown: bool = False,
        epoch: int | None = None,
    ) -> dict:
        body = {
            "BrokerId": f.broker_id,
            "BrokerEpoch": f.epoch if epoch is None else epoch,
            "CurrentMetadataOffset": offset,
            "WantFence": fence,
            "WantShutDown": shutdown,
        }
        return call(self.address, ApiKey.BROKER_HEARTBEAT, 1, body)

    def _registered(self, f: Fake, answer: dict) -> None:
        assert answer["ErrorCode"] == ErrorCode.NONE, answer
        epoch = answer["BrokerEpoch"]
        assert all(epoch > e for e in f.epochs), (epoch, f.epochs)  # BROKER-REGISTRATION.R7
        f.epochs.append(epoch)
        f.epoch, f.registered, f.state, f.contact = epoch, True, FENCED, time.monotonic()

    # --- rules -------------------------------------------------------------------------

    @rule(i=ids)
    def register(self, i: int) -> None:
        """Same incarnation again (a retry): always accepted, with a new, larger epoch."""
        f = self.fake(i)
        self._registered(f, self._register(f))

    @rule(i=ids)
    def restart(self, i: int) -> None:
        """A new incarnation: refused while the old one's session is alive (Online or Stopping;
        a Fenced broker has no session, as in Kafka's controller)."""
        f = self.fake(i)
        old, f.incarnation = f.incarnation, uuid.uuid4()
        answer = self._register(f)
        live = f.registered and f.state in (ONLINE, STOPPING)
        if answer["ErrorCode"] == ErrorCode.DUPLICATE_BROKER_REGISTRATION:
            assert live, (f, answer)
            f.incarnation = old
        else:
            assert not live or f.uncertain(), (f, answer)
            self._registered(f, answer)

    @rule(i=ids, caught_up=st.booleans())
    def heartbeat(self, i: int, caught_up: bool) -> None:
        f = self.fake(i)
        stopping = f.state == STOPPING
        answer = self._heartbeat(f, offset=CAUGHT_UP if caught_up else BEHIND, shutdown=stopping)
        if not f.registered:
            assert answer["ErrorCode"] == ErrorCode.STALE_BROKER_EPOCH, answer  # as Kafka
            return
        assert answer["ErrorCode"] == ErrorCode.NONE, answer
        assert answer["IsCaughtUp"] == caught_up
        was_uncertain = f.uncertain()
        f.contact = time.monotonic()
        if f.state == OFFLINE:
            assert answer["ShouldShutDown"] and answer["IsFenced"]
        elif stopping:
            # leaderships moving: ShouldShutDown now or later, then Offline (BROKER-REGISTRATION.R6)
            f.state = OFFLINE if answer["ShouldShutDown"] else STOPPING
            assert answer["IsFenced"] == answer["ShouldShutDown"] or was_uncertain
            if was_uncertain and answer["IsFenced"] and not answer["ShouldShutDown"]:
                f.state = FENCED
        elif f.state == FENCED or (f.state == ONLINE and was_uncertain):
            assert answer["IsFenced"] != caught_up or (was_uncertain and not caught_up), answer
            f.state = FENCED if answer["IsFenced"] else ONLINE
        else:
            assert f.state == ONLINE and not answer["IsFenced"], (f, answer)
        if f.state != OFFLINE:
            assert not answer["ShouldShutDown"]

    @rule(i=ids)
    def want_fence(self, i: int) -> None:
        f = self.fake(i)
        if not f.registered or f.state in (OFFLINE, STOPPING):
            return
        answer = self._heartbeat(f, offset=CAUGHT_UP, fence=True)
        assert answer["ErrorCode"] == ErrorCode.NONE and answer["IsFenced"], answer
        f.state, f.contact = FENCED, time.monotonic()

    @rule(i=ids)
    def want_shutdown(self, i: int) -> None:
        f = self.fake(i)
        if not f.registered or f.state == OFFLINE:
            return
        was_uncertain = f.uncertain()
        answer = self._heartbeat(f, offset=CAUGHT_UP, shutdown=True)
        assert answer["ErrorCode"] == ErrorCode.NONE, answer
        f.contact = time.monotonic()
        if f.state == FENCED or (was_uncertain and answer["ShouldShutDown"]):
            assert answer["ShouldShutDown"], answer  # a fenced broker just goes
            f.state = OFFLINE
        else:
            f.state = OFFLINE if answer["ShouldShutDown"] else STOPPING

    @rule(i=ids)
    def heartbeat_with_an_old_epoch(self, i: int) -> None:
        f = self.fake(i)
        if len(f.epochs) < 2 or not f.registered:
            return
        answer = self._heartbeat(f, offset=CAUGHT_UP, epoch=f.epochs[-2])
        assert answer["ErrorCode"] == ErrorCode.STALE_BROKER_EPOCH, answer

    @precondition(lambda self: not self.expired)
    @rule()
    def go_silent(self) -> None:
        """No heartbeats for longer than the session timeout: Online and Stopping get fenced."""
        time.sleep(SESSION_MS * 1.4 / 1000)
        self.expired = True
        for f in self.fakes.values():
            if f.state in (ONLINE, STOPPING):
                f.state = FENCED

    @rule(i=ids)
    def unregister(self, i: int) -> None:
        f = self.fake(i)
        answer = call(self.address, ApiKey.UNREGISTER_BROKER, 0, {"BrokerId": f.broker_id})
        assert answer["ErrorCode"] == (
            ErrorCode.NONE if f.registered else ErrorCode.BROKER_ID_NOT_REGISTERED
        ), answer
        f.registered, f.state, f.epoch = False, OFFLINE, -1

    # --- invariants --------------------------------------------------------------------

    @invariant()
    def fenced_brokers_are_not_described(self) -> None:
        body = call(
            self.address,
            ApiKey.DESCRIBE_CLUSTER,
            1,
            {"IncludeClusterAuthorizedOperations": False, "EndpointType": 1},
        )
        listed = {b["BrokerId"] for b in body["Brokers"]} & set(self.fakes)
        visible = {f.broker_id for f in self.fakes.values() if f.state in (ONLINE, STOPPING)}
        certain = {f.broker_id for f in self.fakes.values() if not f.uncertain()}
        assert visible & certain <= listed <= visible, (listed, self.fakes)

    @invariant()
    def the_state_metric_follows_the_draft(self) -> None:
        port = self.cluster.controller_nodes()[0].config.metrics_port
        samples = scrape(port)
        for f in self.fakes.values():
            if f.uncertain():
                continue
            states = {
                dict(k[1])["state"]
                for k, v in samples.items()
                if k[0] == "kafka_controller_broker_state"
                and dict(k[1])["broker_id"] == str(f.broker_id)
                and v == 1
            }
            assert states == ({f.state} if f.registered else set()), (f, states)

    def teardown(self) -> None:
        for f in self.fakes.values():
            if f.registered:
                call(self.address, ApiKey.UNREGISTER_BROKER, 0, {"BrokerId": f.broker_id})


@pytest.mark.parametrize("store", STORES)
def test_broker_lifecycle_follows_the_registration_draft(
    store: str, tmp_path, request: pytest.FixtureRequest
) -> None:
    """BROKER-REGISTRATION.R1-R7, R10 as a state machine against a controller (no real brokers)."""
    zookeeper = request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    cluster = new_cluster(
        tmp_path, store, zookeeper, brokers=0, overrides={"session_timeout_ms": SESSION_MS}
    )
    cluster.start()
    try:
        described = call(controller_address(cluster), ApiKey.DESCRIBE_CLUSTER, 0, {})
        machine = type(
            "Lifecycle",
            (LifecycleMachine,),
            {"cluster": cluster, "cluster_id": described["ClusterId"], "dead_port": free_port()},
        )
        run_state_machine_as_test(machine, settings=settings(stateful_step_count=12))
    finally:
        cluster.stop()
