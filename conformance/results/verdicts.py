"""Verdicts: what one (test, requirement) pair came to, and how a test's outcome maps to one.

The mapping is the suite's promise to its users: nothing the target does not claim to support is
ever FAIL, nothing vacuous is ever PASS, and a SHOULD that is not met is NONSTRICT unless the run
is strict. A test signals "not applicable" by raising one of the ``NotApplicable`` outcomes below
(they are pytest skips, so plain pytest reports them as skipped with the reason); everything else
is decided by the requirement's level and whether the test's checks held.
"""

from __future__ import annotations

import enum

import pytest

from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol.errors import DecodeError


class Verdict(enum.StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    #: the suite itself broke (a bug, or an environment failure that is not the target's fault)
    ERROR = "ERROR"
    #: a SHOULD (or MAY) requirement not met; FAIL under --strict
    NONSTRICT = "NONSTRICT"
    #: the target does not advertise the API version the requirement needs (ApiVersions)
    UNSUPPORTED = "UNSUPPORTED"
    #: the API is not on the listener under test, per the spec's ``listeners``
    NOT_EXPOSED = "NOT_EXPOSED"
    #: a proposal (never-adopted KIP) feature the target does not implement
    PROPOSAL_ABSENT = "PROPOSAL_ABSENT"
    #: an environment precondition is missing (named in the message)
    SKIP = "SKIP"
    #: the run never got to judge it: the target had gone down earlier in the run (the message
    #: names the test during which it went down); says nothing of the target's conformance
    NOT_EVALUATED = "NOT_EVALUATED"
    #: only in aggregation over runs: mixed outcomes
    FLAKY = "FLAKY"


LEVELS = ("MUST", "SHOULD", "MAY")

#: Verdicts that count against the target or the run (exit code, CI gates).
BAD = frozenset({Verdict.FAIL, Verdict.ERROR})


_SkipBase: type[BaseException] = pytest.skip.Exception


class NotApplicable(_SkipBase):  # type: ignore[misc,valid-type]
    """Base of the outcomes that say a requirement could not apply; ``verdict`` names which."""

    verdict = Verdict.SKIP

    def __init__(self, reason: str) -> None:
        super().__init__(f"{self.verdict.value}: {reason}", allow_module_level=True)
        self.reason = reason


class Unsupported(NotApplicable):
    """The target does not advertise what the test needs; ``api_key`` names the API when one
    is missing, so that a requirement that only needs it for set-up is SKIP, not UNSUPPORTED
    (``conformance.results.policy``)."""

    verdict = Verdict.UNSUPPORTED

    def __init__(self, reason: str, api_key: int | None = None) -> None:
        super().__init__(reason)
        self.api_key = api_key


class NotExposed(NotApplicable):
    verdict = Verdict.NOT_EXPOSED


class ProposalAbsent(NotApplicable):
    verdict = Verdict.PROPOSAL_ABSENT


class MissingPrecondition(NotApplicable):
    verdict = Verdict.SKIP


class NotEvaluated(NotApplicable):
    """The target went down earlier in the run and was not brought back: nothing is sent."""

    verdict = Verdict.NOT_EVALUATED


#: Exceptions that mean the *target* misbehaved (so the check failed), not the suite: it closed
#: the connection where an answer was due, answered something undecodable or out of order.
TARGET_FAULTS: tuple[type[BaseException], ...] = (
    AssertionError,
    ConnectionClosed,
    ProtocolViolation,
    DecodeError,
    TimeoutError,
)


def is_target_fault(exc: BaseException) -> bool:
    """True when ``exc`` (or an exception group of them) is the target's doing."""
    if isinstance(exc, BaseExceptionGroup):
        return all(is_target_fault(e) for e in exc.exceptions)
    return isinstance(exc, TARGET_FAULTS)


def verdict_for(
    outcome: str,
    level: str,
    *,
    strict: bool = False,
    exc: BaseException | None = None,
) -> Verdict:
    """The verdict of one requirement given how its test ended.

    ``outcome`` is pytest's: "passed", "failed" or "skipped"; ``exc`` is what ended the test
    (None when it passed). A failure caused by the target (an assertion, a closed connection,
    an undecodable answer) is FAIL for a MUST and NONSTRICT for a SHOULD or MAY (FAIL when
    ``strict``); any other exception is ERROR; a skip is the verdict its exception names, and a
    plain skip (from pytest itself or a test not written with the suite's outcomes) is SKIP.
    """
    if level not in LEVELS:
        raise ValueError(f"unknown requirement level {level!r}")
    if outcome == "passed":
        return Verdict.PASS
    if outcome == "skipped":
        if isinstance(exc, NotApplicable):
            return exc.verdict
        return Verdict.SKIP
    if outcome != "failed":
        raise ValueError(f"unknown outcome {outcome!r}")
    if exc is not None and not is_target_fault(exc):
        return Verdict.ERROR
    if level == "MUST" or strict:
        return Verdict.FAIL
    return Verdict.NONSTRICT
