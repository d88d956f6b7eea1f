"""MetadataImage.copy is a deep copy: equal to ``copy.deepcopy`` and sharing nothing mutable."""

from __future__ import annotations

import copy
import uuid

from hypothesis import given
from hypothesis import strategies as st

from reference_impl.broker_state import BrokerState
from reference_impl.metadata.image import MetadataImage

NAMES = st.sampled_from(["a", "b", "c"])
BROKERS = st.integers(0, 3)
STATES = st.sampled_from([s.value for s in BrokerState])
REPLICAS = st.lists(BROKERS, min_size=1, max_size=3, unique=True)


def _register(b: int, state: str) -> dict:
    listener = {"name": "PLAINTEXT", "host": "127.0.0.1", "port": 9092 + b}
    return {
        "type": "register_broker",
        "broker_id": b,
        "epoch": b,
        "incarnation_id": str(b),
        "listeners": [listener],
        "rack": None,
        "start_time_ms": 1,
        "state": state,
    }


RECORDS = st.one_of(
    st.builds(_register, BROKERS, STATES),
    st.builds(lambda b, s: {"type": "broker_state", "broker_id": b, "state": s}, BROKERS, STATES),
    st.builds(lambda n: {"type": "topic", "name": n, "topic_id": str(uuid.uuid4())}, NAMES),
    st.builds(
        lambda n, i, r: {
            "type": "partition",
            "topic": n,
            "partition": i,
            "replicas": r,
            "isr": r[:1],
            "leader": r[0],
            "leader_epoch": i,
            "partition_epoch": 0,
        },
        NAMES,
        st.integers(0, 2),
        REPLICAS,
    ),
    st.builds(
        lambda n, k, v: {
            "type": "config",
            "resource_type": 2,
            "resource_name": n,
            "name": k,
            "value": v,
        },
        NAMES,
        st.sampled_from(["retention.ms", "segment.bytes"]),
        st.none() | st.just("5"),
    ),
    st.builds(
        lambda u, v: {"type": "quota", "entity": [["user", u]], "key": "k", "value": v},
        NAMES,
        st.none() | st.just(2.0),
    ),
    st.builds(lambda n: {"type": "acl", "binding": {"name": n, "ops": [1, 2]}}, NAMES),
    st.builds(
        lambda u: {
            "type": "scram",
            "user": u,
            "mechanism": "SCRAM-SHA-256",
            "salt": "s",
            "stored_key": "k",
            "server_key": "v",
            "iterations": 4096,
        },
        NAMES,
    ),
)


def _image(records: list[dict]) -> MetadataImage:
    image = MetadataImage()
    for r in records:
        if r["type"] == "partition" and r["topic"] not in image.topics:
            continue
        image.apply(r, image.offset + 1)
    return image


@given(st.lists(RECORDS, max_size=30), st.lists(RECORDS, max_size=10))
def test_copy_is_deep(before: list[dict], after: list[dict]) -> None:
    image = _image(before)
    snapshot = copy.deepcopy(image)
    twin = image.copy()
    assert twin == snapshot
    for r in after:  # changing the copy leaves the original as it was
        if r["type"] == "partition" and r["topic"] not in twin.topics:
            continue
        twin.apply(r, twin.offset + 1)
    for b in twin.brokers.values():
        b.listeners[0]["port"] = 1
    for t in twin.topics.values():
        for p in t.partitions.values():
            p.isr.append(99)
    for values in twin.configs.values():
        values["x"] = "y"
    for held in twin.scram.values():
        held.clear()
    assert image == snapshot
