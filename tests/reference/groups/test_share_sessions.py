"""Share sessions (``groups/share_sessions.py``): epochs and their errors as Kafka 4.4.0 answers
them (SHARE_SESSION_NOT_FOUND 122, INVALID_SHARE_SESSION_EPOCH 123), partitions added and
forgotten, and a closed or replaced session releasing what its member holds."""

from __future__ import annotations

import uuid

from conformance.protocol import ErrorCode as E
from reference_impl.groups.share_partition import ACQUIRED, AVAILABLE
from reference_impl.groups.share_sessions import ShareSessions

T = uuid.UUID(int=7)


def test_epochs_and_errors() -> None:
    s = ShareSessions(lambda: 0)
    assert s.session("g", "m", 1, [], [])[0] == E.SHARE_SESSION_NOT_FOUND
    error, session = s.session("g", "m", 0, [(T, 0)], [])
    assert error == E.NONE and session is not None and session.partitions == [(T, 0)]
    assert s.session("g", "m", 5, [], [])[0] == E.INVALID_SHARE_SESSION_EPOCH
    assert s.session("g", "m", 1, [(T, 1)], [(T, 0)])[1].partitions == [(T, 1)]  # type: ignore[union-attr]
    assert s.session("g", "m", 1, [], [])[0] == E.INVALID_SHARE_SESSION_EPOCH  # used already
    assert s.session("g", "m", 0, [], [], acknowledge=True)[0] == E.INVALID_SHARE_SESSION_EPOCH
    assert s.session("g", "m", 2, [], [], acknowledge=True)[0] == E.NONE
    assert s.session("g", "m", -1, [], [])[0] == E.NONE
    s.close("g", "m")
    assert s.session("g", "m", 3, [], [])[0] == E.SHARE_SESSION_NOT_FOUND


def test_a_closed_or_replaced_session_releases_its_records() -> None:
    s = ShareSessions(lambda: 0)
    s.session("g", "m", 0, [(T, 0)], [])
    sp = s.partition("g", (T, 0), lambda: 5, 30_000, 5)
    assert sp.start_offset == 5 and sp.acquire("m", [5, 6], 10, 0) == [(5, 6, 1)]
    assert s.partition("g", (T, 0), lambda: 99, 30_000, 5) is sp  # made once
    s.session("g", "m", 0, [(T, 0)], [])  # a new session replaces the old one
    assert sp.state_of(5, 0) == AVAILABLE
    assert sp.acquire("m", [5, 6], 10, 0) == [(5, 6, 2)]
    s.close("g", "m")
    assert sp.state_of(6, 0) == AVAILABLE and sp.state_of(6, 0) != ACQUIRED


def test_share_partitions_survive_a_restart(tmp_path) -> None:
    """Accepted and archived records stay done; records in flight come back available with
    their delivery counts (redelivered with a higher one); sessions do not survive."""
    from reference_impl.groups.share_partition import ACCEPT, REJECT

    store = tmp_path / "share-partitions.json"
    s = ShareSessions(lambda: 0, store)
    s.session("g", "m", 0, [(T, 0)], [])
    sp = s.partition("g", (T, 0), lambda: 0, 30_000, 5)
    assert sp.acquire("m", list(range(6)), 10, 0) == [(0, 5, 1)]
    assert sp.acknowledge("m", 0, 2, [ACCEPT, REJECT, ACCEPT], 0) == E.NONE
    assert sp.acknowledge("m", 4, 4, [ACCEPT], 0) == E.NONE
    s.save()
    again = ShareSessions(lambda: 0, store)
    back = again.partition("g", (T, 0), lambda: 99, 30_000, 5)
    assert back.start_offset == 3
    assert again.session("g", "m", 1, [], [])[0] == E.SHARE_SESSION_NOT_FOUND
    assert back.acquire("n", list(range(6)), 10, 0) == [(3, 3, 2), (5, 5, 2)]
