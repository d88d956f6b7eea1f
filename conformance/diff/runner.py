"""Start, send, record, replay, compare: the differential run and its outputs.

Both targets are started with the same broker count, one after the other; the stream is
drawn from the versions both advertise (a request only one of them could take would change that
one's state alone), sent to the first on one connection (reopened after a close, and after a
request left unanswered, since a broker answers a connection's requests in order) and every
answer recorded; then the recorded requests are replayed to the second the same way. Before the
stream, each target is made ready (``_ready``); after a request that creates or deletes topics,
the run waits until Metadata shows the change (``_settle``): the same extra requests on both
sides, not compared, so that each request of the stream meets the same state on both. The
advertised ranges are compared under the mask's ``versions`` list.

Outputs, in ``out_dir``: ``stream.jsonl`` (every request sent, in JSON form, and each side's
outcome), ``diff.json`` (the differences, the per-API summary, the ApiVersions comparison and the
mask with what each entry hid), and the lines :func:`lines` prints.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from conformance.client.sasl import authenticate
from conformance.client.wire import Connection, ConnectionClosed, ProtocolViolation
from conformance.diff.compare import Answer, Comparison, plain
from conformance.diff.mask import MASK_FILE, Mask, load
from conformance.diff.stream import Request, Selection, build
from conformance.protocol import ApiKey, Codec, ErrorCode
from conformance.protocol.errors import DecodeError, EncodeError
from conformance.protocol.internal_topics import TRANSACTION_STATE_TOPIC
from conformance.protocol.jsonform import to_json
from conformance.targets import Target, TargetError, TargetOptions, make_target

if TYPE_CHECKING:  # the models (and the suite they import) load only when --models asks
    from conformance.diff.models import ModelRow

FIND_COORDINATOR, INIT_PRODUCER_ID = int(ApiKey.FIND_COORDINATOR), int(ApiKey.INIT_PRODUCER_ID)
ADD_PARTITIONS_TO_TXN = int(ApiKey.ADD_PARTITIONS_TO_TXN)
METADATA, CREATE_TOPICS = int(ApiKey.METADATA), int(ApiKey.CREATE_TOPICS)
DELETE_TOPICS = int(ApiKey.DELETE_TOPICS)
DESCRIBE_TRANSACTIONS = int(ApiKey.DESCRIBE_TRANSACTIONS)
#: seconds to wait for a topic created or deleted by the stream to show in Metadata
SETTLE_SECONDS = 3.0

#: seconds a request may go unanswered before it counts as silent
REQUEST_TIMEOUT = 5.0
#: seconds a target may take to have its coordinators and producer ids ready
READY_TIMEOUT = 60.0
#: the group the readiness check looks up (a suite name no stream request uses)
READY_KEY = "kc-suite-diff-ready"


@dataclass
class DiffOptions:
    targets: tuple[str, str]
    brokers: int = 1
    seed: int | None = None
    examples: int = 3
    select: list[Selection] | None = None
    out_dir: Path = Path("diff")
    mask_file: Path = MASK_FILE
    timeout: float = REQUEST_TIMEOUT
    #: also run the state-machine models against both (conformance.diff.models)
    models: bool = False
    #: which model tests (suite ids; None: all of conformance.diff.models.MODEL_TESTS)
    model_tests: tuple[str, ...] | None = None


@dataclass
class Side:
    """One target's part: what it advertised and how each request went."""

    spec: str
    describe: str = ""
    advertised: dict[int, tuple[int, int]] = field(default_factory=dict)
    answers: dict[int, Answer] = field(default_factory=dict)
    seconds: float = 0.0
    ready_seconds: float = 0.0


@dataclass
class DiffResult:
    options: DiffOptions
    stream: list[Request]
    sides: tuple[Side, Side]
    differences: list[dict[str, Any]]
    summary: dict[str, dict[str, int]]
    versions: list[dict[str, Any]]
    mask: Mask
    hidden: Counter
    #: per model test: steps on each side, steps compared, differences (empty: not run)
    models: dict[str, ModelRow] = field(default_factory=dict)

    @property
    def unexplained(self) -> int:
        return len(self.differences) + sum(1 for v in self.versions if not v["reason"])


def _configure(target: Target, brokers: int, logs: Path) -> Target:
    """The same broker count on both sides, whatever kind of target each is, and Apache Kafka's
    internal topics at Kafka's own partition counts, as the reference sizes them (a suite run's
    Kafka has one partition each: Metadata of every topic would differ by 49 partitions)."""
    for name in ("brokers", "broker_count"):
        if hasattr(target, name):
            setattr(target, name, brokers)
    if hasattr(target, "internal_topic_partitions"):
        target.internal_topic_partitions = {}
    target.logs_dir = logs
    return target


async def _open(target: Target, codec: Codec, timeout: float) -> Connection:
    """A connection to the target's first bootstrap broker, authenticated as the suite's
    principal where the target takes SASL (``?security=sasl``: both sides as their super user)."""
    ep = target.bootstrap[0]
    conn = await Connection.open(ep.host, ep.port, codec=codec, client_id="kafka-conformance")
    if target.sasl is not None:
        sasl = target.sasl
        try:
            await authenticate(conn, sasl.mechanism, sasl.username, sasl.password, timeout=timeout)
        except BaseException:
            await conn.close()
            raise
    return conn


async def _send_all(target: Target, codec: Codec, stream: list[Request], side: Side, timeout):
    conn: Connection | None = None

    async def connect() -> Connection:
        return await _open(target, codec, timeout)

    conn = await connect()
    side.advertised = await conn.api_versions(3, timeout=timeout)
    side.ready_seconds = await _ready(conn, side.advertised, timeout)
    for req in stream:
        lo_hi = side.advertised.get(req.api_key)
        if lo_hi is None or not lo_hi[0] <= req.version <= lo_hi[1]:
            continue
        if conn is None or conn.closed:
            conn = await connect()
        try:
            resp = await conn.request(req.api_key, req.version, req.body, timeout=timeout)
            side.answers[req.index] = Answer("answered", resp.body)
            created, deleted = topic_changes(req, resp.body)
            if created or deleted:
                await _settle(conn, created, deleted, timeout)
            continue
        except ConnectionClosed as e:
            side.answers[req.index] = Answer("closed", None, str(e))
        except TimeoutError:
            side.answers[req.index] = Answer("silent", None, f"no answer within {timeout:.0f} s")
        except (DecodeError, ProtocolViolation, EncodeError) as e:
            side.answers[req.index] = Answer("malformed", None, str(e))
        await conn.close()
        conn = None
    if conn is not None:
        await conn.close()


def topic_changes(req: Request, answer: dict) -> tuple[list[str], list[str]]:
    """The topics an answered request is creating and deleting: auto-creation by Metadata (v0-3,
    or AllowAutoTopicCreation), CreateTopics that does not only validate, DeleteTopics."""
    if req.api_key == METADATA and (req.version <= 3 or req.body.get("AllowAutoTopicCreation")):
        return [t["Name"] for t in answer["Topics"] if t["ErrorCode"] in (3, 5)], []
    if req.api_key == CREATE_TOPICS and not req.body.get("validateOnly"):
        return [t["Name"] for t in answer["Topics"] if t["ErrorCode"] == 0], []
    if req.api_key == DELETE_TOPICS:
        return [], [t["Name"] for t in answer["Responses"] if t["ErrorCode"] == 0 and t["Name"]]
    return [], []


async def _settle(conn: Connection, created: list[str], deleted: list[str], timeout: float):
    """Wait (at most SETTLE_SECONDS) until Metadata shows the topics created and the deleted
    ones gone. Kafka's brokers learn a controller's change asynchronously (KRaft: Metadata first
    answers an auto-created topic UNKNOWN_TOPIC_OR_PARTITION), the reference's at once; without
    this the next requests would meet different states for a matter of milliseconds."""
    body = {"Topics": [{"Name": n} for n in created + deleted], "AllowAutoTopicCreation": False}
    deadline = time.monotonic() + SETTLE_SECONDS
    while time.monotonic() < deadline:
        resp = await conn.request(METADATA, 4, body, timeout=timeout)
        codes = {t["Name"]: t["ErrorCode"] for t in resp.body["Topics"]}
        if all(codes.get(n) == 0 for n in created) and all(codes.get(n) == 3 for n in deleted):
            return
        await asyncio.sleep(0.1)


async def _ready(conn: Connection, advertised: dict, timeout: float) -> float:
    """Wait until the target's group and transaction coordinators are found and it hands out
    producer ids (bounded by READY_TIMEOUT); returns how long that took.

    Set up alike means ready alike: Apache Kafka creates its internal topics on the first
    FindCoordinator and gets producer id blocks from its controller asynchronously, so a stream
    sent right after the start meets COORDINATOR_NOT_AVAILABLE and NOT_COORDINATOR where the
    reference is ready at once -- a difference of timing, not of behaviour.
    """
    began = time.monotonic()
    probes: list[tuple[int, int, dict]] = [
        (FIND_COORDINATOR, 1, {"Key": READY_KEY, "KeyType": 0}),
        (INIT_PRODUCER_ID, 0, {"TransactionalId": None, "TransactionTimeoutMs": 60000}),
    ]
    if ADD_PARTITIONS_TO_TXN in advertised:  # a target with transactions has their coordinator
        probes.insert(1, (FIND_COORDINATOR, 1, {"Key": READY_KEY, "KeyType": 1}))
    for api_key, version, body in probes:
        await _poll(conn, (api_key, version, body), began, timeout, lambda b: {b["ErrorCode"]})
    if DESCRIBE_TRANSACTIONS in advertised:
        await _transactions_loaded(conn, began, timeout)
    return time.monotonic() - began


async def _transactions_loaded(conn: Connection, began: float, timeout: float) -> None:
    """On a one-broker target, wait until every partition of the transaction state topic is
    loaded: its coordinator answers DescribeTransactions of an id in each partition
    TRANSACTIONAL_ID_NOT_FOUND. Kafka becomes the coordinator of the partitions one by one after
    creating the topic, answering NOT_COORDINATOR for the others meanwhile (an EndTxn right after
    the start met it); the readiness check's look-up names only one partition."""
    body = {"Topics": [{"Name": TRANSACTION_STATE_TOPIC}], "AllowAutoTopicCreation": False}
    meta = (await conn.request(METADATA, 4, body, timeout=timeout)).body
    topics = [t for t in meta["Topics"] if t["ErrorCode"] == 0]
    if len(meta["Brokers"]) != 1 or not topics:
        return  # several brokers: each leads some partitions (the stream waits on none)
    ids = _one_id_per_partition(len(topics[0]["Partitions"]))
    request = (DESCRIBE_TRANSACTIONS, 0, {"TransactionalIds": ids})
    await _poll(
        conn,
        request,
        began,
        timeout,
        lambda b: {s["ErrorCode"] for s in b["TransactionStates"]},
        int(ErrorCode.TRANSACTIONAL_ID_NOT_FOUND),
    )


async def _poll(
    conn: Connection,
    request: tuple[int, int, dict],
    began: float,
    timeout: float,
    codes: Callable[[dict], set[int]],
    wanted: int = 0,
) -> None:
    """Send ``request`` until every error code its answer carries is ``wanted`` (TargetError
    past READY_TIMEOUT from ``began``)."""
    api_key, version, body = request
    while True:
        got = codes((await conn.request(api_key, version, body, timeout=timeout)).body)
        if got <= {wanted}:
            return
        if time.monotonic() - began > READY_TIMEOUT:
            raise TargetError(
                f"the target was not ready within {READY_TIMEOUT:.0f} s: api {api_key} "
                f"answered error code(s) {sorted(got)}"
            )
        await asyncio.sleep(0.2)


def _one_id_per_partition(partitions: int) -> list[str]:
    """A transactional id for each partition of the transaction state topic (Kafka's placement:
    the absolute value of the id's Java hash code, modulo the partition count)."""
    found: dict[int, str] = {}
    for i in range(1000 * max(partitions, 1)):
        tid = f"{READY_KEY}-{i}"
        h = 0
        for ch in tid:  # ASCII: one UTF-16 unit per character
            h = (31 * h + ord(ch)) & 0xFFFFFFFF
        signed = h - (1 << 32) if h >= 1 << 31 else h
        found.setdefault((0 if signed == -(1 << 31) else abs(signed)) % partitions, tid)
        if len(found) == partitions:
            break
    return sorted(found.values())


def _advertised(target: Target, codec: Codec, timeout: float) -> dict[int, tuple[int, int]]:
    async def ask() -> dict[int, tuple[int, int]]:
        async with await _open(target, codec, timeout) as conn:
            return await conn.api_versions(3, timeout=timeout)

    return asyncio.run(ask())


def run_diff(opts: DiffOptions) -> DiffResult:
    """The whole differential run: both targets started, the stream sent to the first and
    recorded, then replayed to the second; both stopped whatever happens."""
    codec = Codec.from_specs(strict=False)
    mask = load(opts.mask_file)
    opts.out_dir.mkdir(parents=True, exist_ok=True)
    targets = [
        _configure(
            make_target(TargetOptions(target=spec)),
            opts.brokers,
            opts.out_dir / f"target-{i + 1}",
        )
        for i, spec in enumerate(opts.targets)
    ]
    for t in targets:
        t.prepare()
    sides = (Side(opts.targets[0]), Side(opts.targets[1]))
    with contextlib.ExitStack() as running:
        for t in targets:
            running.callback(t.stop)
        for t in targets:  # one after the other: starts side by side could draw the same port
            t.start()
        ranges = [_advertised(t, codec, opts.timeout) for t in targets]
        both = {
            key: (max(lo, ranges[1][key][0]), min(hi, ranges[1][key][1]))
            for key, (lo, hi) in ranges[0].items()
            if key in ranges[1]
        }
        stream = build(codec, both, opts.seed, opts.examples, opts.select)
        for target, side in zip(targets, sides, strict=True):
            side.describe = target.describe()
            began = time.monotonic()
            asyncio.run(_send_all(target, codec, stream, side, opts.timeout))
            side.seconds = time.monotonic() - began
    result = _compare(opts, codec, mask, stream, sides)
    if opts.models:
        from conformance.diff.models import MODEL_TESTS, compare_models, run_models

        tests = opts.model_tests or MODEL_TESTS
        paths = run_models(opts.targets, opts.seed or 0, opts.out_dir, tests)
        comparison = Comparison(mask, opts.targets[1], "models")
        found, result.models = compare_models(codec, comparison, paths)
        result.differences.extend(found)
        result.hidden.update(comparison.hidden)
    return result


def recompare(result: DiffResult, mask: Mask) -> DiffResult:
    """The same recorded answers compared under another mask (no target is started)."""
    codec = Codec.from_specs(strict=False)
    return _compare(result.options, codec, mask, result.stream, result.sides)


def _compare(opts, codec: Codec, mask: Mask, stream: list[Request], sides) -> DiffResult:
    a, b = sides
    comparison = Comparison(mask, b.spec)
    differences: list[dict[str, Any]] = []
    summary: dict[str, dict[str, int]] = {}
    for req in stream:
        name = codec.message(req.api_key, "request").name.removesuffix("Request")
        row = summary.setdefault(
            name, {"requests": 0, "compared": 0, "differing_requests": 0, "differences": 0}
        )
        row["requests"] += 1
        if req.index not in a.answers or req.index not in b.answers:
            continue
        row["compared"] += 1
        fields = codec.message(req.api_key, "response").struct.fields
        found = comparison.answers(
            name, req.version, fields, a.answers[req.index], b.answers[req.index], req.body
        )
        if found:
            row["differing_requests"] += 1
            row["differences"] += len(found)
        for d in found:
            differences.append(
                {
                    "api": name,
                    "api_key": req.api_key,
                    "version": req.version,
                    "index": req.index,
                    "label": req.label,
                    "path": d.path,
                    "a": d.a,
                    "b": d.b,
                    "request": request_json(codec, req),
                }
            )
    return DiffResult(
        opts,
        stream,
        sides,
        differences,
        summary,
        _versions(codec, mask, a, b, opts.select),
        mask,
        comparison.hidden,
    )


def _versions(
    codec: Codec, mask: Mask, a: Side, b: Side, select: list[Selection] | None
) -> list[dict[str, Any]]:
    """Each API whose advertised range differs (of the selected APIs, all by default), with the
    mask's reason (empty: unexplained)."""
    out = []
    keys = set(a.advertised) | set(b.advertised)
    if select:
        keys &= {s.api_key for s in select}
    for key in sorted(keys):
        ra, rb = a.advertised.get(key), b.advertised.get(key)
        if ra == rb:
            continue
        try:
            name = codec.message(key, "request").name.removesuffix("Request")
        except Exception:
            name = str(key)
        alone = "first" if rb is None else "second" if ra is None else ""
        rule = mask.version_rule(name, b.spec, alone)
        out.append(
            {
                "api": name,
                "api_key": key,
                "a": list(ra) if ra else None,
                "b": list(rb) if rb else None,
                "mask": rule.id if rule else None,
                "reason": rule.reason if rule else "",
            }
        )
    return out


def request_json(codec: Codec, req: Request) -> Any:
    try:
        return plain(to_json(codec.message(req.api_key, "request"), req.body, req.version))
    except Exception:
        return plain(req.body)


def _range(r: list[int] | None) -> str:
    return "-" if r is None else f"{r[0]}-{r[1]}"


def lines(result: DiffResult) -> list[str]:
    """What the command prints: one line per difference, then the per-API summary, the
    ApiVersions comparison, what each mask entry hid, and a last line with the counts."""
    a, b = result.sides
    out = []
    for d in result.differences:
        request = json.dumps(d["request"], separators=(",", ":"), default=str)
        if len(request) > 300:
            request = request[:300] + "..."
        out.append(
            f"DIFF {d['api']} v{d['version']} #{d['index']} ({d['label']}) {d['path']}: "
            f"{a.spec}={json.dumps(d['a'], default=str)} "
            f"{b.spec}={json.dumps(d['b'], default=str)} -- request {request}"
        )
    out.append("")
    out.append(f"{'API':<28} {'requests':>8} {'compared':>8} {'differ':>6} {'diffs':>6}")
    for name, row in result.summary.items():
        out.append(
            f"{name:<28} {row['requests']:>8} {row['compared']:>8} "
            f"{row['differing_requests']:>6} {row['differences']:>6}"
        )
    if result.models:
        out.append("")
        out.append(f"{'model test':<72} {'steps':>11} {'compared':>8} {'diffs':>6}")
        for test, model in result.models.items():
            steps = f"{model['steps_a']}/{model['steps_b']}"
            why = ""
            if model.get("not_compared"):
                why = f"  (not run by the second: {model['not_compared']})"
            elif model.get("refused"):
                why = f"  ({model['refused']} step(s) at or after a refusal the mask names)"
            out.append(
                f"{test:<72} {steps:>11} {model['compared']:>8} {model['differences']:>6}{why}"
            )
    out.append("")
    for v in result.versions:
        why = f"masked ({v['mask']})" if v["reason"] else "UNEXPLAINED"
        out.append(
            f"VERSIONS {v['api']}: {a.spec} {_range(v['a'])}, {b.spec} {_range(v['b'])} -- {why}"
        )
    for rule_id, count in sorted(result.hidden.items()):
        out.append(f"MASKED {rule_id}: {count} difference(s) hidden")
    compared = sum(r["compared"] for r in result.summary.values())
    out.append(
        f"{len(result.differences)} field difference(s) over {compared} request(s) sent to both, "
        f"{sum(1 for v in result.versions if not v['reason'])} unexplained ApiVersions "
        f"difference(s); {a.spec} {a.seconds:.1f} s, {b.spec} {b.seconds:.1f} s"
    )
    return out


def write(result: DiffResult) -> Path:
    """``stream.jsonl`` and ``diff.json`` into the output folder; returns diff.json's path."""
    out = result.options.out_dir
    a, b = result.sides
    codec = Codec.from_specs(strict=False)
    with (out / "stream.jsonl").open("w", encoding="utf-8") as f:
        for req in result.stream:
            row = {
                "index": req.index,
                "api_key": req.api_key,
                "version": req.version,
                "label": req.label,
                "request": request_json(codec, req),
                "a": _answer(codec, req, a.answers.get(req.index)),
                "b": _answer(codec, req, b.answers.get(req.index)),
            }
            f.write(json.dumps(row, default=str) + "\n")
    report = {
        "format_version": 1,
        "targets": [
            {
                "spec": s.spec,
                "describe": s.describe,
                "seconds": round(s.seconds, 1),
                "ready_seconds": round(s.ready_seconds, 1),
            }
            for s in (a, b)
        ],
        "seed": result.options.seed,
        "examples": result.options.examples,
        "brokers": result.options.brokers,
        "summary": result.summary,
        "differences": result.differences,
        "versions": result.versions,
        "models": result.models,
        "mask": [e | {"hidden": result.hidden.get(e["id"], 0)} for e in result.mask.entries()],
        "unexplained": result.unexplained,
    }
    path = out / "diff.json"
    path.write_text(json.dumps(report, indent=1, default=str) + "\n", encoding="utf-8")
    return path


def _answer(codec: Codec, req: Request, answer: Answer | None) -> Any:
    """How a request went on one side, with the answer's body in JSON form (None: not sent)."""
    if answer is None:
        return None
    out: dict[str, Any] = {"outcome": answer.outcome}
    if answer.detail:
        out["detail"] = answer.detail
    if answer.body is not None:
        spec = codec.message(req.api_key, "response")
        out["body"] = plain(to_json(spec, answer.body, req.version))
    return out
