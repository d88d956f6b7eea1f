"""``Harness.knowledge`` / ``Harness.learn``: what a concurrent run's workers learned of the
target's unanswered requests reaches the controller, which runs the disruptive tests after them
against the same nodes. No network: the harness's records are set as ``SyncConnection.request``
sets them."""

from __future__ import annotations

import json

import execnet
import pytest
from hypothesis import given
from hypothesis import strategies as st

from conformance.protocol import ApiKey, Codec
from conformance.suite.kit.harness import SILENT_AFTER, Harness, Silence
from conformance.targets.base import Endpoint, Target

NODES = [Endpoint("127.0.0.1", p) for p in (9092, 9093)]
CODEC = Codec.from_specs()


@pytest.fixture(scope="module")
def four():
    """Four harnesses (two workers, two controllers), never connected: each only keeps records."""
    made = [Harness(Target(bootstrap=NODES[:1]), CODEC) for _ in range(4)]
    yield made
    for h in made:
        h.close()


#: one process's records: requests left unanswered (node, api, version, test) and APIs answered
silences = st.lists(
    st.tuples(st.sampled_from(NODES), st.sampled_from([15, 19]), st.integers(0, 7),
              st.sampled_from(["t/a", "t/b", "t/c", None])),
    max_size=6, unique=True,
)  # fmt: skip
answers = st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from([15, 19])), max_size=2)


def _fill(h: Harness, silent, answered) -> None:
    h.unanswered, h.answered, h.silent = set(), set(), {}
    h.answered |= set(answered)
    for node, api, version, test in silent:
        h.unanswered.add((api, version))
        if (node, api) not in h.answered:
            h.silent.setdefault(api, Silence()).seen.append((node, version, test))


@given(a=st.tuples(silences, answers), b=st.tuples(silences, answers))
def test_the_controller_knows_what_every_worker_learned_whatever_the_order(four, a, b) -> None:
    one, two, first, second = four
    _fill(one, *a)
    _fill(two, *b)
    # handed over as JSON, as a worker's output reaches the controller
    k1, k2 = (json.loads(json.dumps(h.knowledge())) for h in (one, two))
    _fill(first, [], [])
    _fill(second, [], [])
    first.learn(k1)
    first.learn(k2)
    second.learn(k2)
    second.learn(k1)
    assert first.knowledge() == second.knowledge()
    assert first.unanswered == one.unanswered | two.unanswered
    assert first.answered == one.answered | two.answered
    for api, silence in first.silent.items():
        for node, version, test in silence.seen:
            # a silence is kept only where no process saw that node answer the API
            assert (node, api) not in first.answered
            assert any(
                (node, version, test) in h.silent.get(api, Silence()).seen for h in (one, two)
            )
    for h in (one, two):
        for api, silence in h.silent.items():
            for node, version, test in silence.seen:
                assert ((node, version, test) in first.silent[api].seen) == (
                    (node, api) not in first.answered
                )


def test_two_silences_learned_elsewhere_are_the_controllers_own(four) -> None:
    """Once the controller learns that workers saw a node leave an API unanswered SILENT_AFTER
    times, its own first request of it meets that record (``SyncConnection.request``: not sent,
    citing the workers' tests)."""
    worker, controller = four[:2]
    _fill(worker, [(NODES[0], 19, v, f"w/{v}") for v in range(SILENT_AFTER)], [])
    _fill(controller, [], [])
    silence = controller.silent.get(19)
    assert silence is None or len(silence.at(NODES[0])) < SILENT_AFTER
    controller.learn(worker.knowledge())
    assert len(controller.silent[19].at(NODES[0])) == SILENT_AFTER
    assert controller.silent[19].cite(NODES[0]) == "v0 in w/0, v1 in w/1"
    assert (NODES[0], 19) not in controller.answered


def test_the_knowledge_crosses_xdists_channel(four) -> None:
    """The records hold the api keys callers pass, ApiKey members among them: what a worker
    hands over must be plain values that execnet (xdist's channel) carries, or the worker dies
    at its end with a DumpError (2ad8c75 did, in every concurrent run)."""
    worker, controller = four[:2]
    _fill(worker, [(NODES[0], ApiKey.CREATE_TOPICS, 7, "t/a")], [(NODES[1], ApiKey.METADATA)])
    carried = execnet.loads(execnet.dumps(worker.knowledge()))
    assert carried == json.loads(json.dumps(worker.knowledge()))
    _fill(controller, [], [])
    controller.learn(carried)
    assert controller.unanswered == {(19, 7)} and (NODES[1], 3) in controller.answered
    assert controller.silent[19].cite() == "v7 in t/a"
