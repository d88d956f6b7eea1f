"""A KIP-848 consumer group survives a restart of the whole reference cluster, in both metadata
stores: its epochs, its member, the member's assignment and its committed offsets come back from
``__consumer_offsets``, and the member goes on heartbeating at its epoch. One broker: ~4 s each.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.protocol import ApiKey
from conformance.targets.zookeeper import ZooKeeperServer
from tests.reference.control_plane import STORES, call, new_cluster, topic_body, wait_until

GROUPS = {"settings": {"groups": {"offsets_topic_partitions": 2}}}
GROUP = "restarted"


def heartbeat(address: tuple[str, int], body: dict) -> dict | None:
    # the first FindCoordinator creates __consumer_offsets
    call(address, ApiKey.FIND_COORDINATOR, 4, {"KeyType": 0, "CoordinatorKeys": [GROUP]})
    answer = call(address, ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {"GroupId": GROUP, **body})
    return None if answer["ErrorCode"] in (14, 15, 16) else answer  # not ready yet


def describe(address: tuple[str, int]) -> dict | None:
    body = {"GroupIds": [GROUP], "IncludeAuthorizedOperations": False}
    (group,) = call(address, ApiKey.CONSUMER_GROUP_DESCRIBE, 1, body)["Groups"]
    return None if group["ErrorCode"] in (14, 15, 16) else group


@pytest.mark.parametrize("store", STORES)
def test_a_consumer_group_survives_a_restart(
    store: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    zk: ZooKeeperServer | None = (
        request.getfixturevalue("zookeeper") if store == "zookeeper" else None
    )
    cluster = new_cluster(tmp_path, store, zk, brokers=1, broker_overrides=GROUPS)
    cluster.start(timeout=60)
    try:
        broker = cluster.broker_address(cluster.broker_nodes()[0])
        created = call(broker, ApiKey.CREATE_TOPICS, 5, topic_body("t", 3, 1))
        assert created["Topics"][0]["ErrorCode"] == 0
        joined = wait_until(
            lambda: heartbeat(
                broker,
                {
                    "MemberId": "m",
                    "MemberEpoch": 0,
                    "RebalanceTimeoutMs": 30000,
                    "SubscribedTopicNames": ["t"],
                    "TopicPartitions": [],
                },
            ),
            timeout=30,
        )
        assert joined["ErrorCode"] == 0 and joined["MemberEpoch"] == 2, joined
        (assigned,) = joined["Assignment"]["TopicPartitions"]
        assert assigned["Partitions"] == [0, 1, 2]
        commit = {
            "GroupId": GROUP,
            "GenerationIdOrMemberEpoch": 2,
            "MemberId": "m",
            "GroupInstanceId": None,
            "Topics": [{"Name": "t", "Partitions": [{"PartitionIndex": 1, "CommittedOffset": 7}]}],
        }
        committed = call(broker, ApiKey.OFFSET_COMMIT, 9, commit)
        assert committed["Topics"][0]["Partitions"][0]["ErrorCode"] == 0, committed
        before = describe(broker)
        cluster.stop()
        cluster.start(timeout=60)
        broker = cluster.broker_address(cluster.broker_nodes()[0])
        after = wait_until(lambda: describe(broker), timeout=30)
        assert after == before
        again = heartbeat(broker, {"MemberId": "m", "MemberEpoch": 2})
        assert again is not None and (again["ErrorCode"], again["MemberEpoch"]) == (0, 2)
        fetch = {
            "Groups": [
                {
                    "GroupId": GROUP,
                    "MemberId": "m",
                    "MemberEpoch": 2,
                    "Topics": [{"Name": "t", "PartitionIndexes": [1]}],
                }
            ],
            "RequireStable": False,
        }
        (group,) = call(broker, ApiKey.OFFSET_FETCH, 9, fetch)["Groups"]
        assert group["Topics"][0]["Partitions"][0]["CommittedOffset"] == 7, group
    finally:
        cluster.stop()
