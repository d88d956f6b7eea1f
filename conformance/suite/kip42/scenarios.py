"""KIP-42 scenarios: the suite's own client, with probe interceptors, against a target.

Each scenario is a coroutine that drives a producer and/or consumer of ``conformance.client``
through one situation and checks what the interceptors observed, failing with
:class:`conformance.suite.kit.verify.Failed` naming the requirement broken. The suite's tests run
them on drawn interceptor chains (``strategies.chains``); the project's tests of the client run
the same scenarios against tansu and the reference cluster.

The pieces live beside it: ``env`` (where clients connect), ``probes`` (the probe interceptors
and the model of what a chain does), ``strategies`` (drawn chains and records).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from conformance.client import errors
from conformance.client.audit import Audit, AuditDifferences
from conformance.client.checksum import record_checksum, serialized_size
from conformance.client.partitioner import partition_for_key
from conformance.client.record_types import (
    ConsumerRecord,
    OffsetAndMetadata,
    ProducerRecord,
    RecordMetadata,
    TopicPartition,
)
from conformance.protocol.records import Header
from conformance.suite.kit.verify import check

if TYPE_CHECKING:
    pass

from conformance.suite.kip42.env import ClientEnv, json_serializer
from conformance.suite.kip42.probes import (
    FAILING,
    ConsumerProbe,
    ProducerProbe,
    Trace,
    expected_chain,
    expected_consume,
)

# --- helpers -----------------------------------------------------------------------------------


async def consume_positions(
    env: ClientEnv,
    positions: Sequence[tuple[str, int, int]],
    *,
    req: str,
    timeout: float = 30.0,
    **consumer_kw: Any,
) -> dict[tuple[str, int, int], ConsumerRecord]:
    """The records at ``positions`` (topic, partition, offset) as poll returned them (after
    the consumer's interceptors); a record not read in time or skipped fails ``req``."""
    want: dict[TopicPartition, set[int]] = {}
    for t, p, o in positions:
        want.setdefault(TopicPartition(t, p), set()).add(o)
    got: dict[tuple[str, int, int], ConsumerRecord] = {}

    def missing(tp: TopicPartition) -> set[int]:
        return {o for o in want[tp] if (tp.topic, tp.partition, o) not in got}

    async with env.consumer(**consumer_kw) as consumer:
        consumer.assign(want)
        for tp, offs in want.items():
            consumer.seek(tp, min(offs))
        deadline = time.monotonic() + timeout
        while any(missing(tp) for tp in want):
            check(
                time.monotonic() < deadline,
                f"records at {sorted(positions)[:5]} not all consumed within {timeout} s "
                f"(got {len(got)} of {len(positions)})",
                req,
            )
            for r in (await consumer.poll(1000)).records():
                got.setdefault((r.topic, r.partition, r.offset), r)
            for tp in want:
                gone = missing(tp)
                check(
                    not gone or await consumer.position(tp) <= max(gone),
                    f"acknowledged offsets {sorted(gone)[:5]} of {tp} were never returned",
                    req,
                )
    return got


def _position(md: RecordMetadata) -> tuple[str, int, int]:
    return (md.topic, md.partition, md.offset)


# --- scenarios ---------------------------------------------------------------------------------


async def producer_chain(
    env: ClientEnv, topic: str, behaviours: Sequence[str], sent: Sequence[tuple[str | None, list]]
) -> None:
    """on_send order and flow, on_acknowledgement on success, close once (R1, R2, R5, R6)."""
    trace = Trace()
    probes = [ProducerProbe(i, b, trace) for i, b in enumerate(behaviours)]
    producer = env.producer(interceptors=probes, linger_ms=2, config={"kc.probe": "yes"})
    calls: list[tuple] = []
    futures = []
    async with producer:
        for k, (key, value) in enumerate(sent):

            def cb(md: Any, exc: Any, k: int = k) -> None:
                calls.append(("callback", k, len(trace.events)))

            try:
                futures.append(await producer.send(topic, key, value, callback=cb))
            except Exception as e:
                check(False, f"send() raised {e!r} with interceptors {behaviours}", "KIP-42.R6")
        mds = await asyncio.gather(*futures)
        n_partitions = len(producer.metadata.partitions(topic))
    for i in range(len(behaviours)):
        check(
            trace.configs.get(i, {}).get("kc.probe") == "yes"
            and trace.configs[i].get("client_id") == producer.metadata.client_id,
            f"interceptor {i} was not configured with the producer's settings",
            "KIP-42.R1",
        )
    sends = trace.of("on_send")
    check(
        len(sends) == len(sent) * len(behaviours),
        f"{len(sends)} on_send calls for {len(sent)} records and {len(behaviours)} interceptors",
        "KIP-42.R1",
    )
    finals = []
    for k, (key, value) in enumerate(sent):
        chain = expected_chain(ProducerRecord(topic, value, key), behaviours)
        finals.append(chain[-1])
        for i in range(len(behaviours)):
            _, index, got = sends[k * len(behaviours) + i]
            check(
                index == i and got == chain[i],
                f"record {k}: interceptor {index} (expected {i}) received {got}, expected "
                f"{chain[i]} (chain {behaviours})",
                "KIP-42.R6" if any(b in FAILING for b in behaviours[:i]) else "KIP-42.R1",
            )
            check(
                got.partition is None and not isinstance(got.value, bytes | bytearray),
                f"record {k}: on_send saw a serialised or partitioned record {got}",
                "KIP-42.R1",
            )
    for k, (md, final) in enumerate(zip(mds, finals, strict=True)):
        check(md.offset >= 0, f"record {k} acknowledged without an offset: {md}", "KIP-42.R2")
        if final.key is not None:
            want = partition_for_key(final.key.encode(), n_partitions)
            check(
                md.partition == want,
                f"record {k} went to partition {md.partition}, not {want} of its final key "
                f"{final.key!r}: the partition was not chosen after on_send",
                "KIP-42.R1",
            )
    _check_acks(trace, behaviours, mds, calls)
    _check_closed(trace, behaviours, "producer")
    got = await consume_positions(env, [_position(md) for md in mds], req="KIP-42.R1")
    for k, (md, final) in enumerate(zip(mds, finals, strict=True)):
        r = got[_position(md)]
        check(
            (r.key.decode() if r.key is not None else None, r.value, r.headers)
            == (final.key, final.value, final.headers),
            f"record {k} was stored as key={r.key!r} value={r.value!r} headers={r.headers}, "
            f"not as the last interceptor returned it: {final}",
            "KIP-42.R1",
        )


def _check_acks(
    trace: Trace, behaviours: Sequence[str], mds: Sequence[RecordMetadata], calls: list[tuple]
) -> None:
    acks = trace.of("on_acknowledgement")
    check(
        len(acks) == len(mds) * len(behaviours),
        f"{len(acks)} on_acknowledgement calls for {len(mds)} acknowledged records and "
        f"{len(behaviours)} interceptors",
        "KIP-42.R2",
    )
    by_record: dict[tuple, list[tuple]] = {}
    for at, e in enumerate(trace.events):
        if e[0] == "on_acknowledgement":
            check(
                e[2] is not None and e[3] is None,
                f"on_acknowledgement({e[2]}, {e[3]!r}) for a record that was acknowledged",
                "KIP-42.R2",
            )
            by_record.setdefault(_position(e[2]), []).append((e[1], at))
    for k, md in enumerate(mds):
        seen = by_record.get(_position(md), [])
        check(
            [i for i, _ in seen] == list(range(len(behaviours))),
            f"record {k} at {_position(md)}: on_acknowledgement called by interceptors "
            f"{[i for i, _ in seen]}, expected each of {len(behaviours)} once, in order",
            "KIP-42.R2",
        )
        cb = [c for c in calls if c[1] == k]
        check(
            len(cb) == 1 and all(at < cb[0][2] for _, at in seen),
            f"record {k}: the callback ran {len(cb)} time(s), or before on_acknowledgement",
            "KIP-42.R2",
        )


def _check_closed(trace: Trace, behaviours: Sequence[str], what: str) -> None:
    closes = [e[1] for e in trace.of("close")]
    check(
        closes == list(range(len(behaviours))),
        f"closing the {what} closed interceptors {closes}, expected each of "
        f"{len(behaviours)} once (chain {behaviours})",
        "KIP-42.R5",
    )


ERROR_KINDS = ("unknown-topic", "serialization", "bad-partition", "closed")


async def producer_errors(env: ClientEnv, topic: str, behaviours: Sequence[str], kind: str) -> None:
    """on_acknowledgement(None, error) when send() fails before sending (R2, R6)."""
    trace = Trace()
    probes = [ProducerProbe(i, b, trace) for i, b in enumerate(behaviours)]

    def serializer(t: str, value: Any) -> bytes | None:
        # "tag" interceptors append to the value, so only its head marks the poisoned record
        if isinstance(value, list) and value[:1] == ["unserialisable"]:
            raise ValueError("refused by the test's serializer")
        return json_serializer(t, value)

    producer = env.producer(interceptors=probes, max_block_ms=500, value_serializer=serializer)
    target, value, partition = topic, [kind], None
    if kind == "unknown-topic":
        target = f"{topic}-absent"
    elif kind == "serialization":
        value = ["unserialisable"]
    elif kind == "bad-partition":
        partition = 1000
    raised: BaseException | None = None
    async with producer:
        if kind == "closed":
            await producer.close()
        try:
            await producer.send(target, "k", value, partition=partition)
        except Exception as e:
            raised = e
    check(raised is not None, f"send() of a {kind} record did not raise", "KIP-42.R2")
    if kind == "serialization":
        check(
            isinstance(raised, errors.SerializationError),
            f"a failing serializer raised {raised!r}, not a SerializationError",
            "KIP-42.R2",
        )
    check(
        len(trace.of("on_send")) == len(behaviours),
        f"on_send called {len(trace.of('on_send'))} times for {len(behaviours)} interceptors",
        "KIP-42.R6" if any(b in FAILING for b in behaviours) else "KIP-42.R1",
    )
    acks = trace.of("on_acknowledgement")
    check(
        [e[1] for e in acks] == list(range(len(behaviours)))
        and all(e[2] is None and e[3] is raised for e in acks),
        f"send() raised {raised!r} ({kind}) but on_acknowledgement was called as "
        f"{[(e[1], e[2], e[3]) for e in acks]}, expected each interceptor once with "
        "(None, that exception)",
        "KIP-42.R2",
    )
    first_ack = trace.events.index(acks[0]) if acks else -1
    last_send = max(trace.events.index(e) for e in trace.of("on_send"))
    check(first_ack > last_send, "on_acknowledgement ran before on_send", "KIP-42.R2")
    _check_closed(trace, behaviours, "producer")


async def produce_values(env: ClientEnv, topic: str, values: Sequence[Any]) -> list[RecordMetadata]:
    """Produce JSON values with no key and no interceptor; their metadata."""
    async with env.producer(linger_ms=2) as producer:
        futures = [await producer.send(topic, None, v) for v in values]
        return list(await asyncio.gather(*futures))


async def consumer_chain(
    env: ClientEnv, topic: str, behaviours: Sequence[str], values: Sequence[list]
) -> None:
    """on_consume chain before poll returns, close once (R3, R5, R6)."""
    mds = await produce_values(env, topic, values)
    trace = Trace()
    probes = [ConsumerProbe(i, b, trace) for i, b in enumerate(behaviours)]
    got = await consume_positions(
        env, [_position(md) for md in mds], req="KIP-42.R3", interceptors=probes
    )
    consumes = trace.of("on_consume")
    check(
        consumes and len(consumes) % len(behaviours) == 0,
        f"{len(consumes)} on_consume calls with {len(behaviours)} interceptors",
        "KIP-42.R3",
    )
    for start in range(0, len(consumes), len(behaviours)):
        chain = expected_consume(consumes[start][2], behaviours)
        for i in range(len(behaviours)):
            _, index, records = consumes[start + i]
            check(
                index == i and records == chain[i],
                f"on_consume of interceptor {index} (expected {i}) received "
                f"{[r.value for r in records.records()]}, expected "
                f"{[r.value for r in chain[i].records()]} (chain {behaviours})",
                "KIP-42.R6" if any(b in FAILING for b in behaviours[:i]) else "KIP-42.R3",
            )
    tags = [f"c{i}" for i, b in enumerate(behaviours) if b == "tag"]
    for k, (md, v) in enumerate(zip(mds, values, strict=True)):
        r = got[_position(md)]
        check(
            r.value == [*v, *tags],
            f"record {k}: poll returned value {r.value}, not what the last interceptor "
            f"returned ({[*v, *tags]})",
            "KIP-42.R3",
        )
    _check_closed(trace, behaviours, "consumer")


async def commits(
    env: ClientEnv, topic: str, behaviours: Sequence[str], values: Sequence[list], group: str
) -> None:
    """on_commit with the offsets the coordinator acknowledged, close once (R4, R5, R6)."""
    mds = await produce_values(env, topic, values)
    trace = Trace()
    probes = [ConsumerProbe(i, b, trace) for i, b in enumerate(behaviours)]
    ends: dict[TopicPartition, int] = {}
    for md in mds:
        tp = TopicPartition(md.topic, md.partition)
        ends[tp] = max(ends.get(tp, 0), md.offset + 1)
    offsets = {tp: OffsetAndMetadata(end, "kip-42") for tp, end in ends.items()}
    raising = "raise" in behaviours
    async with env.consumer(group_id=group, interceptors=probes) as consumer:
        consumer.assign(offsets)
        try:
            await consumer.commit_sync(offsets)
        except Exception as e:
            check(False, f"commit_sync raised {e!r} with interceptors {behaviours}", "KIP-42.R6")
        calls = trace.of("on_commit")
        if raising:  # an on_commit that raises is swallowed and the rest are still called
            check(
                [e[1] for e in calls] == list(range(len(behaviours))),
                f"commit_sync({offsets}) with interceptors {behaviours} called on_commit of "
                f"{[e[1] for e in calls]}, expected each interceptor once",
                "KIP-42.R6",
            )
        check(
            [e[1] for e in calls] == list(range(len(behaviours)))
            and all(e[2] == offsets for e in calls),
            f"commit_sync({offsets}) called on_commit as {[(e[1], e[2]) for e in calls]}, "
            f"expected each interceptor once with the committed offsets",
            "KIP-42.R4",
        )
        stored = await consumer.committed(offsets)
        check(
            {tp: om.offset if om else None for tp, om in stored.items()}
            == {tp: om.offset for tp, om in offsets.items()},
            f"on_commit was called, but the coordinator holds {stored}, not {offsets}",
            "KIP-42.R4",
        )
    _check_closed(trace, behaviours, "consumer")


async def checksums(
    env: ClientEnv, topic: str, records: Sequence[tuple[bytes | None, bytes | None, tuple]]
) -> None:
    """RecordMetadata and ConsumerRecord carry the same checksum and sizes (R7)."""
    async with env.producer(linger_ms=2, value_serializer=None) as producer:
        futures = [await producer.send(topic, k, v, h) for k, v, h in records]
        mds = await asyncio.gather(*futures)
    for md, (k, v, h) in zip(mds, records, strict=True):
        want = (record_checksum(k, v, h), serialized_size(k), serialized_size(v))
        check(
            (md.checksum, md.serialized_key_size, md.serialized_value_size) == want,
            f"RecordMetadata {md} does not carry checksum/sizes {want} of the record sent",
            "KIP-42.R7",
        )
    got = await consume_positions(
        env, [_position(md) for md in mds], req="KIP-42.R7", value_deserializer=None
    )
    for md in mds:
        r = got[_position(md)]
        check(
            (r.checksum, r.serialized_key_size, r.serialized_value_size)
            == (md.checksum, md.serialized_key_size, md.serialized_value_size),
            f"consumed record at {_position(md)} has checksum {r.checksum} and sizes "
            f"{r.serialized_key_size}/{r.serialized_value_size}; it was acknowledged with "
            f"{md.checksum} and {md.serialized_key_size}/{md.serialized_value_size}",
            "KIP-42.R7",
        )


async def audited_round_trip(
    env: ClientEnv,
    topic: str,
    count: int,
    *,
    acks: int | str = "all",
    idempotent: bool = False,
    seed: int = 0,
) -> AuditDifferences:
    """Produce ``count`` records with an audit interceptor, read the topic from the start with
    another, and compare (R8). Returns the differences (checked empty here)."""
    import random

    rnd = random.Random(seed)
    audit = Audit()
    producer = env.producer(
        interceptors=[audit.producer_interceptor()],
        value_serializer=None,
        acks=acks,
        enable_idempotence=idempotent,
        linger_ms=5,
    )
    async with producer:
        futures = []
        for i in range(count):
            key = None if rnd.random() < 0.2 else f"key-{rnd.randrange(50)}".encode()
            value = None if rnd.random() < 0.05 else rnd.randbytes(rnd.randrange(0, 200))
            headers = [Header("n", str(i).encode())] if rnd.random() < 0.5 else []
            futures.append(await producer.send(topic, key, value, headers))
        await asyncio.gather(*futures)
        partitions = producer.metadata.partitions(topic)
    check(not audit.failed, f"{len(audit.failed)} sends failed: {audit.failed[:3]}", "KIP-42.R8")
    check(
        len(audit.acknowledged) == count,
        f"{len(audit.acknowledged)} distinct positions acknowledged for {count} records",
        "KIP-42.R8",
    )
    ends: dict[int, int] = {}
    for _, p, o in audit.acknowledged:
        ends[p] = max(ends.get(p, -1), o + 1)
    consumer = env.consumer(interceptors=[audit.consumer_interceptor()], value_deserializer=None)
    async with consumer:
        tps = [TopicPartition(topic, p) for p in partitions]
        consumer.assign(tps)
        consumer.seek_to_beginning()
        deadline = time.monotonic() + env.timeout + count / 500
        while True:
            positions = {tp.partition: await consumer.position(tp) for tp in tps}
            if all(positions.get(p, 0) >= end for p, end in ends.items()):
                break
            check(
                time.monotonic() < deadline,
                f"the topic was not read to the acknowledged ends {ends} in time "
                f"(positions {positions})",
                "KIP-42.R8",
            )
            await consumer.poll(500)
    differences = audit.verify([topic])
    check(differences.ok, f"audit of {count} records: {differences}", "KIP-42.R8")
    return differences
