"""The controller builds a round's UpdateMetadata once and gives every broker its own copy:
each broker's body encodes to the bytes of a body built for it alone, and a new image rebuilds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from conformance.protocol import ApiKey
from reference_impl.controller.propagation import Propagator, update_metadata_body
from reference_impl.metadata.image import MetadataImage
from tests.reference.control_plane import CODEC
from tests.reference.controller.test_image_copy import RECORDS, _image

CONTROLLER_ID = 3000
VERSIONS = st.sampled_from([0, 1, 4, 5, 6, 7, 8])


def _with_protocol(record: dict) -> dict:
    """A registration's listeners as brokers send them (with their security protocol)."""
    if record["type"] == "register_broker":
        listeners = [{**lst, "security_protocol": "PLAINTEXT"} for lst in record["listeners"]]
        return {**record, "listeners": listeners}
    return record


CHANGES = RECORDS.map(_with_protocol)


class _Controller:
    """All ``Propagator.update_metadata`` reads of its controller."""

    node_id = CONTROLLER_ID


def _alone(image: MetadataImage, v: int, epoch: int) -> bytes:
    live = {r.broker_id for r in image.visible_brokers()}
    body = update_metadata_body(image, live, v, CONTROLLER_ID)
    body["BrokerEpoch"] = epoch
    return CODEC.encode(ApiKey.UPDATE_METADATA, v, "request", body)


def _shared(propagator: Propagator, image: MetadataImage, v: int, epochs: list[int]) -> list:
    """Every broker's body of one round, all held before any is encoded (as senders do)."""
    live = {r.broker_id for r in image.visible_brokers()}
    bodies = [propagator.update_metadata(image, live, v, e) for e in epochs]
    return [CODEC.encode(ApiKey.UPDATE_METADATA, v, "request", body) for body in bodies]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(CHANGES, max_size=25),
    st.lists(CHANGES, min_size=1, max_size=8),
    VERSIONS,
    st.lists(st.integers(0, 2**40), min_size=2, max_size=4),
)
def test_each_broker_gets_the_bytes_built_for_it(
    before: list[dict], more: list[dict], v: int, epochs: list[int]
) -> None:
    propagator = Propagator(_Controller())  # type: ignore[arg-type]
    image = _image(before)
    assert _shared(propagator, image, v, epochs) == [_alone(image, v, e) for e in epochs]
    after = image.copy()  # the next committed image: a new object, never the old one mutated
    for r in more:
        if r["type"] != "partition" or r["topic"] in after.topics:
            after.apply(r, after.offset + 1)
    assert _shared(propagator, after, v, epochs) == [_alone(after, v, e) for e in epochs]
