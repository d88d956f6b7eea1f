"""The KIP-42 chains on their own: order, modifications flowing, failures logged and swallowed
(the next interceptor gets the record as it was before the failing one), close once.

The expected behaviour is the model in ``conformance.suite.kip42.probes`` (``expected_chain``
/ ``expected_consume``), the seed's ``ProducerInterceptors`` / ``ConsumerInterceptors`` loops
with the exceptions caught.
"""

from __future__ import annotations

import logging

from hypothesis import given
from hypothesis import strategies as st

from conformance.client.interceptors import (
    ClusterResource,
    ClusterResourceListeners,
    ConsumerInterceptor,
    ConsumerInterceptors,
    ProducerInterceptor,
    ProducerInterceptors,
    instantiate,
)
from conformance.client.record_types import (
    ConsumerRecord,
    ConsumerRecords,
    OffsetAndMetadata,
    ProducerRecord,
    RecordMetadata,
    TopicPartition,
)
from conformance.suite.kip42.probes import (
    CONSUMER_BEHAVIOURS,
    FAILING,
    PRODUCER_BEHAVIOURS,
    ConsumerProbe,
    ProducerProbe,
    Trace,
    expected_chain,
    expected_consume,
)
from conformance.suite.kip42.strategies import chains

producer_chains = chains(PRODUCER_BEHAVIOURS, max_size=6)
consumer_chains = chains(CONSUMER_BEHAVIOURS, max_size=6)
values = st.lists(st.integers(0, 9), max_size=3)


class Warnings(logging.Handler):
    """Counts the warnings the interceptors module logs."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def __enter__(self) -> Warnings:
        logging.getLogger("conformance.client.interceptors").addHandler(self)
        return self

    def __exit__(self, *exc: object) -> None:
        logging.getLogger("conformance.client.interceptors").removeHandler(self)


def consumer_records(vals: list[list[int]]) -> ConsumerRecords:
    return ConsumerRecords.of(
        [ConsumerRecord("t", i % 2, i, 0, None, None, v, (), 0, -1, 1) for i, v in enumerate(vals)]
    )


@given(producer_chains, st.none() | st.text(max_size=3), values)
def test_on_send_flows_through_the_chain_in_order(behaviours, key, value) -> None:
    trace = Trace()
    chain = ProducerInterceptors([ProducerProbe(i, b, trace) for i, b in enumerate(behaviours)])
    record = ProducerRecord("t", value, key)
    with Warnings() as warned:
        out = chain.on_send(record)
    expected = expected_chain(record, behaviours)
    assert out == expected[-1]
    assert [(e[1], e[2]) for e in trace.of("on_send")] == list(enumerate(expected[:-1]))
    assert len(warned.records) == sum(b in FAILING for b in behaviours)


@given(producer_chains, st.booleans())
def test_on_acknowledgement_reaches_every_interceptor(behaviours, failed) -> None:
    trace = Trace()
    chain = ProducerInterceptors([ProducerProbe(i, b, trace) for i, b in enumerate(behaviours)])
    md = None if failed else RecordMetadata("t", 0, 5, 1, 2, 3, 4)
    exc = RuntimeError("x") if failed else None
    with Warnings() as warned:
        chain.on_acknowledgement(md, exc)
    assert [e[1:] for e in trace.of("on_acknowledgement")] == [
        (i, md, exc) for i in range(len(behaviours))
    ]
    assert len(warned.records) == behaviours.count("raise")


@given(producer_chains, st.integers(1, 3))
def test_close_closes_each_interceptor_once(behaviours, times) -> None:
    trace = Trace()
    chain = ProducerInterceptors([ProducerProbe(i, b, trace) for i, b in enumerate(behaviours)])
    for _ in range(times):
        chain.close()
    assert [e[1] for e in trace.of("close")] == list(range(len(behaviours)))


@given(consumer_chains, st.lists(values, min_size=1, max_size=4))
def test_on_consume_flows_through_the_chain_in_order(behaviours, vals) -> None:
    trace = Trace()
    chain = ConsumerInterceptors([ConsumerProbe(i, b, trace) for i, b in enumerate(behaviours)])
    records = consumer_records(vals)
    with Warnings() as warned:
        out = chain.on_consume(records)
    expected = expected_consume(records, behaviours)
    assert out == expected[-1]
    assert [(e[1], e[2]) for e in trace.of("on_consume")] == list(enumerate(expected[:-1]))
    assert len(warned.records) == sum(b in FAILING for b in behaviours)


@given(consumer_chains, st.dictionaries(st.integers(0, 3), st.integers(0, 100), max_size=3))
def test_on_commit_reaches_every_interceptor_with_the_offsets(behaviours, offs) -> None:
    trace = Trace()
    chain = ConsumerInterceptors([ConsumerProbe(i, b, trace) for i, b in enumerate(behaviours)])
    offsets = {TopicPartition("t", p): OffsetAndMetadata(o) for p, o in offs.items()}
    chain.on_commit(offsets)
    chain.close()
    chain.close()
    assert [e[1:] for e in trace.of("on_commit")] == [(i, offsets) for i in range(len(behaviours))]
    assert [e[1] for e in trace.of("close")] == list(range(len(behaviours)))


def test_interceptor_classes_are_instantiated_and_configured() -> None:
    seen: list[dict] = []

    class Counting(ProducerInterceptor):
        def configure(self, config) -> None:
            seen.append(dict(config))

    probe = Counting()
    made = instantiate([Counting, probe], {"client_id": "c1"})
    assert isinstance(made[0], Counting) and made[1] is probe
    assert seen == [{"client_id": "c1"}, {"client_id": "c1"}]


def test_cluster_resource_listeners_are_those_with_on_update() -> None:
    heard: list[tuple[str, str | None]] = []

    class Listening(ConsumerInterceptor):
        def __init__(self, name: str, fail: bool = False) -> None:
            self.name, self.fail = name, fail

        def on_update(self, cluster: ClusterResource) -> None:
            heard.append((self.name, cluster.cluster_id))
            if self.fail:
                raise RuntimeError("listener failure")

    a, b = Listening("a", fail=True), Listening("b")
    listeners = ClusterResourceListeners([a, ConsumerInterceptor(), b, a, len])
    assert listeners.listeners == [a, b]
    with Warnings() as warned:
        listeners.on_update(ClusterResource("c-1"))
    assert heard == [("a", "c-1"), ("b", "c-1")]
    assert len(warned.records) == 1
