"""Incremental UpdateMetadata (v8+, as Kafka's ZooKeeper-mode controller sends it): a broker
fed, over the wire, the delta from the image it acknowledged holds what a fresh broker holds
from the full body of the new image, whichever rounds it missed in between."""

from __future__ import annotations

import uuid

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.protocol import ApiKey
from reference_impl.broker.metadata_cache import MetadataCache
from reference_impl.broker_state import BrokerState
from reference_impl.controller.propagation import (
    FULL,
    INCREMENTAL,
    Propagator,
    update_metadata_body,
)
from reference_impl.metadata.image import MetadataImage
from tests.reference.control_plane import CODEC
from tests.reference.controller.test_image_copy import NAMES, _image, _register
from tests.reference.controller.test_update_metadata_shared import CHANGES, _with_protocol

CONTROLLER_ID = 3000
REMOVALS = st.builds(lambda n: {"type": "remove_topic", "name": n}, NAMES)


def _partition(name: str, index: int, replicas: list[int], epoch: int = 0) -> dict:
    return {
        "type": "partition",
        "topic": name,
        "partition": index,
        "replicas": replicas,
        "isr": replicas,
        "leader": replicas[0],
        "leader_epoch": epoch,
        "partition_epoch": epoch,
    }


def _made_anew(name: str, topic_id: uuid.UUID, replicas: list[int]) -> list[dict]:
    """The topic deleted and made again under its name: a new id, partitions from 0 (maybe
    with the states the old ones had)."""
    return [
        {"type": "remove_topic", "name": name},
        {"type": "topic", "name": name, "topic_id": str(topic_id)},
        *(_partition(name, i, replicas) for i in range(2)),
    ]


#: brokers 0-3 online and topics a, b of 2 partitions on 0-2: what a step can change
BASE = [
    *(_with_protocol(_register(b, BrokerState.ONLINE.value)) for b in range(4)),
    *(
        r
        for n, k in (("a", 1), ("b", 2))
        for r in [
            {"type": "topic", "name": n, "topic_id": str(uuid.UUID(int=k))},
            *(_partition(n, i, [0, 1, 2]) for i in range(2)),
        ]
    ),
]
REPLICAS = st.lists(st.integers(0, 3), min_size=1, max_size=3, unique=True)
STEP = st.lists(
    st.one_of(
        CHANGES.map(lambda r: [r]),
        REMOVALS.map(lambda r: [r]),
        st.builds(_made_anew, NAMES, st.uuids(), st.just([0, 1, 2]) | REPLICAS),
        st.builds(
            lambda n, i, r, e: [_partition(n, i, r, e)],
            NAMES,
            st.integers(0, 2),
            REPLICAS,
            st.integers(1, 9),
        ),
        st.builds(
            lambda b, s: [{"type": "broker_state", "broker_id": b, "state": s}],
            st.integers(0, 3),
            st.sampled_from([s.value for s in BrokerState]),
        ),
    ),
    min_size=1,
    max_size=4,
).map(lambda groups: [r for g in groups for r in g])


class _Controller:
    """All ``Propagator.update_metadata`` reads of its controller."""

    node_id = CONTROLLER_ID


def _live(image: MetadataImage) -> set[int]:
    return {r.broker_id for r in image.visible_brokers()}


def _applied(cache: MetadataCache, body: dict, v: int) -> dict:
    """``body`` through the wire into ``cache``; returns the body as the broker decoded it."""
    raw = CODEC.encode(ApiKey.UPDATE_METADATA, v, "request", {**body, "BrokerEpoch": 7})
    decoded = CODEC.decode(ApiKey.UPDATE_METADATA, v, "request", raw)
    cache.apply_update_metadata(decoded, v)
    return decoded


def _state(cache: MetadataCache) -> dict:
    return {
        "controller": (cache.controller_id, cache.controller_epoch, cache.offset),
        "brokers": cache.brokers,
        "topics": {n: (t.topic_id, dict(t.partitions)) for n, t in cache.topics.items()},
        "topic_ids": cache.topic_ids,
        "configs": (cache.topic_configs, cache.broker_configs, cache.group_configs),
        "quotas": cache.quotas,
        "security": (cache.acls, cache.scram),
    }


def _next(image: MetadataImage, records: list[dict]) -> MetadataImage:
    after = image.copy()  # a committed image is a new object, never the old one mutated
    for r in records:
        if r["type"] != "partition" or r["topic"] in after.topics:
            after.apply(r, after.offset + 1)
    return after


@settings(max_examples=80, deadline=None)
@given(st.lists(CHANGES, max_size=6), st.lists(STEP, min_size=1, max_size=6), st.data())
def test_a_broker_fed_deltas_holds_the_full_state(
    first: list[dict], steps: list[list[dict]], data: st.DataObject
) -> None:
    propagator = Propagator(_Controller())  # type: ignore[arg-type]
    image = _image(BASE + first)
    cache = MetadataCache()
    body = propagator.update_metadata(image, _live(image), 8, 7, None)
    assert _applied(cache, body, 8)["Type"] == FULL  # nothing acknowledged yet
    acked = image
    for records in steps:
        image = _next(image, records)
        if not data.draw(st.booleans(), label="the round reaches the broker"):
            continue  # coalesced: the next delta starts from the older acknowledged image
        body = propagator.update_metadata(image, _live(image), 8, 7, acked)
        assert _applied(cache, body, 8)["Type"] == INCREMENTAL
        acked = image
        fresh = MetadataCache()
        _applied(fresh, update_metadata_body(image, _live(image), 8, CONTROLLER_ID), 8)
        assert _state(cache) == _state(fresh)


@settings(max_examples=20, deadline=None)
@given(st.lists(CHANGES, max_size=15), STEP, st.sampled_from([5, 6, 7]))
def test_versions_without_a_type_get_full_bodies(
    first: list[dict], step: list[dict], v: int
) -> None:
    propagator = Propagator(_Controller())  # type: ignore[arg-type]
    before = _image(first)
    after = _next(before, step)
    body = propagator.update_metadata(after, _live(after), v, 7, before)
    assert body == {**update_metadata_body(after, _live(after), v, CONTROLLER_ID), "BrokerEpoch": 7}


def test_an_unchanged_image_sends_no_partition() -> None:
    image = _image(
        [
            {"type": "topic", "name": "a", "topic_id": "00000000-0000-0000-0000-000000000001"},
            {
                "type": "partition",
                "topic": "a",
                "partition": 0,
                "replicas": [0],
                "isr": [0],
                "leader": 0,
                "leader_epoch": 0,
                "partition_epoch": 0,
            },
        ]
    )
    propagator = Propagator(_Controller())  # type: ignore[arg-type]
    body = propagator.update_metadata(image, _live(image), 8, 7, image)
    assert body["TopicStates"] == [] and body["Type"] == INCREMENTAL
