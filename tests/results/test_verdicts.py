"""The verdict logic: levels, strictness, the not-applicable outcomes, target faults."""

from __future__ import annotations

import pytest

from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol.errors import DecodeError
from conformance.requirements import requirements
from conformance.results.policy import Phase, requirement_verdicts
from conformance.results.verdicts import (
    MissingPrecondition,
    NotEvaluated,
    NotExposed,
    ProposalAbsent,
    Unsupported,
    Verdict,
    is_target_fault,
    verdict_for,
)
from conformance.suite.kit import credit, verify
from conformance.suite.kit.credit import Ledger
from conformance.suite.kit.verify import Failed


def test_pass_is_pass_at_every_level() -> None:
    for level in ("MUST", "SHOULD", "MAY"):
        assert verdict_for("passed", level) is Verdict.PASS
        assert verdict_for("passed", level, strict=True) is Verdict.PASS


@pytest.mark.parametrize(
    "exc",
    [
        AssertionError("x"),
        ConnectionClosed("x"),
        ProtocolViolation("x"),
        TimeoutError(),
        DecodeError("M", "f", 3, "bad"),
    ],
)
def test_target_faults_fail_a_must_and_are_nonstrict_for_a_should(exc) -> None:
    assert verdict_for("failed", "MUST", exc=exc) is Verdict.FAIL
    assert verdict_for("failed", "SHOULD", exc=exc) is Verdict.NONSTRICT
    assert verdict_for("failed", "MAY", exc=exc) is Verdict.NONSTRICT


def test_strict_turns_nonstrict_into_fail() -> None:
    assert verdict_for("failed", "SHOULD", strict=True, exc=AssertionError()) is Verdict.FAIL
    assert verdict_for("failed", "MAY", strict=True, exc=AssertionError()) is Verdict.FAIL


@pytest.mark.parametrize("exc", [KeyError("k"), TypeError("t"), RuntimeError("r")])
def test_a_broken_suite_is_error_never_fail(exc) -> None:
    assert verdict_for("failed", "MUST", exc=exc) is Verdict.ERROR
    assert verdict_for("failed", "SHOULD", strict=True, exc=exc) is Verdict.ERROR


@pytest.mark.parametrize(
    ("exc", "verdict"),
    [
        (Unsupported("Metadata v13 not advertised"), Verdict.UNSUPPORTED),
        (NotExposed("BrokerRegistration is not on the client listener"), Verdict.NOT_EXPOSED),
        (ProposalAbsent("no start time"), Verdict.PROPOSAL_ABSENT),
        (MissingPrecondition("no ZooKeeper connect string (--zookeeper)"), Verdict.SKIP),
        (
            NotEvaluated("target unreachable since protocol/robustness/invalid-varint"),
            Verdict.NOT_EVALUATED,
        ),
    ],
)
def test_not_applicable_outcomes_are_never_fail(exc, verdict) -> None:
    for level in ("MUST", "SHOULD"):
        assert verdict_for("skipped", level, exc=exc) is verdict
        assert verdict_for("skipped", level, strict=True, exc=exc) is verdict
    assert str(exc).startswith(f"{verdict.value}: ")
    assert isinstance(exc, pytest.skip.Exception)


def test_a_plain_skip_is_skip() -> None:
    assert verdict_for("skipped", "MUST", exc=pytest.skip.Exception("no")) is Verdict.SKIP


def test_exception_groups_are_target_faults_only_when_all_members_are() -> None:
    assert is_target_fault(ExceptionGroup("g", [AssertionError(), TimeoutError()]))
    assert not is_target_fault(ExceptionGroup("g", [AssertionError(), KeyError()]))
    assert verdict_for("failed", "MUST", exc=ExceptionGroup("g", [KeyError()])) is Verdict.ERROR


def test_unknown_level_or_outcome_is_refused() -> None:
    with pytest.raises(ValueError, match="level"):
        verdict_for("passed", "MUSTN'T")
    with pytest.raises(ValueError, match="outcome"):
        verdict_for("xpassed", "MUST")


# --- one verdict per requirement of a test (the plugin's attribution) -------------------------

REQS = ("PROTOCOL.R1", "PROTOCOL.R3", "PROTOCOL.R5")  # MUST, MUST, SHOULD


def _checked(*req_ids: str) -> Ledger:
    ledger = Ledger()
    ledger.ran(req_ids, "seen")
    return ledger


def _run(
    call: Phase | None,
    soft: dict | None = None,
    strict: bool = False,
    setup=None,
    ledger: Ledger | None = None,
    messages: bool = False,
):
    phases = {"setup": setup or Phase("passed", None, 0, "")}
    if call is not None:
        phases["call"] = call
    ledger = ledger if ledger is not None else _checked(*REQS)
    levels = [(rid, requirements()[rid].level) for rid in REQS]
    out = requirement_verdicts(levels, phases, soft=soft or {}, credits=ledger, strict=strict)
    if messages:
        return {rid: (v.value, m) for rid, v, m in out}
    return {rid: v.value for rid, v, _ in out}


def test_a_check_fails_only_the_requirements_it_names() -> None:
    exc = Failed("does not decode", "PROTOCOL.R3")
    got = _run(Phase("failed", exc, 0, str(exc)), ledger=_checked("PROTOCOL.R3"))
    assert got == {"PROTOCOL.R1": "SKIP", "PROTOCOL.R3": "FAIL", "PROTOCOL.R5": "SKIP"}


def test_the_others_are_judged_on_what_came_back_before_the_failure() -> None:
    """R1's checks ran (and held) before R3's failed: R1 is PASS; R5 was never checked: SKIP
    "not evaluated", naming the failure that stopped the test."""
    exc = Failed("does not decode", "PROTOCOL.R3")
    got = _run(
        Phase("failed", exc, 0, str(exc)),
        ledger=_checked("PROTOCOL.R1", "PROTOCOL.R3"),
        messages=True,
    )
    assert got["PROTOCOL.R1"] == ("PASS", None)
    assert got["PROTOCOL.R3"][0] == "FAIL"
    verdict, message = got["PROTOCOL.R5"]
    assert verdict == "SKIP" and message.startswith("not evaluated: the test stopped at a failure")
    assert "PROTOCOL.R3" in message


def test_a_check_naming_none_of_the_tests_requirements_fails_them_all() -> None:
    exc = Failed("closed", "KIP-78.R1")
    got = _run(Phase("failed", exc, 0, str(exc)))
    assert got == {"PROTOCOL.R1": "FAIL", "PROTOCOL.R3": "FAIL", "PROTOCOL.R5": "NONSTRICT"}


def test_soft_failures_touch_only_their_requirement() -> None:
    passed = Phase("passed", None, 0, "")
    soft = {"PROTOCOL.R5": "code 99 not documented"}
    assert _run(passed, soft) == {
        "PROTOCOL.R1": "PASS",
        "PROTOCOL.R3": "PASS",
        "PROTOCOL.R5": "NONSTRICT",
    }
    assert _run(passed, soft, strict=True)["PROTOCOL.R5"] == "FAIL"


def test_setup_outcomes() -> None:
    broken = Phase("failed", RuntimeError("fixture"), 0, "fixture")
    assert set(_run(None, setup=broken).values()) == {"ERROR"}
    unsupported = Unsupported("Fetch v4 not advertised")
    skipped = Phase("skipped", unsupported, 0, unsupported.reason)
    assert set(_run(None, setup=skipped).values()) == {"UNSUPPORTED"}


# --- crediting: a PASS needs a check that ran -------------------------------------------------


def test_a_passed_test_credits_only_the_requirements_a_check_ran_for() -> None:
    passed = Phase("passed", None, 0, "")
    got = _run(passed, ledger=_checked("PROTOCOL.R1"), messages=True)
    assert got["PROTOCOL.R1"] == ("PASS", None)
    for rid in ("PROTOCOL.R3", "PROTOCOL.R5"):
        verdict, message = got[rid]
        assert verdict == "SKIP" and f"no check of {rid} ran" in message


def test_a_requirement_the_target_gave_no_way_to_check_says_why() -> None:
    ledger = _checked("PROTOCOL.R1")
    ledger.cannot(Unsupported("DescribeCluster is not advertised"), ["PROTOCOL.R3"])
    got = _run(Phase("passed", None, 0, ""), ledger=ledger, messages=True)
    assert got["PROTOCOL.R3"] == ("UNSUPPORTED", "DescribeCluster is not advertised")
    # a check that did run for it after all credits it
    ledger.ran(["PROTOCOL.R3"], "Metadata v12 answered")
    assert _run(Phase("passed", None, 0, ""), ledger=ledger)["PROTOCOL.R3"] == "PASS"


def test_checks_record_what_they_saw_per_requirement_and_need_an_id() -> None:
    ledger = credit.begin()
    verify.check(True, "cluster id 'x' is not 22 characters", "KIP-78.R4")
    verify.check(True, "ignored", "KIP-78.R4", "KIP-78.R3", saw="cluster id 'abc'")
    with pytest.raises(Failed) as failed:
        verify.check(False, "cluster id 'a b' has a space", "KIP-78.R3")
    assert ledger.observed["KIP-78.R4"].record() == {
        "checks": 2,
        "failed": 0,
        "seen": ["held (it fails as: cluster id 'x' is not 22 characters)", "cluster id 'abc'"],
    }
    assert ledger.observed["KIP-78.R3"].record()["failed"] == 1
    # the statement stands beside the id in the failure
    assert str(failed.value).startswith("KIP-78.R3 (The cluster id consists only of")
    assert failed.value.detail == "cluster id 'a b' has a space"
    with pytest.raises(ValueError, match="names the requirement"):
        verify.check(True, "a check naming nothing")


def test_an_api_missing_only_for_set_up_is_skip_for_the_requirements_that_do_not_judge_it() -> None:
    """GROUPS.R3 judges JoinGroup, GROUPS.R13 DescribeGroups: a target without DescribeGroups
    leaves R13 UNSUPPORTED, and R3 (its test observes through DescribeGroups) SKIP "set-up
    needs", counted by the run with what could not be set up; a skip naming no API, or a policy
    given no ``judges``, keeps the verdict the skip names."""
    from conformance.protocol import ApiKey
    from conformance.results.summary import SET_UP_NEEDS

    reqs = requirements()

    def judges(rid: str, key: int) -> bool:
        return any(a.key == key for a in reqs[rid].apis)

    ids = ("GROUPS.R3", "GROUPS.R13")
    levels = [(rid, reqs[rid].level) for rid in ids]
    exc = Unsupported("DescribeGroups is not advertised", ApiKey.DESCRIBE_GROUPS)
    phases = {"setup": Phase("passed", None, 0, ""), "call": Phase("skipped", exc, 0, str(exc))}
    out = {
        r: (v, m)
        for r, v, m in requirement_verdicts(
            levels, phases, soft={}, credits=Ledger(), judges=judges
        )
    }
    assert out["GROUPS.R13"][0] is Verdict.UNSUPPORTED
    assert out["GROUPS.R3"][0] is Verdict.SKIP
    assert out["GROUPS.R3"][1].startswith(SET_UP_NEEDS) and "DescribeGroups" in out["GROUPS.R3"][1]
    # the same skip from a fixture (setup phase) is judged alike
    early = {"setup": Phase("skipped", exc, 0, str(exc))}
    got = {
        r: v
        for r, v, _ in requirement_verdicts(levels, early, soft={}, credits=Ledger(), judges=judges)
    }
    assert got == {"GROUPS.R3": Verdict.SKIP, "GROUPS.R13": Verdict.UNSUPPORTED}
    # no API named, or no judges given: as before
    bare = {
        "setup": Phase("passed", None, 0, ""),
        "call": Phase("skipped", Unsupported("x"), 0, "x"),
    }
    got = {
        r: v
        for r, v, _ in requirement_verdicts(levels, bare, soft={}, credits=Ledger(), judges=judges)
    }
    assert set(got.values()) == {Verdict.UNSUPPORTED}
    got = {r: v for r, v, _ in requirement_verdicts(levels, phases, soft={}, credits=Ledger())}
    assert set(got.values()) == {Verdict.UNSUPPORTED}
