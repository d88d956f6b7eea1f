"""KIP-42.R1-R7 judged on the events of the Java client harness (``targets/java_client``).

The harness writes each interceptor callback and each of its own steps as one event: ``seq``
(global order), ``who`` (``harness``, ``producer-interceptor-N``, ``consumer-interceptor-N``),
``call``, ``thread`` and ``args``. Its chains are three probes: 0 tags the record (key, value,
header), 1 raises in every callback, 2 tags again. Each ``judge_*`` runs the checks of one
requirement over the whole stream (``verify.check``: the first that fails FAILs it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from typing import Any

from conformance.client.partitioner import partition_for_key
from conformance.results.verdicts import Unsupported
from conformance.suite.kit.verify import check

#: probes in each chain, and the index of the one that raises in every callback
PROBES = 3
RAISING = 1

Event = dict[str, Any]


def _of(events: list[Event], who: str, call: str | None = None) -> list[Event]:
    return [e for e in events if e["who"].startswith(who) and (call is None or e["call"] == call)]


def _index(e: Event) -> int:
    return int(e["who"].rsplit("-", 1)[1])


def _between(events: list[Event], start: int, end: int, who: str, call: str) -> list[Event]:
    return [e for e in _of(events, who, call) if start < e["seq"] < end]


def _harness(events: list[Event], call: str) -> list[Event]:
    return _of(events, "harness", call)


def _order(found: Iterable[Event]) -> list[int]:
    return [_index(e) for e in sorted(found, key=lambda e: e["seq"])]


def _short(value: Any, limit: int = 160) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _sends(events: list[Event]) -> list[tuple[Event, Event | None, Event | None]]:
    """Each send: its ``send.begin``, the event that ended the call (``send.end`` or
    ``send.threw``) and the user's callback (None when it was not called)."""
    out = []
    for begin in _harness(events, "send.begin"):
        sid = begin["args"]["id"]
        end = next(
            (
                e
                for e in events
                if e["who"] == "harness"
                and e["call"] in ("send.end", "send.threw")
                and e["args"].get("id") == sid
            ),
            None,
        )
        cb = next((e for e in _harness(events, "callback") if e["args"]["id"] == sid), None)
        out.append((begin, end, cb))
    return out


def _final(chain: list[Event]) -> dict:
    """What a chain of calls handed on: the last probe's return, or its input when it raised."""
    last = chain[-1]["args"]
    return last["returned"] if last["returned"] is not None else last["record"]


def _no_abort(events: list[Event], req: str) -> None:
    aborted = _harness(events, "aborted")
    check(
        not aborted,
        f"the harness stopped: {_short(aborted[0]['args']) if aborted else ''}",
        req,
    )


def _chain_of(events: list[Event], start: int, end: int, who: str, call: str) -> list[Event]:
    return sorted(_between(events, start, end, who, call), key=lambda e: e["seq"])


def _check_chain(chain: list[Event], in_key: str, what: str, req: str) -> None:
    """Each probe called once, in the configured order, each receiving what the previous one
    returned (or, where it raised, what it was given)."""
    check(
        _order(chain) == list(range(PROBES)),
        f"{what}: interceptors called in order {_order(chain)}, expected {list(range(PROBES))}",
        req,
    )
    for prev, nxt in itertools.pairwise(chain):
        handed = prev["args"]["returned"]
        if handed is None:
            handed = prev["args"][in_key]
        check(
            nxt["args"][in_key] == handed,
            f"{what}: interceptor {_index(nxt)} received {_short(nxt['args'][in_key])}, not what "
            f"interceptor {_index(prev)} handed on ({_short(handed)})",
            req,
        )


def consumed_at(events: list[Event]) -> dict[tuple[str, int, int], dict]:
    """Records as the first consumer interceptor received them (as fetched), by position."""
    out: dict[tuple[str, int, int], dict] = {}
    for e in _of(events, "consumer-interceptor-0", "onConsume"):
        for r in e["args"]["records"]:
            out[(r["topic"], r["partition"], r["offset"])] = r
    return out


# --- the requirements ---------------------------------------------------------------------------


def judge_r1(events: list[Event], req: str = "KIP-42.R1") -> None:
    """onSend: in send(), on its thread, in chain order, before partitioning and serialisation;
    what is stored is what the chain returned."""
    _no_abort(events, req)
    partitions = _harness(events, "partitions")[0]["args"]["count"]
    stored = consumed_at(events)
    sends = _sends(events)
    check(sends, "the harness sent nothing", req)
    for begin, end, cb in sends:
        sid = begin["args"]["id"]
        check(end is not None, f"send {sid}: send() never returned", req)
        chain = _chain_of(events, begin["seq"], end["seq"], "producer-interceptor", "onSend")
        _check_chain(chain, "record", f"send {sid} onSend", req)
        check(
            chain[0]["args"]["record"] == begin["args"]["record"],
            f"send {sid}: the first onSend received {_short(chain[0]['args']['record'])}, not the "
            f"record given to send() ({_short(begin['args']['record'])})",
            req,
        )
        wrong = [e for e in chain if e["thread"] != begin["thread"]]
        check(
            not wrong,
            f"send {sid}: onSend ran on thread {wrong[0]['thread'] if wrong else ''!r}, not in "
            f"send() on {begin['thread']!r}",
            req,
        )
        final = _final(chain)
        if end["call"] == "send.threw":
            message = end["args"]["exception"]["message"]
            check(
                message.endswith(final["value"]),
                f"send {sid}: the serializer refused {message!r}, not the chain's value "
                f"{final['value']!r} (serialised before onSend?)",
                req,
            )
            continue
        if cb is None or cb["args"]["exception"] is not None:
            continue
        md = cb["args"]["metadata"]
        check(
            md["partition"] == partition_for_key(final["key"].encode(), partitions),
            f"send {sid}: stored in partition {md['partition']}, not the one of the key the chain "
            f"returned ({final['key']!r}: partition "
            f"{partition_for_key(final['key'].encode(), partitions)} of {partitions})",
            req,
        )
        got = stored.get((md["topic"], md["partition"], md["offset"]))
        check(
            got is not None,
            f"send {sid}: nothing read back at {md['partition']}/{md['offset']}",
            req,
        )
        check(
            (got["key"], got["value"], got["headers"])
            == (final["key"], final["value"], final["headers"]),
            f"send {sid}: stored {_short((got['key'], got['value'], got['headers']))}, not the "
            "record the last interceptor returned "
            f"{_short((final['key'], final['value'], final['headers']))}",
            req,
        )


def judge_r2(events: list[Event], req: str = "KIP-42.R2") -> None:
    """onAcknowledgement: once per record and interceptor, with metadata or the exception,
    also for failures raised in send(), and before the user's callback (except on a send
    refused before queuing, whose order the released contract leaves open)."""
    _no_abort(events, req)
    sends = _sends(events)
    acks = _of(events, "producer-interceptor", "onAcknowledgement")
    failures = 0
    for begin, end, cb in sends:
        sid = begin["args"]["id"]
        check(end is not None, f"send {sid}: send() never returned", req)
        failed = end["call"] == "send.threw" or (cb is not None and cb["args"]["exception"])
        if failed:
            failures += 1
            mine = _chain_of(
                events, begin["seq"], end["seq"], "producer-interceptor", "onAcknowledgement"
            )
            mine = [e for e in mine if e["thread"] == begin["thread"]]
        else:
            check(cb is not None, f"send {sid}: acknowledged without calling the callback", req)
            mine = sorted(
                (
                    e
                    for e in acks
                    if e["args"]["metadata"] == cb["args"]["metadata"]
                    and e["args"]["exception"] is None
                ),
                key=lambda e: e["seq"],
            )
        what = "failed" if failed else "acknowledged"
        check(
            sorted(_order(mine)) == list(range(PROBES)),
            f"send {sid} ({what}"
            + (f": {end['args']['exception']['type']}" if end["call"] == "send.threw" else "")
            + f"): onAcknowledgement called by interceptors {_order(mine)}, expected each of "
            f"{list(range(PROBES))} once",
            req,
        )
        for e in mine:
            md, exc = e["args"]["metadata"], e["args"]["exception"]
            if failed:
                check(
                    exc is not None and (md is None or md["offset"] == -1),
                    f"send {sid} failed, yet interceptor {_index(e)}'s onAcknowledgement got "
                    f"metadata {_short(md)} and exception {_short(exc)}",
                    req,
                )
            else:
                check(
                    exc is None and md is not None and md["offset"] >= 0 and md["partition"] >= 0,
                    f"send {sid} acknowledged, yet onAcknowledgement got metadata {_short(md)} "
                    f"and exception {_short(exc)}",
                    req,
                )
        # a send refused before queuing completes its callback inside send() itself; there
        # the released contract says only "generally" before it (reading in kip-42.json)
        refused_in_send = (
            failed
            and cb is not None
            and end is not None
            and end["call"] == "send.end"
            and begin["seq"] < cb["seq"] < end["seq"]
            and cb["thread"] == begin["thread"]
        )
        if cb is not None and not refused_in_send:
            late = [e for e in mine if e["seq"] > cb["seq"]]
            check(
                not late,
                f"send {sid} ({what}"
                + (f": {cb['args']['exception']['type']}" if cb["args"]["exception"] else "")
                + f"): the user's callback ran (event {cb['seq']}) before onAcknowledgement "
                f"(events {[e['seq'] for e in late]}); onAcknowledgement must run first",
                req,
            )
    check(failures >= 2, f"the harness provoked {failures} failed sends, expected 2", req)
    check(
        len(acks) == PROBES * len(sends),
        f"{len(acks)} onAcknowledgement calls for {len(sends)} sends and {PROBES} interceptors "
        f"(expected {PROBES * len(sends)})",
        req,
    )


def judge_r3(events: list[Event], req: str = "KIP-42.R3") -> None:
    """onConsume: inside poll(), in chain order, and poll() returns what the chain returned."""
    _no_abort(events, req)
    polls = _harness(events, "poll.begin")
    ends = _harness(events, "poll.end")
    check(len(polls) == len(ends) and polls, "poll() calls did not all return", req)
    nonempty = 0
    for begin, end in zip(polls, ends, strict=True):
        chain = _chain_of(events, begin["seq"], end["seq"], "consumer-interceptor", "onConsume")
        returned = end["args"]["records"]
        if not returned and not chain:
            continue
        nonempty += 1
        what = f"poll at event {begin['seq']}"
        _check_chain(chain, "records", f"{what} onConsume", req)
        final = chain[-1]["args"]["returned"]
        if final is None:
            final = chain[-1]["args"]["records"]
        check(
            returned == final,
            f"{what}: poll() returned {_short(returned)}, not what the last interceptor returned "
            f"({_short(final)})",
            req,
        )
    outside = [
        e
        for e in _of(events, "consumer-interceptor", "onConsume")
        if not any(b["seq"] < e["seq"] < n["seq"] for b, n in zip(polls, ends, strict=True))
    ]
    check(
        not outside, f"onConsume called outside poll() (events {[e['seq'] for e in outside]})", req
    )
    check(nonempty, "no poll() returned records", req)


def _offsets(items: list[dict] | None) -> set[tuple[str, int, int]]:
    return {
        (o["topic"], o["partition"], o["offset"]) for o in items or [] if o["offset"] is not None
    }


def judge_r4(events: list[Event], req: str = "KIP-42.R4") -> None:
    """onCommit: by each interceptor, with the committed offsets, once the commit succeeded
    (within commitSync, and before the callback of commitAsync)."""
    _no_abort(events, req)
    begins = _harness(events, "commit.begin")
    check(len(begins) == 2, f"{len(begins)} commits made, expected 2 (sync, async)", req)
    for begin in begins:
        kind = begin["args"]["kind"]
        end = next((e for e in _harness(events, "commit.end") if e["seq"] > begin["seq"]), None)
        threw = [e for e in _harness(events, "commit.threw") if e["seq"] > begin["seq"]]
        check(end is not None and not threw, f"commit ({kind}) failed: {_short(threw)}", req)
        chain = _chain_of(events, begin["seq"], end["seq"], "consumer-interceptor", "onCommit")
        check(
            sorted(_order(chain)) == list(range(PROBES)),
            f"commit ({kind}): onCommit called by interceptors {_order(chain)}, expected each of "
            f"{list(range(PROBES))} once",
            req,
        )
        want = _offsets(begin["args"]["offsets"])
        for e in chain:
            check(
                _offsets(e["args"]["offsets"]) == want,
                f"commit ({kind}): onCommit of interceptor {_index(e)} got "
                f"{sorted(_offsets(e['args']['offsets']))}, committed {sorted(want)}",
                req,
            )
        if kind == "async":
            cb = [
                e
                for e in _harness(events, "commit.callback")
                if begin["seq"] < e["seq"] < end["seq"]
            ]
            check(cb, "commitAsync's callback was not called", req)
            check(cb[0]["args"]["exception"] is None, f"commitAsync failed: {cb[0]['args']}", req)
            late = [e for e in chain if e["seq"] > cb[0]["seq"]]
            check(
                not late,
                f"commit (async): the user's callback ran before onCommit (events "
                f"{[e['seq'] for e in late]})",
                req,
            )
    stored = _offsets(_harness(events, "committed")[0]["args"]["offsets"])
    want = _offsets(begins[0]["args"]["offsets"])
    check(
        want and want <= stored,
        f"the group coordinator holds {sorted(stored)}, not the committed {sorted(want)}",
        req,
    )


def judge_r5(events: list[Event], req: str = "KIP-42.R5") -> None:
    """close() of the producer and of the consumer closes each of its interceptors once."""
    _no_abort(events, req)
    for side in ("producer", "consumer"):
        begin = next(e for e in _harness(events, "close.begin") if e["args"]["client"] == side)
        end = next((e for e in _harness(events, "close.end") if e["args"]["client"] == side), None)
        check(end is not None, f"{side}.close() did not return", req)
        closes = _of(events, f"{side}-interceptor", "close")
        inside = [e for e in closes if begin["seq"] < e["seq"] < end["seq"]]
        check(
            sorted(_order(closes)) == list(range(PROBES)) and len(inside) == len(closes),
            f"{side}.close() closed interceptors {_order(inside)} (all close calls: "
            f"{_order(closes)}), expected each of {list(range(PROBES))} once, within close()",
            req,
        )


def judge_r6(events: list[Event], req: str = "KIP-42.R6") -> None:
    """Interceptor 1 raises in every callback: each client call still succeeds and interceptor
    2 is still called after it."""
    _no_abort(events, req)
    for side, calls in (
        ("producer", ("onSend", "onAcknowledgement", "close")),
        ("consumer", ("onConsume", "onCommit", "close")),
    ):
        for call in calls:
            raised = _of(events, f"{side}-interceptor-{RAISING}", call)
            after = _of(events, f"{side}-interceptor-{RAISING + 1}", call)
            check(raised, f"{side} interceptor {RAISING}'s {call} was never called", req)
            check(
                len(after) == len(raised)
                and all(a["seq"] > r["seq"] for r, a in zip(raised, after, strict=True)),
                f"{side}: interceptor {RAISING}'s {call} raised {len(raised)} times; interceptor "
                f"{RAISING + 1}'s {call} was called {len(after)} times after it",
                req,
            )
    ok = [
        (b, e, cb)
        for b, e, cb in _sends(events)
        if not b["args"]["record"]["value"].startswith("unserialisable")
        and b["args"]["record"]["partition"] is None
    ]
    for b, e, cb in ok:
        check(
            e is not None and e["call"] == "send.end" and cb and not cb["args"]["exception"],
            f"send {b['args']['id']} failed although only an interceptor raised: {_short(e)} "
            f"{_short(cb)}",
            req,
        )
    for call in ("commit.end", "close.end"):
        check(_harness(events, call), f"no {call}: the client call did not complete", req)
    check(
        any(e["args"]["records"] for e in _harness(events, "poll.end")),
        "poll() returned no records although only an interceptor raised",
        req,
    )


def judge_r7(events: list[Event], client: str, req: str = "KIP-42.R7") -> None:
    """Sizes (and the checksum, where the release has one) on the acknowledgement's metadata
    equal the consumed record's and the serialised key and value."""
    _no_abort(events, req)
    stored = consumed_at(events)
    acked = [
        cb for _, _, cb in _sends(events) if cb is not None and cb["args"]["exception"] is None
    ]
    check(acked, "no record acknowledged", req)
    absent = False
    for cb in acked:
        md = cb["args"]["metadata"]
        got = stored.get((md["topic"], md["partition"], md["offset"]))
        where = f"record at {md['partition']}/{md['offset']}"
        check(got is not None, f"{where} not read back", req)
        check(
            (md["key_size"], md["value_size"])
            == (len(got["key"].encode()), len(got["value"].encode())),
            f"{where}: acknowledged with sizes (key {md['key_size']}, value {md['value_size']}), "
            f"its serialised key and value are {len(got['key'].encode())} and "
            f"{len(got['value'].encode())} bytes",
            req,
        )
        check(
            (got["key_size"], got["value_size"]) == (md["key_size"], md["value_size"]),
            f"{where}: consumed with sizes ({got['key_size']}, {got['value_size']}), acknowledged "
            f"with ({md['key_size']}, {md['value_size']})",
            req,
        )
        if "absent" in (md["checksum"], got["checksum"]):
            absent = True
            continue
        check(
            md["checksum"] == got["checksum"],
            f"{where}: acknowledged with checksum {md['checksum']}, consumed with "
            f"{got['checksum']}",
            req,
        )
    if absent:
        raise Unsupported(
            f"{client}'s RecordMetadata and ConsumerRecord have no checksum() (kafka-clients "
            "deprecated the per-record checksum with record batch v2 and removed it in 3.0); the "
            "serialised key and value sizes were checked and held"
        )


JUDGES = {
    "KIP-42.R1": judge_r1,
    "KIP-42.R2": judge_r2,
    "KIP-42.R3": judge_r3,
    "KIP-42.R4": judge_r4,
    "KIP-42.R5": judge_r5,
    "KIP-42.R6": judge_r6,
}
