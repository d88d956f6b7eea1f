"""The DURABILITY scenarios against the reference: a leader kill that PASSes, and every
DURABILITY requirement FAILing against a broker fault switched on by
``tests.support.faulty_reference`` (``reference_impl/replica/faults.py``), so that each check is
shown able to fail. Faults that do not mask one another share a run (one cluster start each).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conformance.targets.base import CANNOT_STOP
from conformance.targets.tansu import TansuTarget
from tests.support.runs import only_run, suite_pytest

LEADER_KILL = "durability/leader-kill/idempotent-producer"
FOLLOWER_KILL = "durability/follower-kill/isr-shrinks-and-grows"
CLUSTER_KILL = "durability/cluster-kill/restart"
MIN_ISR = "durability/min-isr/not-enough-replicas"
UNCLEAN = "durability/unclean-election/off-by-default"
#: SHARE-GROUPS.R21 rides on the first case's run (one cluster start fewer; issue 39)
SHARE_RESTART = "share-groups/restart/acknowledged-stay-done"
#: and SHARE-GROUPS.R22 (not disruptive: it runs first)
SHARE_ISOLATION = "share-groups/isolation/read-committed"


def run_scenarios(tmp_path: Path, select: str, faults: str = "") -> dict[tuple[str, str], str]:
    """(test id, requirement id) -> verdict of one run against the reference; no ERROR."""
    results = tmp_path / "results"
    args = ["-p", "tests.support.faulty_reference", f"--select={select}"]
    args.append(f"--results-dir={results}")
    if faults:
        args.append(f"--broker-faults={faults}")
    proc = suite_pytest(*args, timeout=240)
    run = only_run(results)
    assert run.manifest["target_name"] == ("faulty-reference" if faults else "reference")
    got = {(r["test_id"], r["requirement_id"]): r["verdict"] for r in run.records}
    errors = [r for r in run.records if r["verdict"] == "ERROR"]
    assert got and not errors, (errors, proc.stdout[-3000:])
    return got


def test_a_leader_kill_keeps_every_acknowledged_record(tmp_path: Path) -> None:
    got = run_scenarios(tmp_path, LEADER_KILL)
    assert set(got.values()) == {"PASS"}, got
    assert len(got) == 4, got


@pytest.mark.parametrize(
    ("select", "faults", "failing"),
    [
        (
            f"{LEADER_KILL} or {SHARE_RESTART} or {SHARE_ISOLATION}",
            "ack_before_replication,forget_share_state,share_read_uncommitted",
            {
                (LEADER_KILL, "R1"),
                (SHARE_RESTART, "SHARE-GROUPS.R21"),
                (SHARE_ISOLATION, "SHARE-GROUPS.R22"),
            },
        ),
        (
            f"{LEADER_KILL} or {MIN_ISR}",
            "no_duplicate_check,hide_first_batch,ignore_min_insync_replicas",
            {(LEADER_KILL, "R2"), (LEADER_KILL, "R4"), (MIN_ISR, "R7")},
        ),
        (
            f"{FOLLOWER_KILL} or {CLUSTER_KILL} or {UNCLEAN}",
            "never_expand_isr,forget_log_on_start,unclean_leader_election",
            {
                (FOLLOWER_KILL, "R6"),
                (CLUSTER_KILL, "R1"),
                (CLUSTER_KILL, "R3"),
                (CLUSTER_KILL, "R5"),
                (UNCLEAN, "R8"),
            },
        ),
        # R7 again, answered 19 as it should be: its read-back (and high watermark) checks
        (MIN_ISR, "append_refused", {(MIN_ISR, "R7")}),
    ],
    ids=[
        "ack-before-replication-share-state-forgotten-share-uncommitted",
        "duplicates-hole-min-isr",
        "isr-never-grows-log-forgotten-unclean-election",
        "refused-batch-appended",
    ],
)
def test_each_requirement_fails_against_a_fault(
    tmp_path: Path, select: str, faults: str, failing: set[tuple[str, str]]
) -> None:
    got = run_scenarios(tmp_path, select, faults)
    failed = {(t, r.removeprefix("DURABILITY.")) for (t, r), v in got.items() if v == "FAIL"}
    assert failing <= failed, got


def test_every_requirement_has_a_failing_fault() -> None:
    """The cases above cover every DURABILITY requirement (written without their prefix; the
    SHARE-GROUPS requirements that ride on the first case keep theirs and are not counted)."""
    from conformance.requirements import requirements

    ids = {r.id.removeprefix("DURABILITY.") for r in requirements() if r.feature == "DURABILITY"}
    cases = test_each_requirement_fails_against_a_fault.pytestmark[0].args[1]
    covered = {r for _, _, failing in cases for _, r in failing if "." not in r}
    assert ids == covered, ids ^ covered


def test_an_external_target_is_unsupported(cli) -> None:
    """Nothing the suite does not run is stopped: every scenario is UNSUPPORTED, at once."""
    with TansuTarget() as tansu:
        _, run = cli("--bootstrap-server", str(tansu.bootstrap[0]), "--select", "durability")
    assert run is not None
    records = [r for r in run.records if r["feature"] == "durability"]
    assert records and {r["verdict"] for r in records} == {"UNSUPPORTED"}, records
    assert all(r["message"] == CANNOT_STOP for r in records), records
