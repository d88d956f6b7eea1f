"""``verify.answered_none``: the "answered NONE" check the group tests repeat, with the message
they wrote out by hand before (the code and the ErrorMessage after the caller's words), held or
not, credited to the requirements named. No network: the answers are dicts as decoded."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import ErrorCode
from conformance.suite.kit import credit, verify


@given(
    code=st.sampled_from([ErrorCode.NONE, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.INVALID_CONFIG]),
    text=st.none() | st.text(max_size=20),
    epoch=st.integers(0, 9),
)
def test_the_message_is_the_one_written_out_before(code: int, text: str | None, epoch: int) -> None:
    got = {"ErrorCode": int(code), "ErrorMessage": text}
    before = f"heartbeat at epoch {epoch} answered {got['ErrorCode']} ({got.get('ErrorMessage')})"
    ledger = credit.begin()
    if code == ErrorCode.NONE:
        assert verify.answered_none(got, f"heartbeat at epoch {epoch} answered", "R.1") is got
        assert ledger.observed["R.1"].failed == 0
        return
    with pytest.raises(verify.Failed) as failed:
        verify.answered_none(got, f"heartbeat at epoch {epoch} answered", "R.1", "R.2")
    assert failed.value.detail == before and failed.value.req_ids == ("R.1", "R.2")
    assert ledger.observed["R.2"].failed == 1 and before in ledger.observed["R.2"].seen


def test_an_answer_without_error_message_says_none() -> None:
    with pytest.raises(verify.Failed) as failed:
        verify.answered_none({"ErrorCode": 25}, "ShareFetch at share session epoch 0: error", "X")
    assert failed.value.detail == "ShareFetch at share session epoch 0: error 25 (None)"
