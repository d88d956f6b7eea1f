"""``Group.rebalance`` joins again where every JoinGroup of a round is answered "not ready yet"
(a coordinator loading the group, or Kafka under load answering COORDINATOR_NOT_AVAILABLE when
storing the group timed out), as Kafka's clients do, and only a bounded number of times; an
answer a requirement judges (NOT_COORDINATOR, GROUPS.R1) is not asked away.

The module's reference cluster runs behind ``faults_log.ProxiedCluster``; a fault answers the
first JoinGroups of a group with a chosen error (the member id-asking first join excepted)."""

from __future__ import annotations

import pytest

from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.suite.groups import members
from conformance.suite.groups.members import REJOIN_TRIES, Group
from conformance.suite.kit.harness import Harness
from conformance.suite.txn import test_offsets
from tests.support import in_process
from tests.support.faults_log import Fault, ProxiedCluster

CODEC = Codec.from_specs()


class JoinNotReady(Fault):
    """The first ``times`` JoinGroup answers that would hold a generation carry ``code``."""

    responses = (ApiKey.JOIN_GROUP,)

    def __init__(self, code: int, times: int) -> None:
        super().__init__()
        self.code, self.left = code, times

    def on_response(self, api, version, body, asked) -> bool:
        if self.left <= 0 or body["ErrorCode"] != ErrorCode.NONE:
            return False
        self.left -= 1
        body.update(ErrorCode=self.code, GenerationId=-1, Leader="", Members=[])
        return True


def formed(cluster: ProxiedCluster) -> tuple[members.Round, members.Member]:
    harness = Harness(cluster.target(), CODEC, examples=1, seed=in_process.SEED)
    harness.open()
    try:
        g = Group(harness)
        m = g.new_member()
        r = g.rebalance(joining=[m])
        g.cleanup()
        return r, m
    finally:
        harness.close()


@pytest.fixture(autouse=True)
def no_pause(monkeypatch) -> None:
    monkeypatch.setattr(members, "REJOIN_PAUSE", 0.05)


@pytest.mark.parametrize(
    "code", [ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS]
)
def test_a_round_answered_not_ready_is_joined_again(reference, code: int) -> None:
    with ProxiedCluster(reference, JoinNotReady(code, 2)) as cluster:
        r, m = formed(cluster)
    assert [next(iter(x.values()))["ErrorCode"] for x in r.rejoined] == [code, code]
    assert m.generation >= 0 and r.syncs[m.client_id]["ErrorCode"] == ErrorCode.NONE


def test_the_rejoins_are_bounded(reference) -> None:
    fault = JoinNotReady(ErrorCode.COORDINATOR_NOT_AVAILABLE, 100)
    with ProxiedCluster(reference, fault) as cluster:
        r, m = formed(cluster)
    assert len(r.rejoined) == REJOIN_TRIES and m.generation == -1
    assert fault.left == 100 - REJOIN_TRIES - 1


def test_not_coordinator_is_left_for_groups_r1_to_judge(reference) -> None:
    with ProxiedCluster(reference, JoinNotReady(ErrorCode.NOT_COORDINATOR, 1)) as cluster:
        r, m = formed(cluster)
    assert r.rejoined == [] and m.generation == -1
    assert next(iter(r.joins.values()))["ErrorCode"] == ErrorCode.NOT_COORDINATOR


def test_txn_r14_forms_its_group_through_a_not_ready_join(reference) -> None:
    """The TXN.R14 test (txn/offsets/group-aware) once had its own retry for this."""
    fault = JoinNotReady(ErrorCode.COORDINATOR_NOT_AVAILABLE, 1)
    with ProxiedCluster(reference, fault) as cluster:
        got = in_process.run(
            cluster, test_offsets.test_a_group_aware_commit_is_checked_against_the_member
        )
    assert got is None and fault.left == 0
