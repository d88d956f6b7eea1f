"""The verdict logic: levels, strictness, the not-applicable outcomes, target faults."""

from __future__ import annotations

import pytest

from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol.errors import DecodeError
from conformance.results.verdicts import (
    MissingPrecondition,
    NotExposed,
    ProposalAbsent,
    Unsupported,
    Verdict,
    is_target_fault,
    verdict_for,
)


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
