"""The audit ledger finds exactly the records that went missing, came twice, changed, or
came from nowhere."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from conformance.client.audit import Audit
from conformance.client.record_types import ConsumerRecord, ConsumerRecords, RecordMetadata

positions = st.sets(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2), st.integers(0, 40)))


def md(pos, checksum=7) -> RecordMetadata:
    return RecordMetadata(pos[0], pos[1], pos[2], 0, checksum, 1, 2)


def consumed(pos, checksum=7) -> ConsumerRecord:
    return ConsumerRecord(pos[0], pos[1], pos[2], 0, None, b"k", b"vv", (), checksum, 1, 2)


@given(positions, st.data())
def test_verify_reports_each_kind_of_difference(acked, data) -> None:
    acked = sorted(acked)
    missing = set(data.draw(st.sets(st.sampled_from(acked))) if acked else ())
    rest = [p for p in acked if p not in missing]
    twice = set(data.draw(st.sets(st.sampled_from(rest))) if rest else ())
    changed = set(data.draw(st.sets(st.sampled_from(rest))) if rest else ())
    extra = {("c", 0, i) for i in range(data.draw(st.integers(0, 3)))}
    audit = Audit()
    producer, consumer = audit.producer_interceptor(), audit.consumer_interceptor()
    for p in acked:
        producer.on_acknowledgement(md(p), None)
    producer.on_acknowledgement(None, RuntimeError("failed send"))
    producer.on_acknowledgement(md(("a", 0, -1)), None)  # acks=0: no position
    batch = [consumed(p, 8 if p in changed else 7) for p in rest]
    batch += [consumed(p) for p in twice] + [consumed(p) for p in extra]
    assert consumer.on_consume(ConsumerRecords.of(batch)).count == len(batch)
    diff = audit.verify()
    assert set(diff.missing) == missing
    assert set(diff.duplicated) == twice
    assert set(diff.mismatched) == changed
    assert set(diff.unexpected) == extra
    assert diff.ok == (not (missing or twice or changed or extra))
    assert audit.verify(["b"]).ok == (
        not any(p[0] == "b" for p in missing | twice | changed | extra)
    )
    assert len(audit.failed) == 1 and audit.unpositioned == 1
