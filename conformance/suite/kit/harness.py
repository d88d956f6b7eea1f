"""The suite's view of a running target: connections, advertised versions, capability checks.

Tests are plain synchronous functions (so hypothesis drives them directly); the asyncio wire
client runs on one event loop in a background thread that the harness owns, and
:class:`SyncConnection` hands each call to it. Every connection a test opens is closed when the
test ends. The capability checks here are the only place that decides NOT_EXPOSED, UNSUPPORTED
and the missing-listener SKIP, so every test decides them the same way.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Collection, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from conformance.client.wire import Connection, ConnectionClosed, Response
from conformance.protocol import Codec, DecodeError, UnknownMessageError
from conformance.protocol.framing import encode_request
from conformance.protocol.versions import Versions
from conformance.results.verdicts import (
    MissingPrecondition,
    NotApplicable,
    NotExposed,
    Unsupported,
)
from conformance.suite.kit import credit
from conformance.suite.kit.shared_silences import SharedSilences
from conformance.targets.base import Endpoint, Target, TargetError

T = TypeVar("T")

CONTROLLER_TYPES = ("controller",)
#: seconds to wait for an answer before a request counts as unanswered (the environment's
#: KAFKA_CONFORMANCE_REQUEST_TIMEOUT, if set: the project's tests of unanswered requests shorten
#: their waits with it)
REQUEST_TIMEOUT = float(os.environ.get("KAFKA_CONFORMANCE_REQUEST_TIMEOUT") or 10.0)
#: ... for an API and version the target already left unanswered earlier in the run (or an API
#: it left unanswered at another version and never answered)
REPEAT_TIMEOUT = 2.0
#: after this many unanswered requests of an API that a node never answered in the run, later
#: requests of it to that node are not sent: they fail at once, citing where it was left
#: unanswered
SILENT_AFTER = 2
#: how long the run's first ApiVersions (at v3, then at v0) may take before the target is
#: reported unreachable: any broker answers it at once
OPEN_TIMEOUT = 5.0


@dataclass
class TestNotes:
    """What one test recorded besides its outcome: soft failures per requirement, API used."""

    __test__ = False  # not a pytest test class

    soft: dict[str, str] = field(default_factory=dict)
    api_key: int | None = None
    api_version: int | None = None
    listener: str | None = None
    #: whether the test drew hypothesis examples (its records then carry the run's seed)
    seeded: bool = False
    #: which requirements its checks covered and what they saw (what credits a PASS)
    ledger: credit.Ledger = field(default_factory=credit.begin)
    #: (api key, version) of requests the target left unanswered in this test
    unanswered: set[tuple[int, int]] = field(default_factory=set)
    #: the running test's id (set by the plugin; cited when a later test relies on what it saw)
    test_id: str | None = None
    #: every (api key, version, listener) the test noted, in order: its set-up steps' APIs
    #: too, so a record names the one its requirement judges (:meth:`judged`), not the last
    exercised: list[tuple[int, int | None, str | None]] = field(default_factory=list)

    def fail_soft(self, req_id: str, message: str) -> None:
        self.soft.setdefault(req_id, message)

    def judged(
        self, declared: int | None, apis: Collection[int]
    ) -> tuple[int | None, int | None, str | None]:
        """The API, version and listener the record of a requirement judging ``apis`` (none:
        any) names: the test's declared API as last noted, if the requirement judges it; else
        the last noted API it judges; else the declared API (no version, no listener) if it
        judges that; else the last noted (a requirement's APIs need not list what a test
        exercises it through)."""

        def judges(key: int | None) -> bool:
            return key is not None and (not apis or key in apis)

        for wanted in ((lambda k: k == declared and judges(k)), judges):
            for entry in reversed(self.exercised):
                if wanted(entry[0]):
                    return entry
        if judges(declared) or not self.exercised:
            return declared, None, None
        return self.exercised[-1]


class Unanswered(TimeoutError):
    """A request not sent, because the target left every earlier request of its API in the
    run unanswered: the failure rests on that recorded evidence, which the message cites."""


@dataclass
class Silence:
    """Each request of one API left unanswered by a node that never answered that API in the
    run: (node, version, test id). A node that answers it later has its entries dropped."""

    seen: list[tuple[Endpoint, int, str | None]] = field(default_factory=list)

    def at(self, node: Endpoint) -> list[tuple[Endpoint, int, str | None]]:
        return [s for s in self.seen if s[0] == node]

    def cite(self, node: Endpoint | None = None) -> str:
        seen = self.seen if node is None else self.at(node)
        where = [f"v{v} in {t or 'the run set-up'}" for _, v, t in seen[:3]]
        more = f" and {len(seen) - 3} more" if len(seen) > 3 else ""
        return f"{', '.join(where)}{more}"


#: what a process of a run learned of the target's unanswered requests, as JSON values
#: (``Harness.knowledge``; a worker tells the others fragments of it as it learns, ``tell``):
#: "unanswered" [[api key, version]], "answered" [[host, port, api key]],
#: "silent" {api key: [[host, port, version, test id]]}
Knowledge = dict[str, Any]


@dataclass
class SetupDefect:
    """An API version whose answers a set-up step (a topic's leaders, a coordinator, ...) could
    not use on one node: recorded once per run and node (issue 42), on the requirement that
    judges that API and version, with the test that met it; later set-up uses another
    advertised version. ``tests`` are the tests whose set-up it touched."""

    api_name: str
    api_key: int
    version: int
    node: Endpoint
    test_id: str | None
    reason: str
    requirement: str = "PROTOCOL.R3"
    tests: set[str] = field(default_factory=set)

    def as_dict(self) -> dict[str, Any]:
        return {
            "api_key": int(self.api_key),
            "api": self.api_name,
            "version": int(self.version),
            "node": str(self.node),
            "requirement": self.requirement,
            "test_id": self.test_id,
            "reason": self.reason,
            "tests": len(self.tests),
        }


class SyncConnection:
    """A wire connection driven from synchronous test code."""

    def __init__(self, harness: Harness, conn: Connection, endpoint: Endpoint) -> None:
        self.harness, self.conn, self.endpoint = harness, conn, endpoint

    @property
    def closed(self) -> bool:
        return self.conn.closed

    def request(
        self, api_key: int, version: int, body: dict, *, timeout: float = REQUEST_TIMEOUT
    ) -> Response:
        """Send and wait for the answer. A request the target left unanswered (TimeoutError) is
        not sent again within the test: the same API and version fail at once after that, so a
        target that never answers costs one timeout per test, not one per example or step. A
        later test still sends it (its verdict rests on what it sent), but waits REPEAT_TIMEOUT
        only, since the target left that API and version unanswered before in the run; so does
        an API a node has never answered and some node left unanswered. Once a node has left
        SILENT_AFTER requests of an API unanswered and answered none, later ones to it are not
        sent: :class:`Unanswered` at once, citing the tests that saw it (a broker that serves
        no DescribeGroups costs two waits in a run, not one per test). In a concurrent run
        what the other workers saw counts as this one's (``Harness.share``): it is read before
        a request of an API the node has not answered here yet, and at each test's end."""
        harness, node = self.harness, self.endpoint
        key = (api_key, version)
        name = f"{harness.api_name(api_key)} v{version}"
        if key in harness.notes.unanswered:
            raise TimeoutError(f"{name} was left unanswered earlier in this test; not sent again")
        never = (node, api_key) not in harness.answered
        if never:
            harness.catch_up()
            never = (node, api_key) not in harness.answered
        silence = harness.silent.get(api_key)
        if never and silence is not None and len(silence.at(node)) >= SILENT_AFTER:
            raise Unanswered(  # callers put the API and version in front
                f"not sent: {node} left every {harness.api_name(api_key)} request of the run "
                f"unanswered ({silence.cite(node)}) and answered none"
            )
        same = key in harness.unanswered
        earlier = f" ({silence.cite()})" if silence is not None and silence.seen else ""
        before = same or bool(never and earlier)
        if before:
            timeout = min(timeout, REPEAT_TIMEOUT)
        try:
            response = harness.call(self.conn.request(api_key, version, body, timeout=timeout))
        except TimeoutError:
            harness.notes.unanswered.add(key)
            harness.unanswered.add(key)
            told: Knowledge = {"unanswered": [[int(api_key), int(version)]]}
            if never:
                test = harness.test_name()
                harness.silent.setdefault(api_key, Silence()).seen.append((node, version, test))
                told["silent"] = {str(int(api_key)): [[node.host, node.port, int(version), test]]}
            harness.tell(told)
            if before:
                what = name if same else harness.api_name(api_key)
                raise TimeoutError(
                    f"none within {timeout:.0f} s; the target left {what} unanswered earlier "
                    f"in this run too{earlier}"
                ) from None
            raise
        if never:
            harness.catch_up()  # a silence of it told meanwhile is dropped too
            silence = harness.silent.get(api_key)
            harness.answered.add((node, api_key))
            if harness.shared is not None:
                harness.fresh.append([node.host, node.port, int(api_key)])
            if silence is not None and silence.at(node):
                silence.seen = [s for s in silence.seen if s[0] != node]
                harness.tell_answered()  # those who learned of its silence drop it now
        return response

    def send_frame(self, frame: bytes, api_key: int, version: int, cid: int) -> asyncio.Future:
        """Send a request frame (header + body, no size) whose answer is decoded as api/version."""

        async def send() -> asyncio.Future:
            return self.conn.send_frame(frame, api_key, version, cid)

        return self.harness.call(send())

    def wait(self, fut: asyncio.Future, timeout: float = REQUEST_TIMEOUT) -> Response:
        async def get() -> Response:
            return await asyncio.wait_for(fut, timeout)

        return self.harness.call(get())

    def send_raw(self, data: bytes) -> None:
        self.harness.call(self.conn.send_raw(data))

    def closed_by_peer(self, timeout: float) -> bool:
        return self.harness.call(self.conn.wait_closed_by_peer(timeout))

    def api_versions(
        self, version: int = 3, timeout: float = REQUEST_TIMEOUT
    ) -> dict[int, tuple[int, int]]:
        return self.harness.call(self.conn.api_versions(version, timeout=timeout))

    def close(self) -> None:
        self.harness.call(self.conn.close())

    def abort(self) -> None:
        """Drop the connection abruptly (no FIN handshake wait, pending writes discarded)."""

        async def abort() -> None:
            self.conn.writer.transport.abort()
            await self.conn.close()

        self.harness.call(abort())


class Harness:
    """One per run: owns the event loop thread, the codec and the target's advertised versions."""

    def __init__(
        self,
        target: Target,
        codec: Codec,
        *,
        examples: int = 5,
        seed: int | None = None,
        strict: bool = False,
    ) -> None:
        # strict encode: a key the spec does not have in a body the suite builds is an error
        # (a misspelt key would otherwise be dropped and the request sent without it)
        self.target, self.codec = target, codec.strict()
        self.examples, self.seed, self.strict = examples, seed, strict
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="kc-harness", daemon=True
        )
        self._thread.start()
        self._open: list[SyncConnection] = []
        self.notes = TestNotes()
        self.advertised: dict[int, tuple[int, int]] = {}
        #: (api key, version) of requests the target left unanswered in this run
        self.unanswered: set[tuple[int, int]] = set()
        #: (node, api key) of the APIs each node answered at least once in this run
        self.answered: set[tuple[Endpoint, int]] = set()
        #: per api key, where nodes that never answered it left it unanswered
        #: (SyncConnection.request)
        self.silent: dict[int, Silence] = {}
        #: (api key, version, node) whose answers set-up steps could not use (setup_request)
        self.setup_defects: dict[tuple[int, int, Endpoint], SetupDefect] = {}
        self.controller_advertised: dict[int, tuple[int, int]] | None = None
        #: where the run's other processes share what they learn of unanswered requests (share)
        self.shared: SharedSilences | None = None
        #: [host, port, api key] this process saw answered first since it last told them
        self.fresh: list[list[Any]] = []

    # --- plumbing ---------------------------------------------------------------------------

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 120.0) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def connect(
        self,
        where: str | Endpoint = "client",
        *,
        client_id: str | None = "kafka-conformance",
        authenticate: bool = True,
        as_: Any = None,
    ) -> SyncConnection:
        """A new connection to the client bootstrap, the controller, or a given endpoint;
        where the target takes SASL, authenticated as the suite (``target.sasl``) or as ``as_``
        (a ``targets.base.Sasl``, e.g. ``target.unprivileged``)."""
        ep = self.endpoint(where)
        try:
            conn = self.call(
                Connection.open(ep.host, ep.port, codec=self.codec, client_id=client_id)
            )
        except (OSError, TimeoutError) as e:
            raise ConnectionClosed(f"cannot connect to {ep}: {e}") from None
        sync = SyncConnection(self, conn, ep)
        self._open.append(sync)
        if authenticate and self.target.sasl is not None:
            from conformance.client.sasl import authenticate as sasl_authenticate

            sasl = as_ or self.target.sasl
            try:
                self.call(
                    sasl_authenticate(
                        conn,
                        sasl.mechanism,
                        sasl.username,
                        sasl.password,
                        versions=self.advertised or None,
                    )
                )
            except ConnectionError as e:
                raise TargetError(f"SASL {sasl.mechanism} authentication failed: {e}") from None
        return sync

    def endpoint(self, where: str | Endpoint) -> Endpoint:
        if isinstance(where, Endpoint):
            return where
        if where == "client":
            return self.target.bootstrap[0]
        if where == "controller":
            if self.target.controller is None:
                raise MissingPrecondition("no controller bootstrap (--controller-bootstrap)")
            return self.target.controller
        raise ValueError(f"unknown listener {where!r}")

    def test_name(self) -> str | None:
        """The running test: its suite id where the plugin set it, else pytest's node id."""
        if self.notes.test_id:
            return self.notes.test_id
        current = os.environ.get("PYTEST_CURRENT_TEST", "")
        return current.rsplit(" (", 1)[0] or None

    def end_test(self) -> None:
        """Close what the test opened and start fresh notes for the next one."""
        for conn in self._open:
            try:
                conn.close()
            except Exception:
                pass
        self._open.clear()
        self.notes = TestNotes()
        self.tell_answered()
        self.catch_up()

    def open(self) -> None:
        """Fetch what the target advertises; TargetError when it cannot be reached."""
        self.advertised = self._fetch_advertised("client", str(self.target.bootstrap[0]))
        if self.target.controller is not None:
            self.controller_advertised = self._fetch_advertised(
                "controller", f"the controller listener at {self.target.controller}"
            )

    def _fetch_advertised(self, listener: str, what: str) -> dict[int, tuple[int, int]]:
        """ApiVersions at v3, or at v0 for a peer that refuses v3 (it answers in v0 then).

        Each attempt waits OPEN_TIMEOUT at most, so a target that accepts connections and never
        answers is reported within seconds, with what it did."""
        reasons = []
        for version in (3, 0):
            try:
                return self.connect(listener).api_versions(version, timeout=OPEN_TIMEOUT)
            except TimeoutError:
                reasons.append(
                    f"accepted the connection but did not answer ApiVersions v{version} "
                    f"within {OPEN_TIMEOUT:.0f} s"
                )
            except (ConnectionError, OSError, DecodeError) as e:
                why = str(e).strip() or type(e).__name__
                reasons.append(f"ApiVersions v{version}: {why}")
            finally:
                self.end_test()
        raise TargetError(f"cannot reach the target at {what}: {'; '.join(reasons)}")

    def close(self) -> None:
        self.end_test()
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
        self.loop.close()

    # --- what the run learned of unanswered requests, between its processes ------------------

    def knowledge(self) -> Knowledge:
        """What this process learned of the target's unanswered requests, as JSON values: a
        concurrent run's worker hands it to the controller, which runs the disruptive tests
        after the workers against the same nodes (``learn``), so a silence the workers waited
        for is not waited for again at the run's end."""
        # plain ints and strs: api keys reach here as ApiKey members, which xdist's channel
        # (execnet) refuses to carry
        return {
            "unanswered": sorted([int(k), int(v)] for k, v in self.unanswered),
            "answered": sorted([n.host, int(n.port), int(k)] for n, k in self.answered),
            "silent": {
                str(int(k)): [[n.host, int(n.port), int(v), t and str(t)] for n, v, t in s.seen]
                for k, s in sorted(self.silent.items())
            },
        }

    def share(self, folder: Path) -> None:
        """Share what this process learns of unanswered requests, live, with the run's other
        processes sharing ``folder`` (a concurrent run's workers: the run's flags folder), and
        take in theirs (``catch_up``): a silence one worker waited for is not waited for in full
        by the others, and SILENT_AFTER counts the run's requests, not one process's. The side
        runs, each on a cluster of its own, do not share the workers'."""
        self.shared = SharedSilences(folder)

    def tell(self, known: Knowledge) -> None:
        """Hand a fragment of this process's knowledge to the processes it shares with."""
        if self.shared is not None:
            self.shared.tell(known)

    def tell_answered(self) -> None:
        """Tell the APIs nodes answered here first since the last time (at each test's end,
        and at once for one some process saw left unanswered): a silence counts toward
        SILENT_AFTER only where no process of the run saw the node answer the API (``learn``),
        so a node that answers an API, silent at some of its versions or edges (Kafka 4.4's
        AddPartitionsToTxn v4-v5 naming no transaction), is not skipped for the silences of
        two processes that had not seen it answer."""
        if self.fresh:
            self.tell({"answered": self.fresh})
            self.fresh = []

    def catch_up(self) -> None:
        """Learn what the processes this one shares with told since the last call."""
        if self.shared is not None:
            for known in self.shared.news():
                self.learn(known)

    def learn(self, known: Knowledge) -> None:
        """Take in what another process of the run learned (``knowledge``): a node that answered
        an API anywhere has its silence of it dropped; the silences are kept in one order
        (test, version, node), whichever process handed them first."""
        self.unanswered |= {(k, v) for k, v in known.get("unanswered", [])}
        self.answered |= {(Endpoint(h, p), k) for h, p, k in known.get("answered", [])}
        for key, seen in known.get("silent", {}).items():
            silence = self.silent.setdefault(int(key), Silence())
            have = set(silence.seen)
            silence.seen += [e for h, p, v, t in seen if (e := (Endpoint(h, p), v, t)) not in have]
        for key, silence in self.silent.items():
            silence.seen = sorted(
                (s for s in silence.seen if (s[0], key) not in self.answered),
                key=lambda s: (s[2] or "", s[1], str(s[0])),
            )

    # --- capability -------------------------------------------------------------------------

    def api_name(self, api_key: int) -> str:
        return self.codec.message(api_key, "request").name.removesuffix("Request")

    def listener_types(self, listener: str) -> tuple[str, ...]:
        if listener == "controller":
            return CONTROLLER_TYPES
        return self.target.client_listener_types

    def advertised_on(self, listener: str) -> dict[int, tuple[int, int]]:
        if listener == "controller":
            if self.controller_advertised is None:
                raise MissingPrecondition("no controller bootstrap (--controller-bootstrap)")
            return self.controller_advertised
        return self.advertised

    def exposed(self, api_key: int, listener: str = "client") -> bool:
        """Whether the spec lists the API for (one of) the listener's types."""
        spec = self.codec.message(api_key, "request")
        if not spec.listeners:
            return True
        return any(t in spec.listeners for t in self.listener_types(listener))

    def require(self, api_key: int, version: int | None = None, listener: str = "client") -> None:
        """Raise the verdict that says why ``api_key`` (at ``version``) cannot be checked here."""
        try:
            name = self.api_name(api_key)
        except UnknownMessageError:
            raise MissingPrecondition(
                f"the message specs in use (--spec-dir) do not define api key {api_key}"
            ) from None
        if (
            version is not None
            and version not in self.codec.message(api_key, "request").valid_versions
        ):
            raise MissingPrecondition(
                f"the message specs in use (--spec-dir) do not define {name} v{version}"
            )
        if not self.exposed(api_key, listener):
            spec = self.codec.message(api_key, "request")
            raise NotExposed(
                f"{name} is not on the {listener} listener "
                f"(spec listeners: {', '.join(spec.listeners)})"
            )
        adv = self.advertised_on(listener)
        if api_key not in adv:
            raise Unsupported(
                f"{name} is not advertised in ApiVersions on the {listener} listener", api_key
            )
        if version is not None:
            lo, hi = adv[api_key]
            if not lo <= version <= hi:
                raise Unsupported(
                    f"{name} v{version} is not advertised (advertised {lo}-{hi})", api_key
                )

    def pick_version(
        self,
        api_key: int,
        within: Versions | str | None = None,
        listener: str = "client",
        *,
        note: bool = True,
    ) -> int:
        """The highest version the target advertises, our specs know, and ``within`` allows
        (the suite's bodies are written for every version of the specs, issue 37); noted as
        the test's unless ``note`` is false (a set-up or clean-up step)."""
        self.require(api_key, None, listener)
        lo, hi = self.advertised_on(listener)[api_key]
        ours = self.codec.message(api_key, "request").valid_versions
        rng = Versions(max(lo, ours.lo), min(hi, ours.hi))
        if within is not None:
            rng = rng.intersect(Versions.parse(within) if isinstance(within, str) else within)
        if rng.empty:
            raise Unsupported(
                f"{self.api_name(api_key)}: no version in {within or ours} is advertised "
                f"(advertised {lo}-{hi})",
                api_key,
            )
        if note:
            self.note(api_key, rng.hi, listener)
        return rng.hi

    def can_check(
        self,
        api_key: int,
        *req_ids: str,
        within: Versions | str | None = None,
        listener: str = "client",
    ) -> bool:
        """Whether ``api_key`` (some version in ``within``) can be exercised here; when not, the
        reason is recorded for ``req_ids`` (their verdict, should no other check credit them)
        and the test goes on with its other requirements."""
        try:
            self.require(api_key, None, listener)
            if within is not None:
                lo, hi = self.advertised_on(listener)[api_key]
                ours = self.codec.message(api_key, "request").valid_versions
                rng = Versions(max(lo, ours.lo), min(hi, ours.hi)).intersect(
                    Versions.parse(within) if isinstance(within, str) else within
                )
                if rng.empty:
                    raise Unsupported(
                        f"{self.api_name(api_key)}: no version in {within} is advertised "
                        f"(advertised {lo}-{hi})"
                    )
        except NotApplicable as why:
            credit.cannot_check(why, *req_ids)
            return False
        return True

    def setup_request(
        self,
        conn: SyncConnection,
        api_key: int,
        body: dict | Callable[[int], dict],
        within: Versions | str | None = None,
        usable: Callable[[Response], str | None] | None = None,
        judged_by: str = "PROTOCOL.R9",
    ) -> Response:
        """A set-up request (issue 42): at the highest version the target advertises within
        ``within`` that has not been found unusable on ``conn``'s node in this run. An answer
        that does not decode, or that ``usable`` says a set-up step cannot proceed with (it
        returns the reason), is recorded once per run and node as a :class:`SetupDefect` on
        the requirement judging that API version (PROTOCOL.R3: the answer's schema; for an
        answer ``usable`` refuses, ``judged_by``, e.g. GROUPS.R1 for FindCoordinator), and the
        next lower advertised version is tried; when none is usable, MissingPrecondition (SKIP
        naming the defect), never the tested requirements' FAIL. Does not note the API."""
        top = self.pick_version(api_key, within, note=False)
        lo = self.advertised_on("client")[api_key][0]
        if within is not None:
            lo = max(lo, (Versions.parse(within) if isinstance(within, str) else within).lo)
        node, name, test = conn.endpoint, self.api_name(api_key), self.test_name()
        met: list[SetupDefect] = []
        for version in range(top, lo - 1, -1):
            known = self.setup_defects.get((api_key, version, node))
            if known is not None:
                known.tests.add(test or "")
                met.append(known)
                continue
            if conn.closed:
                conn = self.connect(node)
            reason: str | None
            try:
                response = conn.request(api_key, version, body(version) if callable(body) else body)
                reason = usable(response) if usable is not None else None
            except DecodeError as e:
                response, reason = None, f"its answer does not decode: {e}"[:300]
            if reason is None and response is not None:
                return response
            defect = SetupDefect(name, api_key, version, node, test, reason or "")
            if response is not None:  # it decoded: an answer the step cannot proceed with
                defect.requirement = judged_by
            defect.tests.add(test or "")
            self.setup_defects[(api_key, version, node)] = defect
            met.append(defect)
        if not met:
            raise MissingPrecondition(f"set-up needs {name}: no version of it is advertised")
        cite = "; ".join(f"v{d.version}: {d.reason}" for d in met[:3])
        raise MissingPrecondition(
            f"set-up needs {name}, whose answers "
            f"{'do not decode' if 'decode' in met[0].reason else 'it cannot use'}: "
            f"see {met[0].requirement} ({cite})"
        )

    def note(self, api_key: int, version: int | None, listener: str | None = None) -> None:
        """Record the API and version a test exercised (kept in its result records)."""
        self.notes.api_key, self.notes.api_version = api_key, version
        if listener is not None:
            self.notes.listener = listener
        self.notes.exercised.append((api_key, version, self.notes.listener))

    def frame(
        self, api_key: int, version: int, cid: int, body: dict, client_id: str | None = "kc"
    ) -> bytes:
        return encode_request(self.codec, api_key, version, cid, client_id, body)


def run_property(harness: Harness, strategy, check, *, examples: int | None = None) -> int:
    """Run ``check(value)`` on values drawn from ``strategy`` (the run's seed, no database).

    The first failing example ends the property and is reported as it failed: hypothesis's
    replay of it raises the same failure without running ``check`` again (so a request the
    target left unanswered is not sent, and waited for, a second time). Returns how many
    examples ran; a property that ran none is an error, never a pass.
    """
    from hypothesis import given
    from hypothesis.errors import Flaky

    from conformance.suite.kit.profile import seeded, suite_settings

    count = 0
    harness.notes.seeded = True
    failures: list[BaseException] = []

    @suite_settings(examples or harness.examples)
    @given(strategy)
    def prop(value) -> None:
        nonlocal count
        if failures:  # hypothesis replays the failing example to report it: do not re-send it
            raise failures[0]
        count += 1
        try:
            check(value)
        except BaseException as e:
            failures.append(e)
            raise

    try:
        seeded(prop, harness.seed)()
    except Flaky:
        if failures:
            raise failures[0] from None
        raise
    if count == 0:
        raise RuntimeError("the property ran no example")
    return count


def frame_claiming(
    harness: Harness,
    api_key: int,
    claimed: int,
    body_version: int,
    body: dict,
    cid: int,
    client_id: str | None = "kafka-conformance",
) -> bytes:
    """A request whose header claims version ``claimed`` while its body is encoded as
    ``body_version`` (for versions our specs do not know, or to probe version checks)."""
    codec = harness.codec
    flexible = codec.message(api_key, "request").flexible(body_version)
    header = codec.compiled_header("request", 2 if flexible else 1).encode(
        {
            "RequestApiKey": api_key,
            "RequestApiVersion": claimed,
            "CorrelationId": cid,
            "ClientId": client_id,
        }
    )
    return header + codec.encode(api_key, body_version, "request", body)
