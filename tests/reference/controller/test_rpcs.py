"""The controller's RPCs from brokers, with fake brokers on a controller-only cluster.

AlterPartition's checks (leader, epochs, eligible ISR members), ControlledShutdown moving
leadership to another Online ISR member, and a registration naming another cluster refused.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from conformance.protocol import ApiKey
from reference_impl.launcher import Cluster
from tests.reference.control_plane import (
    STORES,
    call,
    controller_address,
    new_cluster,
    topic_body,
)

CAUGHT_UP = 2**62


@pytest.fixture(scope="module", params=STORES)
def controller(request: pytest.FixtureRequest, tmp_path_factory) -> Iterator[Cluster]:
    store = request.param
    zookeeper = request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    cluster = new_cluster(
        tmp_path_factory.mktemp(f"controller-{store}"),
        store,
        zookeeper,
        brokers=0,
        overrides={"session_timeout_ms": 10000},
    )
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


class Fakes:
    """Registered, Online fake brokers (no process behind them)."""

    def __init__(self, cluster: Cluster, ids: list[int]) -> None:
        self.address = controller_address(cluster)
        self.cluster_id = call(self.address, ApiKey.DESCRIBE_CLUSTER, 0, {})["ClusterId"]
        self.epochs = {}
        for b in ids:
            answer = call(
                self.address,
                ApiKey.BROKER_REGISTRATION,
                3,
                {
                    "BrokerId": b,
                    "ClusterId": self.cluster_id,
                    "IncarnationId": uuid.uuid4(),
                    "Listeners": [
                        {"Name": "INTERNAL", "Host": "127.0.0.1", "Port": 1, "SecurityProtocol": 0}
                    ],
                    "Features": [],
                    "Rack": None,
                },
            )
            assert answer["ErrorCode"] == 0
            self.epochs[b] = answer["BrokerEpoch"]
            assert not self.heartbeat(b)["IsFenced"]

    def heartbeat(self, b: int, **wants: bool) -> dict:
        return call(
            self.address,
            ApiKey.BROKER_HEARTBEAT,
            1,
            {
                "BrokerId": b,
                "BrokerEpoch": self.epochs[b],
                "CurrentMetadataOffset": CAUGHT_UP,
                "WantFence": wants.get("fence", False),
                "WantShutDown": wants.get("shutdown", False),
            },
        )

    def alter(
        self,
        b: int,
        topic_id: uuid.UUID,
        isr: list[int],
        leader_epoch: int,
        partition_epoch: int,
        epoch: int | None = None,
    ) -> dict:
        return call(
            self.address,
            ApiKey.ALTER_PARTITION,
            3,
            {
                "BrokerId": b,
                "BrokerEpoch": self.epochs[b] if epoch is None else epoch,
                "Topics": [
                    {
                        "TopicId": topic_id,
                        "Partitions": [
                            {
                                "PartitionIndex": 0,
                                "LeaderEpoch": leader_epoch,
                                "PartitionEpoch": partition_epoch,
                                "NewIsrWithEpochs": [
                                    {"BrokerId": m, "BrokerEpoch": self.epochs[m]} for m in isr
                                ],
                                "LeaderRecoveryState": 0,
                            }
                        ],
                    }
                ],
            },
        )


def _only(answer: dict) -> dict:
    assert answer["ErrorCode"] == 0, answer
    return answer["Topics"][0]["Partitions"][0]


def test_alter_partition_checks_leader_epochs_and_isr(controller: Cluster) -> None:
    a, b, c = 201, 202, 203
    fakes = Fakes(controller, [a, b, c])
    body = topic_body(f"ap-{uuid.uuid4().hex[:6]}", -1, -1)
    body["Topics"][0]["Assignments"] = [{"PartitionIndex": 0, "BrokerIds": [a, b, c]}]
    body["timeoutMs"] = 0
    created = call(fakes.address, ApiKey.CREATE_TOPICS, 7, body)["Topics"][0]
    assert created["ErrorCode"] == 0, created
    topic_id = created["TopicId"]

    shrunk = _only(fakes.alter(a, topic_id, [a, b], 0, 0))
    assert (shrunk["ErrorCode"], shrunk["Isr"], shrunk["PartitionEpoch"]) == (0, [a, b], 1)
    assert _only(fakes.alter(a, topic_id, [a], 0, 0))["ErrorCode"] == 95  # INVALID_UPDATE_VERSION
    assert _only(fakes.alter(b, topic_id, [b], 0, 1))["ErrorCode"] == 6  # NOT_LEADER_OR_FOLLOWER
    assert _only(fakes.alter(a, topic_id, [a], 3, 1))["ErrorCode"] == 74  # FENCED_LEADER_EPOCH
    assert fakes.heartbeat(c, fence=True)["IsFenced"]
    assert _only(fakes.alter(a, topic_id, [a, b, c], 0, 1))["ErrorCode"] == 107  # INELIGIBLE
    stale = fakes.alter(a, topic_id, [a], 0, 1, epoch=fakes.epochs[a] - 1)
    assert stale["ErrorCode"] == 77  # STALE_BROKER_EPOCH
    unknown = fakes.alter(a, uuid.uuid4(), [a], 0, 1)
    assert unknown["Topics"][0]["Partitions"][0]["ErrorCode"] == 100  # UNKNOWN_TOPIC_ID

    # controlled shutdown of the leader: Stopping (still described), leadership moves to b
    answer = call(
        fakes.address,
        ApiKey.CONTROLLED_SHUTDOWN,
        3,
        {"BrokerId": a, "BrokerEpoch": fakes.epochs[a]},
    )
    assert answer == {"ErrorCode": 0, "RemainingPartitions": []}
    described = call(fakes.address, ApiKey.DESCRIBE_CLUSTER, 1, {"EndpointType": 1})["Brokers"]
    assert a in {x["BrokerId"] for x in described}
    moved = _only(fakes.alter(b, topic_id, [b], 1, 2))
    assert (moved["ErrorCode"], moved["LeaderId"], moved["LeaderEpoch"]) == (0, b, 1)
    # b never acknowledges (no process): a stays Stopping, visible, until that times out
    assert not fakes.heartbeat(a, shutdown=True)["IsFenced"]


def test_a_registration_for_another_cluster_is_refused(controller: Cluster) -> None:
    """BROKER-REGISTRATION.R1: INCONSISTENT_CLUSTER_ID."""
    answer = call(
        controller_address(controller),
        ApiKey.BROKER_REGISTRATION,
        0,
        {
            "BrokerId": 7,
            "ClusterId": "AAAAAAAAAAAAAAAAAAAAAA",
            "IncarnationId": uuid.uuid4(),
            "Listeners": [
                {"Name": "INTERNAL", "Host": "127.0.0.1", "Port": 1, "SecurityProtocol": 0}
            ],
            "Features": [],
            "Rack": None,
        },
    )
    assert answer["ErrorCode"] == 104


def test_broker_lifecycle_answers_as_kafkas_controller(controller: Cluster) -> None:
    """Found by diff --models against Kafka 4.4.0 (issue 26): a broker that leads nothing and asks
    to shut down is fenced and told ShouldShutDown at once; a heartbeat of an id never registered
    is STALE_BROKER_EPOCH; a new incarnation of a Fenced broker is registered anew."""
    fakes = Fakes(controller, [71])
    answer = fakes.heartbeat(71, shutdown=True)
    assert (answer["ErrorCode"], answer["IsFenced"], answer["ShouldShutDown"]) == (0, True, True)
    fakes.epochs[72] = 5
    assert fakes.heartbeat(72)["ErrorCode"] == 77  # STALE_BROKER_EPOCH

    def register(incarnation: uuid.UUID) -> dict:
        listener = {"Name": "INTERNAL", "Host": "127.0.0.1", "Port": 1, "SecurityProtocol": 0}
        body = {"BrokerId": 73, "ClusterId": fakes.cluster_id, "IncarnationId": incarnation}
        body |= {"Listeners": [listener], "Features": [], "Rack": None}
        return call(fakes.address, ApiKey.BROKER_REGISTRATION, 3, body)

    first = register(uuid.uuid4())  # registered, never heartbeated: Fenced
    again = register(uuid.uuid4())
    assert (first["ErrorCode"], again["ErrorCode"]) == (0, 0), (first, again)
    assert again["BrokerEpoch"] > first["BrokerEpoch"]


def test_describe_cluster_v2_lists_fenced_brokers_on_request(controller: Cluster) -> None:
    """v2's IncludeFencedBrokers (KIP-1073): a fenced broker is left out unless asked for,
    then listed with IsFenced; the live one IsFenced false. A v2 heartbeat naming cordoned log
    directories is answered as any other (the reference models no log directories)."""
    mine = (81, 82)
    fakes = Fakes(controller, list(mine))
    cordoned = {"CordonedLogDirs": [uuid.uuid4()], "OfflineLogDirs": []}
    answer = call(
        fakes.address,
        ApiKey.BROKER_HEARTBEAT,
        2,
        {
            "BrokerId": 82,
            "BrokerEpoch": fakes.epochs[82],
            "CurrentMetadataOffset": CAUGHT_UP,
            "WantFence": True,
            "WantShutDown": False,
        }
        | cordoned,
    )
    assert (answer["ErrorCode"], answer["IsFenced"]) == (0, True)

    def listed(version: int, fenced_too: bool) -> dict[int, bool]:
        body = {"EndpointType": 1, "IncludeFencedBrokers": fenced_too}
        brokers = call(fakes.address, ApiKey.DESCRIBE_CLUSTER, version, body)["Brokers"]
        # this test's brokers only: the module's controller holds other tests' (201, 202 ...)
        return {b["BrokerId"]: b.get("IsFenced", False) for b in brokers if b["BrokerId"] in mine}

    assert listed(2, False) == {81: False}
    assert listed(1, True) == {81: False}
    assert listed(2, True) == {81: False, 82: True}
