"""KIP-932 share-group bugs make the SHARE-GROUPS requirements they break FAIL.

A reference cluster (embedded store) runs behind one proxy per broker
(``tests.support.faults_groups.ProxiedCluster``); each case injects a few bugs
(``faults_share_groups`` and refusals turned into acceptances), runs only the tests that meet
them and expects each bug's requirement to FAIL. The requirements PASS against the reference
(``test_share_groups_reference.py``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from conformance.protocol import ApiKey, ErrorCode
from tests.support.faults_consumer_groups import EpochGoesBack
from tests.support.faults_groups import BodyFault, Faults, replace_code, run_through
from tests.support.faults_share_groups import (
    NeverShared,
    delivery_count_stuck,
    lag_unsaid,
    leave_keeps_epoch,
    log_start_withheld,
    member_id_not_kept,
    ranges_widened,
    renew_lock_unsaid,
    share_type_hidden,
    start_offset_unsaid,
    unknown_start_as_zero,
)
from tests.support.runs import failing, verdicts

SEED = "20261128"
JOIN = "share-groups/heartbeat/join-share-leave"
ERRORS = "share-groups/heartbeat/errors"
SESSIONS = "share-groups/fetch/session-epochs"
ACQUIRE = "share-groups/fetch/acquisition"
ACKS = "share-groups/acknowledge/accept-release-reject"
LIMIT = "share-groups/acknowledge/delivery-limit"
RESET = "share-groups/fetch/auto-offset-reset"
LISTED = "share-groups/admin/list-and-delete"
OFFSETS = "share-groups/admin/offsets"
SILENT = "share-groups/heartbeat/session-timeout"
RENEW = "share-groups/acknowledge/renew"
RECORD_LIMIT = "share-groups/fetch/record-limit"
START = "share-groups/admin/start-offset"
HEARTBEAT = {ApiKey.SHARE_GROUP_HEARTBEAT}
SESSION_APIS = {ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE}

#: case -> (answer faults (made afresh per run), tests run, (test, requirement) pairs that FAIL)
CASES: dict[str, tuple[Callable[[], tuple[BodyFault, ...]], tuple[str, ...], set]] = {
    "membership-errors-sessions-counts-admin": (
        lambda: (
            member_id_not_kept,
            NeverShared(),
            leave_keeps_epoch,
            replace_code(HEARTBEAT, ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.NONE),
            replace_code(HEARTBEAT, ErrorCode.INVALID_REQUEST, ErrorCode.NONE),
            replace_code(
                {ApiKey.SHARE_GROUP_DESCRIBE}, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NONE
            ),
            replace_code(SESSION_APIS, ErrorCode.INVALID_SHARE_SESSION_EPOCH, ErrorCode.NONE),
            replace_code(
                {ApiKey.SHARE_ACKNOWLEDGE}, ErrorCode.INVALID_RECORD_STATE, ErrorCode.NONE
            ),
            delivery_count_stuck,
            share_type_hidden,
            replace_code({ApiKey.DELETE_GROUPS}, ErrorCode.NON_EMPTY_GROUP, ErrorCode.NONE),
            unknown_start_as_zero,
            replace_code(
                {ApiKey.ALTER_SHARE_GROUP_OFFSETS}, ErrorCode.NON_EMPTY_GROUP, ErrorCode.NONE
            ),
            replace_code(
                {ApiKey.DELETE_SHARE_GROUP_OFFSETS}, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NONE
            ),
            replace_code(HEARTBEAT, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.NONE),
            lag_unsaid,
        ),
        (JOIN, ERRORS, SESSIONS, ACKS, LISTED, OFFSETS, SILENT, START),
        {
            (JOIN, "SHARE-GROUPS.R1"),
            (JOIN, "SHARE-GROUPS.R3"),
            (JOIN, "SHARE-GROUPS.R4"),
            (JOIN, "SHARE-GROUPS.R7"),
            (ERRORS, "SHARE-GROUPS.R5"),
            (ERRORS, "SHARE-GROUPS.R6"),
            (SESSIONS, "SHARE-GROUPS.R8"),
            (ACKS, "SHARE-GROUPS.R11"),
            (ACKS, "SHARE-GROUPS.R12"),
            (LISTED, "SHARE-GROUPS.R15"),
            (LISTED, "SHARE-GROUPS.R16"),
            (OFFSETS, "SHARE-GROUPS.R17"),
            (OFFSETS, "SHARE-GROUPS.R18"),
            (OFFSETS, "SHARE-GROUPS.R19"),
            (SILENT, "SHARE-GROUPS.R20"),
            (START, "SHARE-GROUPS.R26"),
        },
    ),
    "counts-stuck-ranges-widened-renew-lock-start-offset-unsaid": (
        lambda: (delivery_count_stuck, ranges_widened, renew_lock_unsaid, start_offset_unsaid),
        (ACQUIRE, LIMIT, RENEW, RECORD_LIMIT, START),
        {
            (ACQUIRE, "SHARE-GROUPS.R9"),
            (ACQUIRE, "SHARE-GROUPS.R10"),
            (LIMIT, "SHARE-GROUPS.R13"),
            (RENEW, "SHARE-GROUPS.R23"),
            (RECORD_LIMIT, "SHARE-GROUPS.R24"),
            (START, "SHARE-GROUPS.R25"),
        },
    ),
    "epoch-back-log-start-withheld": (
        lambda: (EpochGoesBack(ApiKey.SHARE_GROUP_HEARTBEAT), log_start_withheld),
        (JOIN, RESET),
        {(JOIN, "SHARE-GROUPS.R2"), (RESET, "SHARE-GROUPS.R14")},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bug_fails_its_requirement(cli, reference, case: str) -> None:
    make, select, expected = CASES[case]
    faults = Faults(make())
    run = run_through(cli, reference, " or ".join(select), faults, SEED)
    assert faults.hits, (f"{case}: no answer was rewritten", sorted(verdicts(run).items()))
    assert expected <= failing(run), sorted(verdicts(run).items())
