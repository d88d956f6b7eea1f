"""``Harness.share``: a concurrent run's workers share what they learn of unanswered requests
live, through files in the run's flags folder. Once one harness has waited for a node's silence,
another sharing the folder waits only the shorter bound for it, and after SILENT_AFTER requests
of the run sends no more of it, citing the tests that saw it, as if it had seen them itself; a
node a harness saw answer the API is never silent for it because of another's file, and that
answer reaches the others. Two harnesses in one process stand for two workers, against the
reference behind a proxy that swallows some DescribeGroups versions (about 7 s)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.protocol import ApiKey, Codec
from conformance.suite.kit import harness as kit_harness
from conformance.suite.kit.harness import Harness, Unanswered
from conformance.suite.kit.shared_silences import SharedSilences
from conformance.targets.base import Endpoint, Target
from tests.support.faults_silence import Swallow
from tests.support.proxies import FaultyProxy, passthrough

CODEC = Codec.from_specs()
DESCRIBE = ApiKey.DESCRIBE_GROUPS
BODY = {"Groups": ["shared-silences"]}
#: the first wait, and the shorter one for a silence the run saw before (both shortened)
FIRST, REPEAT = 2.0, 1.0


@pytest.fixture
def short_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kit_harness, "REPEAT_TIMEOUT", REPEAT)


class Workers:
    """Harnesses sharing one folder, as a concurrent run's workers share its flags folder."""

    def __init__(self, node: Endpoint, folder: Path) -> None:
        self.node, self.folder, self.made = node, folder, []

    def new(self, test_id: str) -> tuple[Harness, kit_harness.SyncConnection]:
        h = Harness(Target(bootstrap=[self.node]), CODEC)
        h.share(self.folder)
        self.made.append(h)
        h.notes.test_id = test_id
        return h, h.connect(self.node)

    def close(self) -> None:
        for h in self.made:
            h.close()


@contextmanager
def behind(reference: Target, folder: Path, swallow: Swallow) -> Iterator[Workers]:
    """Workers sharing ``folder`` on the reference's first broker behind a swallowing proxy."""
    boot = reference.bootstrap[0]
    with FaultyProxy((boot.host, boot.port), passthrough, swallow.request) as proxy:
        workers = Workers(Endpoint("127.0.0.1", proxy.port), folder)
        try:
            yield workers
        finally:
            workers.close()


def failure(kind: type[Exception], conn: kit_harness.SyncConnection, version: int) -> str:
    with pytest.raises(kind) as raised:
        conn.request(DESCRIBE, version, BODY, timeout=FIRST)
    return str(raised.value)


def test_a_silence_one_worker_waited_for_is_the_others(reference, tmp_path, short_repeat) -> None:
    swallow = Swallow({DESCRIBE: None})
    with behind(reference, tmp_path, swallow) as workers:
        node = workers.node
        a, to_a = workers.new("t/a")
        b, to_b = workers.new("t/b")
        first = failure(TimeoutError, to_a, 0)
        assert "earlier" not in first, first
        # b never saw it: it waits the shorter bound, citing a's test
        assert failure(TimeoutError, to_b, 1) == (
            f"none within {REPEAT:.0f} s; the target left DescribeGroups unanswered "
            "earlier in this run too (v0 in t/a)"
        )
        # two requests of the run left unanswered: neither sends a third
        for conn in (to_a, to_b):
            assert failure(Unanswered, conn, 2) == (
                f"not sent: {node} left every DescribeGroups request of the run unanswered "
                "(v0 in t/a, v1 in t/b) and answered none"
            )
    assert dict(swallow.swallowed) == {(DESCRIBE, 0): 1, (DESCRIBE, 1): 1}
    assert a.knowledge() == b.knowledge()


def test_a_node_that_answered_is_never_silent_by_anothers_file(
    reference, tmp_path, short_repeat
) -> None:
    """b saw the node answer DescribeGroups before a saw it leave v0 and v1 unanswered: b still
    sends it, and tells the others at its test's end, so a fresh worker sends it too and a
    drops its own silence, as one process knowing both would."""
    swallow = Swallow({DESCRIBE: {0, 1}})
    with behind(reference, tmp_path, swallow) as workers:
        node = workers.node
        b, to_b = workers.new("t/b")
        to_b.request(DESCRIBE, 2, BODY, timeout=FIRST)
        a, to_a = workers.new("t/a")
        for version in (0, 1):
            with pytest.raises(TimeoutError):
                to_a.request(DESCRIBE, version, BODY, timeout=FIRST)
        assert len(a.silent[DESCRIBE].at(node)) == kit_harness.SILENT_AFTER
        to_b.request(DESCRIBE, 3, BODY, timeout=FIRST)  # sent: b saw it answer
        b.end_test()  # tells what it saw answered
        _, to_c = workers.new("t/c")
        to_c.request(DESCRIBE, 4, BODY, timeout=FIRST)
        a.end_test()
        assert not a.silent[DESCRIBE].at(node)
        to_a = a.connect(node)
        to_a.request(DESCRIBE, 2, BODY, timeout=FIRST)
    assert dict(swallow.swallowed) == {(DESCRIBE, 0): 1, (DESCRIBE, 1): 1}


def test_an_answer_told_first_keeps_a_silence_from_counting(
    reference, tmp_path, short_repeat
) -> None:
    """b's test saw the node answer DescribeGroups and ended (it told the others): a's request
    left unanswered after that is not a silence of the node (as in one process that saw both),
    so it never adds up to SILENT_AFTER with another's."""
    swallow = Swallow({DESCRIBE: {0}})
    with behind(reference, tmp_path, swallow) as workers:
        node = workers.node
        b, to_b = workers.new("t/b")
        to_b.request(DESCRIBE, 2, BODY, timeout=FIRST)
        b.end_test()
        a, to_a = workers.new("t/a")
        assert "earlier" not in failure(TimeoutError, to_a, 0)
        assert (DESCRIBE, 0) in a.unanswered and not a.silent.get(DESCRIBE)
        assert a.knowledge()["answered"] == [[node.host, node.port, DESCRIBE]]


@settings(max_examples=30, deadline=None)
@given(
    steps=st.lists(
        st.tuples(st.integers(0, 2), st.booleans(), st.integers(0, 99)), min_size=1, max_size=25
    )
)
def test_each_fragment_told_reaches_each_other_process_once(steps) -> None:
    """Whatever the interleaving of writes and reads (several within one mtime tick among
    them), every fragment a process tells is read once by each other process and never by its
    teller."""
    with tempfile.TemporaryDirectory() as folder:
        shared = [SharedSilences(Path(folder)) for _ in range(3)]
        told: list[list[int]] = [[], [], []]
        got: list[list[int]] = [[], [], []]
        for who, write, value in steps:
            if write:
                shared[who].tell({"v": value, "from": who})
                told[who].append(value)
            else:
                got[who] += [k["from"] * 1000 + k["v"] for k in shared[who].news()]
        for who in range(3):
            got[who] += [k["from"] * 1000 + k["v"] for k in shared[who].news()]
            expected = [o * 1000 + v for o in range(3) if o != who for v in told[o]]
            assert sorted(got[who]) == sorted(expected)
