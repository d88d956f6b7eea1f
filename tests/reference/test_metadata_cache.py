"""A broker's metadata cache after a run of full UpdateMetadata bodies is what the last one
alone gives a fresh cache: reusing the partitions a body repeats changes no state."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from reference_impl.broker.metadata_cache import FULL, LEADER_DURING_DELETE, MetadataCache

REPLICAS = st.sampled_from([[0, 1, 2], [1, 0]])
IDS = [uuid.UUID(int=i) for i in (1, 2)]


@st.composite
def _state(draw: st.DrawFn, index: int) -> dict:
    replicas = draw(REPLICAS)
    return {
        "PartitionIndex": index,
        "Leader": draw(st.sampled_from([replicas[0], replicas[0], -1, LEADER_DURING_DELETE])),
        "LeaderEpoch": draw(st.integers(0, 1)),
        "Isr": draw(st.sampled_from([replicas, replicas[:1]])),
        "ZkVersion": draw(st.integers(0, 1)),
        "Replicas": replicas,
        "OfflineReplicas": draw(st.sampled_from([[], replicas[-1:]])),
    }


@st.composite
def _body(draw: st.DrawFn) -> dict:
    topics = []
    for name in draw(st.lists(st.sampled_from(["a", "b"]), min_size=1, unique=True)):
        indexes = draw(st.lists(st.integers(0, 1), min_size=1, unique=True))
        topics.append(
            {
                "TopicName": name,
                "TopicId": draw(st.sampled_from(IDS)),
                "PartitionStates": [draw(_state(i)) for i in indexes],
            }
        )
    return {
        "ControllerId": 3000,
        "ControllerEpoch": 1,
        "BrokerEpoch": 5,
        "Type": FULL,
        "LiveBrokers": [],
        "TopicStates": topics,
    }


#: one field of a partition state changed to another value than it had
CHANGES = {
    "Leader": lambda s: -1 if s["Leader"] >= 0 else s["Replicas"][0],
    "LeaderEpoch": lambda s: s["LeaderEpoch"] + 1,
    "ZkVersion": lambda s: s["ZkVersion"] + 1,
    "Isr": lambda s: s["Isr"][:1] if len(s["Isr"]) > 1 else s["Replicas"],
    "Replicas": lambda s: s["Replicas"][::-1],
    "OfflineReplicas": lambda s: [] if s["OfflineReplicas"] else s["Replicas"][-1:],
}


@st.composite
def _bodies(draw: st.DrawFn, field: str) -> list[dict]:
    """A body, then each next one the last with ``field`` changed in some partitions."""
    bodies = [draw(_body())]
    for _ in range(draw(st.integers(1, 4))):
        topics = []
        for t in bodies[-1]["TopicStates"]:
            states = []
            for state in t["PartitionStates"]:
                changed = draw(st.booleans())
                states.append({**state, field: CHANGES[field](state)} if changed else state)
            topic_id = draw(st.sampled_from([t["TopicId"], *IDS]))
            topics.append({**t, "TopicId": topic_id, "PartitionStates": states})
        bodies.append({**bodies[-1], "TopicStates": topics})
    return bodies


def _state_of(cache: MetadataCache) -> dict:
    return {
        "topics": {n: (t.topic_id, dict(t.partitions)) for n, t in cache.topics.items()},
        "topic_ids": dict(cache.topic_ids),
    }


@settings(max_examples=25, deadline=None)
@pytest.mark.parametrize("field", [*CHANGES, "TopicId"])
@given(data=st.data(), v=st.sampled_from([5, 8]))
def test_a_run_of_bodies_leaves_what_the_last_says(field: str, data: st.DataObject, v: int) -> None:
    bodies = data.draw(_bodies(field) if field in CHANGES else st.lists(_body(), min_size=1))
    cache = MetadataCache()
    for body in bodies:
        cache.apply_update_metadata(body, v)
    fresh = MetadataCache()  # nothing known: every partition state is built from the body
    fresh.apply_update_metadata(bodies[-1], v)
    assert _state_of(cache) == _state_of(fresh)
