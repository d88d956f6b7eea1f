"""Group-coordinator and config bugs make the group, offset and config requirements they
break FAIL.

A reference cluster (embedded store) runs behind one proxy per broker (``faults_groups``),
addressed as an external target; each case injects a few bugs a real coordinator could have,
runs only the tests that meet them, and expects each bug's requirement to FAIL in the test that
checks it. OFFSETS.R7 needs a target the suite can restart: its suite test runs in-process
against the proxied reference given as one, and FAILs once the proxy answers OffsetFetch as a
coordinator that kept its offsets only in memory. The
requirements PASS against the reference itself in both stores
(``test_groups_reference.py``)."""

from __future__ import annotations

import pytest

from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.suite.kit import verify
from conformance.suite.kit.harness import Harness
from conformance.suite.offsets import test_commit_fetch
from conformance.targets.base import Endpoint, Target
from conformance.targets.reference import ReferenceTarget
from tests.support.faults_groups import (
    APPEND,
    DEFAULT_CONFIG,
    DELETE,
    SET,
    TOPIC_CONFIG,
    AssignmentToWrongMember,
    Faults,
    LeftMembersStayListed,
    ProxiedCluster,
    alter_applied_incrementally,
    assignments_not_described,
    codes,
    config_keys_ignored,
    config_source,
    empty_groups_unlisted,
    fetch_lists_extra_partition,
    generation_not_bumped,
    incremental_op,
    join_never_answered,
    metadata_dropped,
    metadata_to_followers,
    no_member_id_given,
    offset_delete_answered_as_asked,
    offset_delete_elsewhere,
    replace_code,
    run_through,
    state_renamed,
    unknown_offset_as_zero,
    unknown_topic_described,
    validate_only_ignored,
    values_not_validated,
    wrong_coordinator_id,
)
from tests.support.runs import failing, verdicts

SEED = "20261123"
CODEC = Codec.from_specs()
ROUNDS = "groups/membership/rounds"
MEMBER_ID = "groups/join/member-id-required"
EXPIRY = "groups/membership/session-expiry"
STATIC = "groups/membership/static-rejoin"
PROTOCOL = "groups/join/inconsistent-protocol-type"
DESCRIBE = "groups/describe/states-and-members"
LIST_DELETE = "groups/list-and-delete"
READ_BACK = "offsets/commit-fetch/read-back"
METADATA = "offsets/commit-fetch/metadata"
GENERATION = "offsets/commit/generation"
MACHINE = "groups/membership/state-machine"
CONFIG_MACHINE = "configs/topic/state-machine"
DEFAULTS = "configs/topic/default-sources"
OVERRIDE = "configs/topic/override-everywhere"
KEYS = "configs/describe/named-keys"
ALTER = "configs/alter/replaces-whole-set"
SET_DELETE = "configs/incremental/set-delete"
APPEND_SUBTRACT = "configs/incremental/append-subtract"
UNKNOWN_NAME = "configs/refusals/unknown-name"
INVALID_VALUE = "configs/refusals/invalid-value"
VALIDATE_ONLY = "configs/refusals/validate-only"
UNKNOWN_TOPIC = "configs/describe/unknown-topic"
UNKNOWN_TOPIC_ALTERED = "configs/alter/unknown-topic"
OFFSET_DELETE = "offsets/delete/empty-group"
OFFSET_DELETE_SUBSCRIBED = "offsets/delete/subscribed-topic"
UNKNOWN_ID = "offsets/topic-ids/commit-unknown-id"

#: case -> (answer faults, request faults, tests run, (test, requirement) pairs that FAIL)
CASES = {
    "coordinator-and-member-id": (
        (wrong_coordinator_id, no_member_id_given, config_source(DEFAULT_CONFIG, TOPIC_CONFIG)),
        (),
        (ROUNDS, MEMBER_ID, DEFAULTS),
        {(ROUNDS, "GROUPS.R1"), (MEMBER_ID, "GROUPS.R2"), (DEFAULTS, "CONFIGS.R1")},
    ),
    "join-never-answered": (
        (),
        (join_never_answered,),
        (PROTOCOL,),
        {(PROTOCOL, "GROUPS.R21")},
    ),
    "stable-group-misreported": (
        (state_renamed({"Stable": "PreparingRebalance"}),),
        (),
        (MACHINE,),
        {(MACHINE, "GROUPS.R13")},
    ),
    "stale-commit-accepted": (
        (replace_code({ApiKey.OFFSET_COMMIT}, ErrorCode.ILLEGAL_GENERATION, ErrorCode.NONE),),
        (),
        (MACHINE,),
        {(MACHINE, "GROUPS.R20")},
    ),
    "generation-not-bumped": (
        (
            generation_not_bumped,
            unknown_topic_described,
            replace_code(
                {ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS},
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                ErrorCode.NONE,
            ),
            # a commit naming an unknown topic id acknowledged as if it were known
            replace_code({ApiKey.OFFSET_COMMIT}, ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.NONE),
        ),
        (),
        (ROUNDS, GENERATION, UNKNOWN_TOPIC, UNKNOWN_TOPIC_ALTERED, UNKNOWN_ID),
        {
            (ROUNDS, "GROUPS.R3"),
            (GENERATION, "OFFSETS.R6"),
            (UNKNOWN_TOPIC, "CONFIGS.R10"),
            (UNKNOWN_TOPIC_ALTERED, "CONFIGS.R12"),
            (UNKNOWN_ID, "OFFSETS.R10"),
        },
    ),
    "metadata-to-followers": (
        (
            metadata_to_followers,
            empty_groups_unlisted,
            metadata_dropped,
            config_source(TOPIC_CONFIG, DEFAULT_CONFIG),
            replace_code(
                {ApiKey.ALTER_CONFIGS, ApiKey.INCREMENTAL_ALTER_CONFIGS},
                ErrorCode.INVALID_CONFIG,
                ErrorCode.NONE,
            ),
        ),
        (),
        (ROUNDS, LIST_DELETE, METADATA, OVERRIDE, UNKNOWN_NAME),
        {
            (ROUNDS, "GROUPS.R4"),
            (LIST_DELETE, "GROUPS.R15"),
            (METADATA, "OFFSETS.R1"),
            (OVERRIDE, "CONFIGS.R2"),
            (UNKNOWN_NAME, "CONFIGS.R6"),
        },
    ),
    "assignment-to-wrong-member": (
        (AssignmentToWrongMember(), assignments_not_described, fetch_lists_extra_partition),
        (alter_applied_incrementally, incremental_op(APPEND, SET), values_not_validated),
        (ROUNDS, DESCRIBE, READ_BACK, ALTER, APPEND_SUBTRACT, INVALID_VALUE),
        {
            (ROUNDS, "GROUPS.R5"),
            (DESCRIBE, "GROUPS.R14"),
            (READ_BACK, "OFFSETS.R5"),
            (ALTER, "CONFIGS.R3"),
            (APPEND_SUBTRACT, "CONFIGS.R5"),
            (INVALID_VALUE, "CONFIGS.R7"),
        },
    ),
    "stale-generation-accepted": (
        (
            replace_code(
                {ApiKey.HEARTBEAT, ApiKey.SYNC_GROUP, ApiKey.OFFSET_COMMIT},
                ErrorCode.ILLEGAL_GENERATION,
                ErrorCode.NONE,
            ),
            replace_code({ApiKey.DELETE_GROUPS}, ErrorCode.NON_EMPTY_GROUP, ErrorCode.NONE),
        ),
        (incremental_op(DELETE, None), validate_only_ignored, config_keys_ignored),
        (ROUNDS, GENERATION, LIST_DELETE, SET_DELETE, VALIDATE_ONLY, KEYS),
        {
            (ROUNDS, "GROUPS.R6"),
            (GENERATION, "OFFSETS.R3"),
            (LIST_DELETE, "GROUPS.R17"),
            (SET_DELETE, "CONFIGS.R4"),
            (VALIDATE_ONLY, "CONFIGS.R8"),
            (KEYS, "CONFIGS.R11"),
        },
    ),
    "unknown-member-accepted": (
        (
            replace_code(
                {ApiKey.HEARTBEAT, ApiKey.SYNC_GROUP, ApiKey.LEAVE_GROUP},
                ErrorCode.UNKNOWN_MEMBER_ID,
                ErrorCode.NONE,
            ),
            replace_code({ApiKey.OFFSET_COMMIT}, ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID),
            config_source(TOPIC_CONFIG, DEFAULT_CONFIG, spare_bootstrap=True),
        ),
        (),
        (ROUNDS, EXPIRY, READ_BACK, OVERRIDE, CONFIG_MACHINE),
        {
            (ROUNDS, "GROUPS.R7"),
            (ROUNDS, "GROUPS.R9"),  # the member that left: its Heartbeat is answered NONE
            (EXPIRY, "GROUPS.R10"),
            (READ_BACK, "OFFSETS.R4"),
            (OVERRIDE, "CONFIGS.R9"),
            (CONFIG_MACHINE, "CONFIGS.R9"),
        },
    ),
    "rebalance-hidden": (
        (
            replace_code({ApiKey.HEARTBEAT}, ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.NONE),
            state_renamed({"Dead": "Empty"}),
            replace_code({ApiKey.DELETE_GROUPS}, ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.NONE),
        ),
        (),
        (ROUNDS, DESCRIBE, LIST_DELETE),
        {(ROUNDS, "GROUPS.R8"), (DESCRIBE, "GROUPS.R13"), (LIST_DELETE, "GROUPS.R19")},
    ),
    "left-member-listed": (
        (
            LeftMembersStayListed(),
            replace_code({ApiKey.HEARTBEAT}, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.NONE),
            replace_code(
                {ApiKey.JOIN_GROUP}, ErrorCode.INCONSISTENT_GROUP_PROTOCOL, ErrorCode.NONE
            ),
            state_renamed({"Empty": "Stable"}, (ApiKey.LIST_GROUPS,)),
        ),
        (),
        (ROUNDS, STATIC, PROTOCOL, LIST_DELETE),
        {
            (ROUNDS, "GROUPS.R9"),
            (STATIC, "GROUPS.R11"),
            (PROTOCOL, "GROUPS.R12"),
            (LIST_DELETE, "GROUPS.R16"),
        },
    ),
    "offset-delete-not-applied": (
        (
            offset_delete_answered_as_asked,
            replace_code(
                {ApiKey.OFFSET_DELETE}, ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.NONE
            ),
        ),
        (offset_delete_elsewhere,),
        (OFFSET_DELETE, OFFSET_DELETE_SUBSCRIBED),
        {(OFFSET_DELETE, "OFFSETS.R8"), (OFFSET_DELETE_SUBSCRIBED, "OFFSETS.R9")},
    ),
    "unknown-offset-as-zero": (
        (unknown_offset_as_zero,),
        (),
        (READ_BACK, LIST_DELETE),
        {(READ_BACK, "OFFSETS.R2"), (LIST_DELETE, "GROUPS.R18")},
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_bug_fails_its_requirement(cli, reference, case: str) -> None:
    bugs, request_bugs, select, expected = CASES[case]
    faults = Faults(bugs, request_bugs)
    run = run_through(cli, reference, " or ".join(select), faults, SEED)
    assert faults.hits, f"{case}: no answer was rewritten"
    assert expected <= failing(run), sorted(verdicts(run).items())
    # the bugs touch nothing else: the requirements of other tests still pass
    others = {k: v for k, v in verdicts(run).items() if k[0] not in {t for t, _ in expected}}
    assert set(others.values()) <= {"PASS"}, others


# --- OFFSETS.R7: offsets that do not survive the coordinator's restart ----------------------


class ProxiedRestartable(Target):
    """The reference behind ``proxied``, as a target the suite can restart: restarting a
    broker restarts the real one, and then marks ``forgetful`` restarted (if given)."""

    def __init__(self, reference: ReferenceTarget, proxied: ProxiedCluster, forgetful=None):
        endpoints = {n: Endpoint("127.0.0.1", p.port) for n, p in proxied.proxies.items()}
        super().__init__(
            kind="external",
            name="proxied",
            bootstrap=list(endpoints.values()),
            restartable=endpoints,
        )
        self.reference, self.forgetful = reference, forgetful

    def restart_broker(self, node_id: int) -> None:
        self.reference.restart_broker(node_id)
        if self.forgetful is not None:
            self.forgetful.restarted = True


class OffsetsInMemory:
    """A coordinator that keeps committed offsets only in memory: once its broker restarted,
    OffsetFetch answers -1 and no metadata for every partition asked."""

    __name__ = "offsets_in_memory"

    def __init__(self) -> None:
        self.restarted = False

    def __call__(self, api: int, version: int, body: dict) -> bool:
        if api != ApiKey.OFFSET_FETCH or not self.restarted:
            return False
        hit = list(codes(body, "CommittedOffset"))
        for p in hit:
            p["CommittedOffset"], p["Metadata"] = -1, ""
        return bool(hit)


def survive_restart(reference: ReferenceTarget, faults: Faults, forgetful=None):
    """OFFSETS.R7's suite test, in-process, against the proxied reference: its failure or
    None."""
    with ProxiedCluster(dict(reference.restartable), faults) as proxied:
        harness = Harness(ProxiedRestartable(reference, proxied, forgetful), CODEC, seed=1)
        try:
            harness.open()
            test_commit_fetch.test_offsets_survive_coordinator_restart(harness)
        except verify.Failed as e:
            return e
        finally:
            harness.close()
    return None


def test_offsets_kept_only_in_memory_fail_offsets_r7(reference) -> None:
    assert survive_restart(reference, Faults(())) is None  # the reference keeps them
    forgetful = OffsetsInMemory()
    faults = Faults((forgetful,))
    failure = survive_restart(reference, faults, forgetful)
    assert faults.hits.get("offsets_in_memory"), "no OffsetFetch answer was rewritten"
    assert failure is not None and failure.req_ids == ("OFFSETS.R7",), failure
    assert "after restarting the coordinator" in str(failure), failure
