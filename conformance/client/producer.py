"""The suite's producer: batching per partition with linger, Produce v3+, acks 0/1/all, optional
idempotence, and the KIP-42 interceptor chain.

``send`` runs the interceptors' ``on_send`` first (before the key and value are serialised and
before a partition is chosen), then waits for the topic's metadata, serialises, partitions and
appends the record to its partition's open batch; it returns the future of the record's
:class:`RecordMetadata`. A background sender drains batches whose linger has passed (or that
are full, or being flushed) and sends one Produce request per leader, at most one batch per
partition in flight so that order holds across retries. Retriable errors (stale leadership,
timeouts, lost connections) are retried until ``retries`` or ``delivery_timeout`` run out.

Every record ends in exactly one ``on_acknowledgement``: with its metadata once acknowledged,
or with ``None`` and the exception once it failed, including when ``send`` itself raises
(unknown topic, serialisation failure, a closed producer); interceptors run before the record's
callback and before its future completes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from conformance.client import errors
from conformance.client.checksum import record_checksum, serialized_size
from conformance.client.interceptors import (
    ClusterResourceListeners,
    ProducerInterceptors,
    instantiate,
)
from conformance.client.metadata import ClusterMetadata, SaslSettings
from conformance.client.partitioner import DefaultPartitioner
from conformance.client.record_types import (
    NO_TIMESTAMP,
    ProducerRecord,
    RecordMetadata,
    TopicPartition,
)
from conformance.client.serialization import Serializer, bytes_serializer, call_serializer
from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.records import Compression, Header, build_batch, encode_batch
from conformance.protocol.spec import ZERO_UUID

log = logging.getLogger(__name__)

#: Produce v3 is the first with record batch v2 (and what Kafka 4.0 still accepts)
MIN_PRODUCE_VERSION = 3
#: Produce v13 (Kafka 4.1) names topics by id; up to v12 by name
LAST_PRODUCE_BY_NAME = 12
BATCH_OVERHEAD = 61
#: the most a v2 record adds around its key, value and headers (length, attributes, deltas)
RECORD_OVERHEAD = 21
MAX_SEQUENCE = 2**31 - 1
ACKS = {"all": -1, -1: -1, "1": 1, 1: 1, "0": 0, 0: 0}

Callback = Callable[[RecordMetadata | None, BaseException | None], None]


@dataclass(eq=False)
class _Pending:
    """A record appended to a batch, serialised, waiting for its answer."""

    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    future: asyncio.Future
    callback: Callback | None

    @property
    def size(self) -> int:
        size = RECORD_OVERHEAD + max(serialized_size(self.key), 0)
        size += max(serialized_size(self.value), 0)
        for h in self.headers:
            size += 10 + len(h.key.encode()) + max(serialized_size(h.value), 0)
        return size


@dataclass(eq=False)
class _Batch:
    tp: TopicPartition
    created: float
    deadline: float
    records: list[_Pending] = field(default_factory=list)
    size: int = BATCH_OVERHEAD
    #: no more appends (it was drained once)
    closed: bool = False
    attempts: int = 0
    retry_at: float = 0.0
    base_sequence: int = -1
    encoded: bytes | None = None


def _label(exc: BaseException, tp: TopicPartition) -> None:
    """Tell a send failure's exception which partition it concerns (metadata is None then).

    The partition is -1 when the failure came before one was chosen."""
    if getattr(exc, "topic_partition", None) is None:
        with contextlib.suppress(AttributeError):
            exc.topic_partition = tp  # type: ignore[attr-defined]


class Producer:
    """An asyncio Kafka producer (use ``async with Producer(...) as p`` or start/close)."""

    def __init__(
        self,
        bootstrap: str | Iterable[Any],
        *,
        codec: Codec | None = None,
        client_id: str = "kafka-conformance-producer",
        acks: int | str = "all",
        linger_ms: float = 5,
        batch_size: int = 16384,
        max_request_size: int = 1048576,
        compression: Compression = Compression.NONE,
        retries: int = 10,
        retry_backoff_ms: float = 100,
        request_timeout_ms: float = 30000,
        delivery_timeout_ms: float = 120000,
        max_block_ms: float = 10000,
        enable_idempotence: bool = False,
        key_serializer: Serializer | None = None,
        value_serializer: Serializer | None = None,
        partitioner: Callable[[str, bytes | None, list[int]], int] | None = None,
        interceptors: Iterable[Any] = (),
        config: Mapping[str, Any] | None = None,
        sasl: SaslSettings | None = None,
        allow_auto_topic_creation: bool = False,
    ) -> None:
        if acks not in ACKS:
            raise ValueError(f"acks must be 0, 1 or 'all', not {acks!r}")
        self.acks = ACKS[acks]
        if enable_idempotence and self.acks != -1:
            raise ValueError("idempotence needs acks='all'")
        self.linger = linger_ms / 1000
        self.batch_size = batch_size
        self.max_request_size = max_request_size
        self.compression = Compression(compression)
        self.retries = retries
        self.retry_backoff = retry_backoff_ms / 1000
        self.request_timeout = request_timeout_ms / 1000
        self.delivery_timeout = delivery_timeout_ms / 1000
        self.max_block = max_block_ms / 1000
        self.enable_idempotence = enable_idempotence
        self.key_serializer = key_serializer or bytes_serializer
        self.value_serializer = value_serializer or bytes_serializer
        self.partitioner = partitioner or DefaultPartitioner()
        settings = {
            "client_id": client_id,
            "bootstrap_servers": bootstrap,
            "acks": self.acks,
            "enable_idempotence": enable_idempotence,
            **(config or {}),
        }
        self.interceptors = ProducerInterceptors(instantiate(interceptors, settings))
        self.metadata = ClusterMetadata(
            bootstrap,
            codec=codec,
            client_id=client_id,
            sasl=sasl,
            request_timeout=self.request_timeout,
            retry_backoff=self.retry_backoff,
            allow_auto_topic_creation=allow_auto_topic_creation,
            listeners=ClusterResourceListeners(
                [*self.interceptors.interceptors, self.key_serializer, self.value_serializer]
            ),
        )
        self.producer_id, self.producer_epoch = -1, -1
        self._sequences: dict[TopicPartition, int] = {}
        self._queues: dict[TopicPartition, deque[_Batch]] = {}
        self._in_flight: set[TopicPartition] = set()
        self._incomplete: set[asyncio.Future] = set()
        self._tasks: set[asyncio.Task] = set()
        self._wake = asyncio.Event()
        self._flushing = 0
        self._refreshing = False
        self._sender: asyncio.Task | None = None
        self._closed = False

    # --- life cycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Bootstrap (brokers, cluster id), get a producer id when idempotent, start sending."""
        await self.metadata.start()
        if self.enable_idempotence:
            await self._init_producer_id()
        self._sender = asyncio.get_running_loop().create_task(self._run())

    async def __aenter__(self) -> Producer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def flush(self) -> None:
        """Send everything queued now and wait until each of those records is answered."""
        waiting = list(self._incomplete)
        if not waiting:
            return
        self._flushing += 1
        self._wake.set()
        try:
            await asyncio.gather(*waiting, return_exceptions=True)
        finally:
            self._flushing -= 1

    async def close(self, timeout: float | None = None) -> None:
        """Flush (up to ``timeout``), fail what is left, close the interceptors and connections."""
        if self._closed:
            return
        self._closed = True
        if self._sender is not None:
            try:
                await asyncio.wait_for(self.flush(), timeout)
            except TimeoutError:
                pass
            self._sender.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._sender
        for task in list(self._tasks):
            task.cancel()
        for q in self._queues.values():
            while q:
                self._fail(q.popleft(), errors.ProducerClosedError("the producer was closed"))
        self.interceptors.close()
        await self.metadata.close()

    # --- send ----------------------------------------------------------------------------------

    async def send(
        self,
        topic: str,
        key: Any = None,
        value: Any = None,
        headers: Iterable[Header | tuple[str, bytes | None]] = (),
        partition: int | None = None,
        timestamp: int | None = None,
        *,
        callback: Callback | None = None,
    ) -> asyncio.Future:
        """Queue a record; returns the future of its RecordMetadata (see ``send_record``)."""
        record = ProducerRecord(topic, value, key, tuple(headers), partition, timestamp)
        return await self.send_record(record, callback=callback)

    async def send_record(
        self, record: ProducerRecord, *, callback: Callback | None = None
    ) -> asyncio.Future:
        """Run ``on_send``, then serialise, partition and queue the record it returned.

        Failures before the record is queued call ``on_acknowledgement(None, error)`` and are
        raised here (the callback is not called for them, as in the seed).
        """
        record = self.interceptors.on_send(record)
        try:
            if self._closed or self._sender is None:
                raise errors.ProducerClosedError("the producer is closed or not started")
            info = await self.metadata.wait_for_topic(record.topic, self.max_block)
            key = call_serializer(self.key_serializer, record.topic, record.key, "key")
            value = call_serializer(self.value_serializer, record.topic, record.value, "value")
            partitions = sorted(info.partitions)
            if record.partition is None:
                partition = self.partitioner(record.topic, key, partitions)
            elif record.partition in info.partitions:
                partition = record.partition
            else:
                raise errors.ClientError(
                    f"partition {record.partition} of {record.topic!r} does not exist "
                    f"(partitions 0-{len(partitions) - 1})"
                )
            ts = record.timestamp if record.timestamp is not None else int(time.time() * 1000)
            fut = asyncio.get_running_loop().create_future()
            pending = _Pending(ts, key, value, record.headers, fut, callback)
            if pending.size + BATCH_OVERHEAD > self.max_request_size:
                raise errors.RecordTooLargeError(
                    f"a record of about {pending.size} bytes exceeds max_request_size "
                    f"{self.max_request_size}"
                )
        except Exception as e:
            part = -1 if record.partition is None else record.partition
            _label(e, TopicPartition(record.topic, part))
            self.interceptors.on_acknowledgement(None, e)
            raise
        self._append(TopicPartition(record.topic, partition), pending)
        return fut

    def _append(self, tp: TopicPartition, pending: _Pending) -> None:
        q = self._queues.setdefault(tp, deque())
        batch = q[-1] if q else None
        if batch is None or batch.closed or batch.size + pending.size > self.batch_size:
            if batch is not None and not batch.closed:
                batch.closed = True
            now = time.monotonic()
            batch = _Batch(tp, now, now + self.delivery_timeout)
            q.append(batch)
        batch.records.append(pending)
        batch.size += pending.size
        self._incomplete.add(pending.future)
        pending.future.add_done_callback(self._incomplete.discard)
        if batch.size >= self.batch_size or len(q) > 1 or len(batch.records) == 1:
            self._wake.set()

    # --- completion ----------------------------------------------------------------------------

    def _complete(self, batch: _Batch, base_offset: int, log_append_time: int) -> None:
        for i, r in enumerate(batch.records):
            md = RecordMetadata(
                topic=batch.tp.topic,
                partition=batch.tp.partition,
                offset=base_offset + i if base_offset >= 0 else -1,
                timestamp=log_append_time if log_append_time != NO_TIMESTAMP else r.timestamp,
                checksum=record_checksum(r.key, r.value, r.headers),
                serialized_key_size=serialized_size(r.key),
                serialized_value_size=serialized_size(r.value),
            )
            self._finish(r, md, None)

    def _fail(self, batch: _Batch, exc: BaseException) -> None:
        _label(exc, batch.tp)
        for r in batch.records:
            self._finish(r, None, exc)

    def _finish(self, r: _Pending, md: RecordMetadata | None, exc: BaseException | None) -> None:
        if r.future.done():
            return
        self.interceptors.on_acknowledgement(md, exc)
        if r.callback is not None:
            try:
                r.callback(md, exc)
            except Exception:
                log.warning("send callback raised; ignored", exc_info=True)
        if exc is None:
            r.future.set_result(md)
        else:
            r.future.set_exception(exc)

    # --- sender --------------------------------------------------------------------------------

    async def _run(self) -> None:
        while True:
            self._wake.clear()
            now = time.monotonic()
            wait = self._drain(now)
            try:
                await asyncio.wait_for(self._wake.wait(), wait)
            except TimeoutError:
                pass

    def _drain(self, now: float) -> float | None:
        """Send every ready batch; the seconds until the next one is ready (None: no batch)."""
        by_node: dict[int, list[_Batch]] = {}
        next_at: float | None = None
        stale = False
        for tp, q in self._queues.items():
            self._expire(q, now)
            if not q or tp in self._in_flight:
                continue
            b = q[0]
            if b.attempts:
                ready_at = b.retry_at
            elif b.closed or len(q) > 1 or self._flushing or b.size >= self.batch_size:
                ready_at = now
            else:
                ready_at = b.created + self.linger
            leader = self.metadata.leader(tp)
            if ready_at <= now and leader is None:
                stale, ready_at = True, now + self.retry_backoff
            if ready_at > now:
                next_at = ready_at if next_at is None else min(next_at, ready_at)
                continue
            q.popleft()
            b.closed = True
            self._in_flight.add(tp)
            by_node.setdefault(leader, []).append(b)  # type: ignore[arg-type]
        if stale:
            self._refresh_soon()
        for node, batches in by_node.items():
            for chunk in self._chunks(batches):
                self._spawn(self._send(node, chunk))
        return None if next_at is None else max(next_at - now, 0.001)

    def _chunks(self, batches: list[_Batch]) -> list[list[_Batch]]:
        """Split a node's batches into requests of at most ``max_request_size``."""
        out: list[list[_Batch]] = [[]]
        size = 0
        for b in batches:
            if out[-1] and size + b.size > self.max_request_size:
                out.append([])
                size = 0
            out[-1].append(b)
            size += b.size
        return out

    def _expire(self, q: deque[_Batch], now: float) -> None:
        while q and q[0].deadline <= now:
            b = q.popleft()
            self._fail(
                b,
                errors.DeliveryTimeoutError(
                    f"{len(b.records)} record(s) for {b.tp} not acknowledged within "
                    f"{self.delivery_timeout:.1f} s"
                ),
            )

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _refresh_soon(self) -> None:
        if self._refreshing:
            return
        self._refreshing = True

        async def refresh() -> None:
            try:
                await self.metadata.refresh([])
            except Exception as e:
                log.info("metadata refresh failed: %s", e)
                await asyncio.sleep(self.retry_backoff)
            finally:
                self._refreshing = False
                self._wake.set()

        self._spawn(refresh())

    def _encode(self, b: _Batch) -> bytes:
        if b.encoded is None:
            if self.enable_idempotence:
                b.base_sequence = self._sequences.get(b.tp, 0)
                self._sequences[b.tp] = (b.base_sequence + len(b.records)) % (MAX_SEQUENCE + 1)
            batch = build_batch(
                [(r.timestamp, r.key, r.value, r.headers) for r in b.records],
                compression=self.compression,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=b.base_sequence,
            )
            b.encoded = encode_batch(batch)
        return b.encoded

    def _request_body(self, batches: list[_Batch]) -> dict:
        """Produce's body at every version: each topic by name (v3-v12) and by id (v13+)."""
        topics: dict[str, list[dict]] = {}
        for b in batches:
            topics.setdefault(b.tp.topic, []).append(
                {"Index": b.tp.partition, "Records": self._encode(b)}
            )
        return {
            "TransactionalId": None,
            "Acks": self.acks,
            "TimeoutMs": int(self.request_timeout * 1000),
            "TopicData": [
                {"Name": t, "TopicId": self.metadata.topic_id(t), "PartitionData": ps}
                for t, ps in topics.items()
            ],
        }

    def _newest_produce(self, batches: list[_Batch]) -> int | None:
        """The highest Produce version the batches' topics can be named at: by id (any) when
        the metadata gave every topic's id, else by name (v12 at most)."""
        by_id = all(self.metadata.topic_id(b.tp.topic) != ZERO_UUID for b in batches)
        return None if by_id else LAST_PRODUCE_BY_NAME

    async def _send(self, node: int, batches: list[_Batch]) -> None:
        for b in batches:
            b.attempts += 1
        try:
            body = self._request_body(batches)
            top = self._newest_produce(batches)
            if self.acks == 0:
                await self.metadata.connection(node)
                version = self.metadata.pick(node, ApiKey.PRODUCE, MIN_PRODUCE_VERSION, top)
                await self.metadata.send_only(node, ApiKey.PRODUCE, version, body)
                for b in batches:
                    self._complete(b, -1, NO_TIMESTAMP)
                return
            version, resp = await self.metadata.request(
                node,
                ApiKey.PRODUCE,
                lambda v: body,
                min_version=MIN_PRODUCE_VERSION,
                max_version=top,
                timeout=self.request_timeout + 5,
            )
            self._handle_response(batches, resp, version)
        except (ConnectionError, TimeoutError) as e:
            err = errors.KafkaError(ErrorCode.NETWORK_EXCEPTION, str(e), context=f"broker {node}")
            for b in batches:
                self._retry_or_fail(b, err)
            self._refresh_soon()
        except Exception as e:
            for b in batches:
                self._fail(b, e)
        finally:
            for b in batches:
                self._in_flight.discard(b.tp)
            self._wake.set()

    def _handle_response(self, batches: list[_Batch], resp: dict, version: int) -> None:
        by_id = version > LAST_PRODUCE_BY_NAME
        answers = {
            (self.metadata.topic_name(t["TopicId"]) if by_id else t["Name"], p["Index"]): p
            for t in resp["Responses"]
            for p in t["PartitionResponses"]
        }
        stale = False
        for b in batches:
            p = answers.get((b.tp.topic, b.tp.partition))
            if p is None:
                self._fail(b, errors.ClientError(f"the Produce response has no answer for {b.tp}"))
                continue
            code = p["ErrorCode"]
            if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                self._complete(b, p["BaseOffset"], p["LogAppendTimeMs"])
                continue
            err = errors.KafkaError(code, p["ErrorMessage"], context=f"produce to {b.tp}")
            stale |= code in errors.STALE_METADATA
            self._retry_or_fail(b, err)
        if stale:
            self._refresh_soon()

    def _retry_or_fail(self, b: _Batch, err: errors.KafkaError) -> None:
        now = time.monotonic()
        if err.retriable and b.attempts <= self.retries and now + self.retry_backoff < b.deadline:
            b.retry_at = now + self.retry_backoff
            self._queues.setdefault(b.tp, deque()).appendleft(b)
            log.info("retrying %d record(s) for %s after %s", len(b.records), b.tp, err)
        else:
            self._fail(b, err)

    # --- idempotence ---------------------------------------------------------------------------

    async def _init_producer_id(self) -> None:
        """InitProducerId for an idempotent (non-transactional) producer, from any broker."""
        deadline = time.monotonic() + self.max_block
        while True:
            last: Exception | None = None
            for node in self.metadata.any_node():
                try:
                    _, body = await self.metadata.request(
                        node,
                        ApiKey.INIT_PRODUCER_ID,
                        lambda v: {
                            "TransactionalId": None,
                            "TransactionTimeoutMs": 2**31 - 1,
                            "ProducerId": -1,
                            "ProducerEpoch": -1,
                        },
                    )
                except (ConnectionError, TimeoutError) as e:
                    last = e
                    continue
                code = body["ErrorCode"]
                if code == ErrorCode.NONE:
                    self.producer_id, self.producer_epoch = (
                        body["ProducerId"],
                        body["ProducerEpoch"],
                    )
                    return
                last = errors.KafkaError(code, context="InitProducerId")
                if not errors.is_retriable(code):
                    raise last
                break
            if time.monotonic() + self.retry_backoff > deadline:
                raise errors.ClientError(f"no producer id within {self.max_block:.1f} s: {last}")
            await asyncio.sleep(self.retry_backoff)
