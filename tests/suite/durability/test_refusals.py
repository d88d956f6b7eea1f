"""DURABILITY.R7's high-watermark reading (``refusals``): the records of attempts not refused
NOT_ENOUGH_REPLICAS may be committed at any time, a refused attempt's never."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import ErrorCode
from conformance.suite.durability.refusals import appendable, within_appended

REFUSED = ErrorCode.NOT_ENOUGH_REPLICAS
ANSWERS = st.lists(
    st.sampled_from(
        [REFUSED, ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND]
    ),
    min_size=1,
    max_size=21,
)


def test_kafka_3_4_1s_timed_out_first_attempt_may_be_committed() -> None:
    """The publication of session 16: KRaft 3.4.1 answered [7, 19, 19] and the high
    watermark moved 20 -> 21, the first attempt's record committed."""
    assert within_appended(20, [7, 19, 19], 21)[0]
    held, why = within_appended(20, [7, 19, 19], 22)
    assert not held and "from 20 to 22" in why and "at most to 21" in why, why


@given(st.integers(0, 10_000), ANSWERS, st.integers(0, 21))
def test_the_high_watermark_may_pass_only_what_was_not_refused(
    end: int, answers: list[int], moved: int
) -> None:
    held, why = within_appended(end, answers, end + moved)
    assert held == (moved <= appendable(answers)), why
    assert appendable(answers) == sum(a != REFUSED for a in answers)


@given(st.integers(0, 10_000), st.integers(1, 21))
def test_a_move_over_refused_attempts_only_fails(end: int, n: int) -> None:
    assert not within_appended(end, [REFUSED] * n, end + 1)[0]


def test_no_high_watermark_read_fails() -> None:
    assert not within_appended(None, [REFUSED], 3)[0]
    assert not within_appended(3, [REFUSED], None)[0]
