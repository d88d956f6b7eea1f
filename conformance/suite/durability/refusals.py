"""DURABILITY.R7's reading of the high watermark over acks=all Produces of one record each,
sent while the ISR is below min.insync.replicas.

A Produce refused NOT_ENOUGH_REPLICAS (19) appends nothing; any other answer may come after its
record was appended: Kafka checks the ISR's size, appends, then waits for the ISR, so a leader
that has not applied the smaller ISR yet appends and answers REQUEST_TIMED_OUT (7) when the wait
ends, or NOT_ENOUGH_REPLICAS_AFTER_APPEND (20) (Partition.appendRecordsToLeader). Such a record
is committed later, whenever the high watermark passes it (the removed follower counts as caught
up for replica.lag.time.max.ms after its last fetch: Partition.maybeIncrementLeaderHW), which can
be while a later attempt is refused 19: KRaft 3.4.1 moved the high watermark 20 -> 21 over the
third of the answers [7, 19, 19]. So the high watermark may pass the log's end before the
attempts by at most the number of attempts not refused 19, and never by a refused one's record.
"""

from __future__ import annotations

from collections.abc import Sequence

from conformance.protocol import ErrorCode


def appendable(answers: Sequence[int]) -> int:
    """How many of the attempts (one record each) may have appended their record."""
    return sum(code != ErrorCode.NOT_ENOUGH_REPLICAS for code in answers)


def within_appended(end: int | None, answers: Sequence[int], after: int | None) -> tuple[bool, str]:
    """Whether the high watermark ``after`` the attempts keeps DURABILITY.R7, given ``end``,
    the log's end before them (once every earlier batch was acknowledged: the high watermark,
    or past the last acknowledged offset where that is further), and the check's message (as
    it reads when it fails)."""
    if end is None or after is None:
        return False, f"no high watermark read (before the attempts {end}, after {after})"
    most = end + appendable(answers)
    return after <= most, (
        f"the high watermark moved from {end} to {after} over acks=all Produces of one record "
        f"each answered {answers}: only the {appendable(answers)} not refused "
        f"NOT_ENOUGH_REPLICAS (19) may have appended, so at most to {most}"
    )
