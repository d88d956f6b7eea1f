"""The verdict policy: what each requirement of a finished test comes to, and what pytest shows.

A test ends in phases (setup, call, teardown), each passed, failed or skipped; its checks named
the requirements they failed (``req_ids`` of the exception), recorded soft (SHOULD) failures,
and credited the requirements they checked (the ledger). From those, per requirement:

* setup skipped: the verdict the skip names (UNSUPPORTED, NOT_EXPOSED ...); setup failed: ERROR;
  UNSUPPORTED for an API the requirement does not judge (its ``apis``) is SKIP "set-up needs"
  instead: the target may well serve everything the requirement is about;
* call failed: FAIL (NONSTRICT for a SHOULD unless strict; ERROR when the suite broke) for the
  requirements the failure names, or all of them when it names none of the test's; each of the
  others is judged on the answers that came back before the failure: its soft failure, else
  PASS when a check of it ran (and held: a failed check would have named it), else SKIP "not
  evaluated" (one requirement's failure never hides another's verdict);
* call skipped: the verdict the skip names (with the same set-up rule);
* call passed: a soft failure is NONSTRICT/FAIL; a teardown failure is ERROR; otherwise PASS only
  when a check of the requirement ran (the ledger credits it), else the verdict recorded for it
  (UNSUPPORTED naming the missing API) or SKIP "not checked". Nothing vacuous is ever PASS.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from conformance.results.summary import SET_UP_NEEDS
from conformance.results.verdicts import Unsupported, Verdict, verdict_for

#: judges(requirement id, api key): whether the requirement's verdict is about that API
Judges = Callable[[str, int], bool]


@dataclass
class Phase:
    """One phase of a test as pytest reported it."""

    outcome: str
    exc: BaseException | None
    duration: float
    message: str


class Credits(Protocol):
    """What a test's checks covered (``conformance.suite.kit.credit.Ledger``)."""

    def credited(self, req_id: str) -> bool: ...

    def without_checks(self, req_id: str) -> tuple[Verdict, str]: ...


def requirement_verdicts(
    requirements: Sequence[tuple[str, str]],
    phases: Mapping[str, Phase],
    *,
    soft: Mapping[str, str],
    credits: Credits,
    strict: bool = False,
    judges: Judges | None = None,
) -> list[tuple[str, Verdict, str | None]]:
    """(requirement id, verdict, message) for each (id, level) of a finished test."""

    def skipped(rid: str, level: str, phase: Phase) -> tuple[str, Verdict, str | None]:
        exc = phase.exc
        key = getattr(exc, "api_key", None)
        if isinstance(exc, Unsupported) and key is not None and judges and not judges(rid, key):
            return (
                rid,
                Verdict.SKIP,
                f"{SET_UP_NEEDS} what the target does not offer: {exc.reason}",
            )
        return (rid, verdict_for("skipped", level, exc=exc), phase.message)

    setup, call, teardown = (phases.get(w) for w in ("setup", "call", "teardown"))
    ids = [rid for rid, _ in requirements]
    out: list[tuple[str, Verdict, str | None]] = []
    for rid, level in requirements:
        if setup is not None and setup.outcome == "skipped":
            out.append(skipped(rid, level, setup))
        elif setup is not None and setup.outcome != "passed":
            out.append((rid, Verdict.ERROR, setup.message))
        elif call is None:
            out.append((rid, Verdict.ERROR, "the test did not run"))
        elif call.outcome == "failed":
            # a check names the requirements it concerns; one naming none of this test's
            # (a decoding failure of another requirement, say) fails them all
            named = [r for r in getattr(call.exc, "req_ids", ()) if r in ids]
            if named and rid not in named:
                if rid in soft:
                    out.append((rid, _soft(level, strict), soft[rid]))
                elif credits.credited(rid):
                    out.append((rid, Verdict.PASS, None))
                else:
                    why = f"not evaluated: the test stopped at a failure of {', '.join(named)}"
                    out.append((rid, Verdict.SKIP, f"{why}: {call.message}"))
            else:
                v = verdict_for("failed", level, strict=strict, exc=call.exc)
                out.append((rid, v, call.message))
        elif call.outcome == "skipped":
            out.append(skipped(rid, level, call))
        elif rid in soft:
            out.append((rid, _soft(level, strict), soft[rid]))
        elif teardown is not None and teardown.outcome == "failed":
            out.append((rid, Verdict.ERROR, f"teardown: {teardown.message}"))
        elif not credits.credited(rid):
            out.append((rid, *credits.without_checks(rid)))
        else:
            out.append((rid, Verdict.PASS, None))
    return out


def _soft(level: str, strict: bool) -> Verdict:
    return verdict_for("failed", level, strict=strict, exc=AssertionError())


def outcome_shown(
    verdicts: Sequence[tuple[str, Verdict, str | None]], passed: bool, soft: Mapping[str, str]
) -> tuple[str, str] | None:
    """How pytest should show a test's call, given its verdicts: ("failed", text) when a
    requirement FAILed or ERRORed though the call passed (soft failures), ("xfail", text) for
    NONSTRICT, ("skipped", reason) when a passed call credited nothing; None: as pytest said."""
    found = {v for _, v, _ in verdicts}
    if Verdict.FAIL in found or Verdict.ERROR in found:
        return ("failed", "; ".join(soft.values())) if passed else None
    if Verdict.NONSTRICT in found:
        return "xfail", "; ".join(soft.values())
    if passed and Verdict.PASS not in found:
        return "skipped", "; ".join(f"{rid} {v.value}: {m}" for rid, v, m in verdicts)
    return None
