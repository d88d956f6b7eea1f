"""Which requirements a test actually checked, and what each check saw.

A requirement is credited (PASS) only by a check that ran against the target while its test ran:
every ``verify`` check, and every model rule or invariant that executed, records here, under each
requirement id it names, that it ran, whether it held and a short text of what it saw. A
requirement a test lists but no check of which ran is not PASS: it takes the verdict a test
recorded with :func:`cannot_check` (UNSUPPORTED naming the API version the target does not
advertise, say), or SKIP "not checked".

There is one ledger per test (the harness starts a new one when a test ends). It is a module
global rather than a context variable on purpose: checks also run on the harness's event-loop
thread (the client scenarios), and they belong to the same test.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from conformance.results.verdicts import NotApplicable, Verdict

#: texts of what was seen kept per requirement (the first ones, then the first failing one)
SEEN_KEPT = 3
SEEN_LENGTH = 240


@dataclass
class Observed:
    """The checks of one requirement that ran in one test."""

    checks: int = 0
    failed: int = 0
    seen: list[str] = field(default_factory=list)

    def add(self, saw: str, held: bool) -> None:
        self.checks += 1
        if not held:
            self.failed += 1
        text = " ".join(str(saw).split())[:SEEN_LENGTH]
        if text in self.seen:
            return
        if len(self.seen) < SEEN_KEPT:
            self.seen.append(text)
        elif not held and self.failed == 1:
            self.seen[-1] = text  # the first failure is always kept

    def record(self) -> dict[str, Any]:
        """The ``observed`` field of a result record."""
        return {"checks": self.checks, "failed": self.failed, "seen": list(self.seen)}


@dataclass
class Ledger:
    """What one test checked (``observed``) and why it could not check the rest (``unchecked``)."""

    observed: dict[str, Observed] = field(default_factory=dict)
    unchecked: dict[str, tuple[Verdict, str]] = field(default_factory=dict)

    def ran(self, req_ids: Iterable[str], saw: str, held: bool = True) -> None:
        for rid in dict.fromkeys(req_ids):
            self.observed.setdefault(rid, Observed()).add(saw, held)

    def cannot(self, why: NotApplicable, req_ids: Iterable[str]) -> None:
        for rid in req_ids:
            self.unchecked.setdefault(rid, (why.verdict, why.reason))

    def credited(self, req_id: str) -> bool:
        return req_id in self.observed and self.observed[req_id].checks > 0

    def without_checks(self, req_id: str) -> tuple[Verdict, str]:
        """The verdict of a listed requirement none of whose checks ran, and why."""
        if req_id in self.unchecked:
            return self.unchecked[req_id]
        return (
            Verdict.SKIP,
            f"not checked: no check of {req_id} ran against the target in this test",
        )


_ledger = Ledger()


def begin() -> Ledger:
    """A fresh ledger for the next test (the harness calls this when a test ends)."""
    global _ledger
    _ledger = Ledger()
    return _ledger


def current() -> Ledger:
    return _ledger


def ran(req_ids: Iterable[str], saw: str, held: bool = True) -> None:
    """Record that a check of ``req_ids`` ran and what it saw."""
    ids = tuple(req_ids)
    if not ids:
        raise ValueError(f"a check names the requirement id(s) it checks ({saw[:80]!r})")
    _ledger.ran(ids, saw, held)


def cannot_check(why: NotApplicable, *req_ids: str) -> None:
    """Record why the checks of ``req_ids`` cannot run here (the test goes on with the others):
    ``cannot_check(Unsupported("DescribeCluster is not advertised"), "KIP-78.R7")``."""
    if not req_ids:
        raise ValueError("cannot_check names the requirement id(s) it could not check")
    _ledger.cannot(why, req_ids)
