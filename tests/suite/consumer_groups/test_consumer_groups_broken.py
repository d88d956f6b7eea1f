"""KIP-848 coordinator bugs make the CONSUMER-GROUPS requirements they break FAIL.

A reference cluster (embedded store) runs behind one proxy per broker
(``tests.support.faults_groups.ProxiedCluster``); each case injects a few bugs
(``faults_consumer_groups`` and refusals turned into acceptances), runs only the tests that meet
them and expects each bug's requirement to FAIL. The requirements PASS against the reference in
both stores (``test_consumer_groups_reference.py``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.protocol import ApiKey, ErrorCode
from tests.support.faults_consumer_groups import (
    EpochGoesBack,
    classic_group_described_dead,
    classic_member_made_leader,
    classic_member_typed_consumer,
    consumer_group_described_as_classic,
    leave_keeps_epoch,
    no_heartbeat_interval,
    partition_zero_to_everyone,
    partitions_beyond_one_withheld,
    regex_not_described,
    second_topic_withheld,
)
from tests.support.faults_groups import BodyFault, Faults, replace_code, run_through
from tests.support.runs import failing, verdicts

SEED = "20261128"
JOIN = "consumer-groups/heartbeat/join-reconcile-leave"
FENCING = "consumer-groups/heartbeat/fencing-and-static"
DESCRIBE = "consumer-groups/describe-list-commit"
CONFIGS = "consumer-groups/configs/bounds-and-interval"
GROWN = "consumer-groups/heartbeat/new-partitions"
REGEX = "consumer-groups/heartbeat/regex-new-topic"
DELETE = "consumer-groups/delete"
MODEL = "consumer-groups/members/state-machine"
ASSIGNOR = "consumer-groups/heartbeat/server-assignor"
OFFSETS = "consumer-groups/offsets/member-checks"
CLASSIC = "consumer-groups/describe-groups/classic-api"
STUCK = "consumer-groups/heartbeat/rebalance-timeout"
SILENT = "consumer-groups/heartbeat/session-timeout"
NOT_CONSUMER = "consumer-groups/heartbeat/classic-group-not-consumer"
MIXED = "consumer-groups/migration/classic-member"
MIGRATE = "consumer-groups/migration/upgrade-downgrade"


def only(api: int) -> set[int]:
    return {api}


HEARTBEAT = only(ApiKey.CONSUMER_GROUP_HEARTBEAT)

#: case -> (answer faults (made afresh per run), tests run, (test, requirement) pairs that FAIL)
CASES: dict[str, tuple[Callable[[], tuple[BodyFault, ...]], tuple[str, ...], set]] = {
    "two-owners-fencing-ignored-describe-finds-all-classic-taken": (
        lambda: (
            partition_zero_to_everyone,
            replace_code(HEARTBEAT, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.NONE),
            replace_code(
                only(ApiKey.CONSUMER_GROUP_DESCRIBE),
                ErrorCode.GROUP_ID_NOT_FOUND,
                ErrorCode.NONE,
            ),
            replace_code(only(ApiKey.DELETE_GROUPS), ErrorCode.NON_EMPTY_GROUP, ErrorCode.NONE),
            replace_code(HEARTBEAT, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NONE),
        ),
        (JOIN, FENCING, DESCRIBE, DELETE, NOT_CONSUMER),
        {
            (JOIN, "CONSUMER-GROUPS.R3"),
            (FENCING, "CONSUMER-GROUPS.R4"),
            (DESCRIBE, "CONSUMER-GROUPS.R7"),
            (DELETE, "CONSUMER-GROUPS.R12"),
            (NOT_CONSUMER, "CONSUMER-GROUPS.R20"),
        },
    ),
    "no-interval-leave-kept-instance-taken-stale-commit-assignor-fetch-describe": (
        lambda: (
            no_heartbeat_interval,
            leave_keeps_epoch,
            replace_code(HEARTBEAT, ErrorCode.UNRELEASED_INSTANCE_ID, ErrorCode.NONE),
            replace_code(only(ApiKey.OFFSET_COMMIT), ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.NONE),
            replace_code(
                only(ApiKey.INCREMENTAL_ALTER_CONFIGS), ErrorCode.INVALID_CONFIG, ErrorCode.NONE
            ),
            replace_code(HEARTBEAT, ErrorCode.UNSUPPORTED_ASSIGNOR, ErrorCode.NONE),
            replace_code(only(ApiKey.OFFSET_FETCH), ErrorCode.STALE_MEMBER_EPOCH, ErrorCode.NONE),
            consumer_group_described_as_classic,
        ),
        (JOIN, FENCING, DESCRIBE, CONFIGS, ASSIGNOR, OFFSETS, CLASSIC),
        {
            (JOIN, "CONSUMER-GROUPS.R1"),
            (JOIN, "CONSUMER-GROUPS.R5"),
            (FENCING, "CONSUMER-GROUPS.R6"),
            (DESCRIBE, "CONSUMER-GROUPS.R8"),
            (CONFIGS, "CONSUMER-GROUPS.R9"),
            (ASSIGNOR, "CONSUMER-GROUPS.R15"),
            (OFFSETS, "CONSUMER-GROUPS.R16"),
            (CLASSIC, "CONSUMER-GROUPS.R17"),
        },
    ),
    "new-partitions-regex-second-topic-withheld-removed-member-kept-migration-broken": (
        lambda: (
            partitions_beyond_one_withheld,
            regex_not_described,
            second_topic_withheld,
            replace_code(HEARTBEAT, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.NONE),
            classic_member_made_leader,
            classic_member_typed_consumer,
            classic_group_described_dead,
        ),
        (GROWN, REGEX, MODEL, STUCK, SILENT, MIXED, MIGRATE),
        {
            (GROWN, "CONSUMER-GROUPS.R10"),
            (REGEX, "CONSUMER-GROUPS.R11"),
            (MODEL, "CONSUMER-GROUPS.R14"),
            (STUCK, "CONSUMER-GROUPS.R18"),
            (SILENT, "CONSUMER-GROUPS.R19"),
            (MIXED, "CONSUMER-GROUPS.R21"),
            (MIGRATE, "CONSUMER-GROUPS.R22"),
            (MIGRATE, "CONSUMER-GROUPS.R23"),
        },
    ),
    "epoch-goes-back": (
        lambda: (EpochGoesBack(),),
        (JOIN, MODEL),
        {(JOIN, "CONSUMER-GROUPS.R2"), (MODEL, "CONSUMER-GROUPS.R13")},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bug_fails_its_requirement(cli, reference, case: str) -> None:
    make, select, expected = CASES[case]
    faults = Faults(make())
    run = run_through(cli, reference, " or ".join(select), faults, SEED)
    assert faults.hits, f"{case}: no answer was rewritten"
    assert expected <= failing(run), sorted(verdicts(run).items())
