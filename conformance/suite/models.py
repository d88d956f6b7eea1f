"""State-machine models (``specs/models/*.json``) driven against the target over the wire.

A model names states, per-entity variables, request templates, events (a request plus the
transitions it may cause, with guards, expected answers, effects and checks), timeouts the target
applies on its own, invariants observed over the wire and liveness promises. Everything the
model says is tied to requirement ids, so a violation fails exactly those requirements.

:class:`ModelRunner` interprets a model for one set of entities: ``step`` sends an event's real
request, matches the answer against the transitions the model allows from the entity's state and
applies the one that matched; ``check_invariants`` polls the binding's observers until they agree
with the model (within the invariant's settle bound). Timing is honest: an entity whose session
has been silent for part of its timeout may or may not have been timed out by the target, and
both readings are accepted until its next answer decides.

:func:`state_machine` turns a model into a hypothesis ``RuleBasedStateMachine`` with one rule per
event (``register(entity=1)`` …) and the invariants as one ``@invariant``; :func:`run_machine`
runs it with the run's seed. A failure's message lists the steps that led to it, in order, so
it can be replayed by hand or with ``--seed`` and the test's id.

What the model cannot know (how to send a request, what a view looks like, how long a session
is) a :class:`Binding` supplies; each feature package has one.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from conformance import specs
from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol.errors import DecodeError, SpecError
from conformance.suite import credit, verify

MODELS_DIR = specs.MODELS
MODEL_SCHEMA = specs.SCHEMA / "model.schema.json"
#: a session silent for less than this share of its timeout is certainly alive
ALIVE_SHARE = 0.5
#: ... and for more than this share (plus the margin) certainly timed out
EXPIRED_SHARE = 1.5
EXPIRY_MARGIN = 0.5
POLL_INTERVAL = 0.02

_PATH = re.compile(r"([A-Za-z0-9_.-]+?)(?:\[(\d+)\])?(?:\.|$)")


# --- the model ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Outcome:
    expect: dict[str, Any]
    to: str | None
    effects: dict[str, Any]


@dataclass(frozen=True)
class Transition:
    sources: tuple[str, ...]
    guard: dict[str, Any]
    outcomes: tuple[Outcome, ...]
    checks: tuple[dict[str, Any], ...]
    requirements: tuple[str, ...]


@dataclass(frozen=True)
class Event:
    name: str
    request: str | None
    args: dict[str, Any]
    params: dict[str, Any]
    renews_session: bool
    ends_session: bool
    wait: str | None
    transitions: tuple[Transition, ...]

    @property
    def method(self) -> str:
        return self.name.replace("-", "_")


@dataclass(frozen=True)
class Model:
    name: str
    title: str
    feature: str
    raw: dict[str, Any] = field(repr=False, compare=False)
    states: dict[str, dict[str, Any]] = field(repr=False, compare=False)
    initial: str = ""
    variables: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    requests: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)
    events: dict[str, Event] = field(default_factory=dict, repr=False, compare=False)
    timeouts: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)
    invariants: tuple[dict[str, Any], ...] = ()
    liveness: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False, compare=False)
    count: int = 1
    session_timeout: str | None = None

    def visible(self, state: str) -> bool:
        return bool(self.states[state]["visible"])

    def requirement_ids(self) -> set[str]:
        """Every requirement id the model names."""
        found: set[str] = set()

        def walk(v: Any) -> None:
            if isinstance(v, dict):
                for k, x in v.items():
                    if k in ("requirements", "extra", "missing") and isinstance(x, list):
                        found.update(x)
                    else:
                        walk(x)
            elif isinstance(v, list):
                for x in v:
                    walk(x)

        walk(self.raw)
        return found


@cache
def _validator() -> jsonschema.protocols.Validator:
    schema = json.loads(MODEL_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _error_code(name: str, where: str, path: Path) -> int:
    codes = {v: k for k, v in verify.known_codes().items()}
    if name not in codes:
        raise SpecError(str(path), where, f"unknown error name {name!r}")
    return codes[name]


def _expect(raw: dict[str, Any], where: str, path: Path) -> dict[str, Any]:
    """Error names of ``*ErrorCode`` fields become their codes."""
    out: dict[str, Any] = {}
    for k, v in raw.items():
        if k.split(".")[-1].split("[")[0].endswith("ErrorCode") and isinstance(v, str):
            v = _error_code(v, f"{where}.{k}", path)
        out[k] = v
    return out


def load_model(name: str | Path) -> Model:
    """``specs/models/<name>.json`` (or a path), validated; SpecError names file and JSON path."""
    path = Path(name) if isinstance(name, Path) or str(name).endswith(".json") else None
    path = path or MODELS_DIR / f"{name}.json"
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise SpecError(str(path), "$", f"cannot read the model: {e}") from None
    errors = sorted(_validator().iter_errors(obj), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        where = "$" + "".join(f"[{p!r}]" if isinstance(p, int) else f".{p}" for p in e.path)
        raise SpecError(str(path), where, e.message)
    states = {s["name"]: s for s in obj["states"]}
    initial = [s["name"] for s in obj["states"] if s.get("initial")]
    if len(initial) != 1:
        raise SpecError(str(path), "$.states", "exactly one state is initial")

    def known_states(names: Iterable[str], where: str) -> tuple[str, ...]:
        unknown = [n for n in names if n not in states]
        if unknown:
            raise SpecError(str(path), where, f"unknown state(s) {', '.join(unknown)}")
        return tuple(names)

    if "id" in obj.get("variables", {}):
        raise SpecError(str(path), "$.variables.id", "'id' is the entity's own ($entity.id)")
    timeouts = {t["name"]: t for t in obj.get("timeouts", [])}
    for i, t in enumerate(obj.get("timeouts", [])):
        known_states([*t["from"], t["to"]], f"$.timeouts[{i}]")
    events: dict[str, Event] = {}
    for i, e in enumerate(obj["events"]):
        where = f"$.events[{i}]"
        if e["name"] in events:
            raise SpecError(str(path), where, f"event {e['name']} is defined twice")
        if e.get("request") is None and e.get("wait") is None:
            raise SpecError(str(path), where, "an event sends a request or waits")
        if e.get("request") is not None and e["request"] not in obj["requests"]:
            raise SpecError(str(path), f"{where}.request", f"no request {e['request']!r}")
        if e.get("wait") is not None and e["wait"] not in timeouts:
            raise SpecError(str(path), f"{where}.wait", f"no timeout {e['wait']!r}")
        transitions = []
        for j, t in enumerate(e.get("transitions", [])):
            tw = f"{where}.transitions[{j}]"
            raw_outcomes = t.get("outcomes") or [
                {"expect": t.get("expect", {}), "to": t.get("to"), "effects": t.get("effects", {})}
            ]
            outcomes = []
            for k, o in enumerate(raw_outcomes):
                if o.get("to") is not None:
                    known_states([o["to"]], f"{tw}.outcomes[{k}].to")
                effects = {**t.get("effects", {}), **o.get("effects", {})}
                unknown = [v for v in effects if v not in obj.get("variables", {})]
                if unknown:
                    raise SpecError(str(path), tw, f"effects on unknown variable(s) {unknown}")
                outcomes.append(
                    Outcome(
                        _expect(o.get("expect", {}), f"{tw}.expect", path), o.get("to"), effects
                    )
                )
            transitions.append(
                Transition(
                    known_states(t["from"], f"{tw}.from"),
                    t.get("guard", {}),
                    tuple(outcomes),
                    tuple(t.get("checks", [])),
                    tuple(t["requirements"]),
                )
            )
        events[e["name"]] = Event(
            e["name"],
            e.get("request"),
            e.get("args", {}),
            e.get("params", {}),
            bool(e.get("renews_session")),
            bool(e.get("ends_session")),
            e.get("wait"),
            tuple(transitions),
        )
    for i, lv in enumerate(obj.get("liveness", [])):
        known_states([*lv["from"], *lv["until"]], f"$.liveness[{i}]")
        if lv["repeat"] not in events:
            raise SpecError(str(path), f"$.liveness[{i}].repeat", f"no event {lv['repeat']!r}")
    model = Model(
        name=obj["model"],
        title=obj["title"],
        feature=obj["feature"],
        raw=obj,
        states=states,
        initial=initial[0],
        variables=dict(obj.get("variables", {})),
        requests=dict(obj["requests"]),
        events=events,
        timeouts=timeouts,
        invariants=tuple(obj["invariants"]),
        liveness={lv["name"]: lv for lv in obj.get("liveness", [])},
        count=obj["entity"]["count"],
        session_timeout=(obj.get("session") or {}).get("timeout"),
    )
    from conformance.requirements import requirements

    reqs = requirements()
    unknown = sorted(r for r in model.requirement_ids() if r not in reqs)
    if unknown:
        raise SpecError(str(path), "$", f"unknown requirement id(s) {', '.join(unknown)}")
    return model


# --- what a target supplies --------------------------------------------------------------------


class Binding:
    """How a model meets a target: entity ids, context values, requests, views, durations."""

    #: entities of this run (the model's count unless a binding says otherwise)
    count: int | None = None

    def entity_id(self, index: int) -> Any:
        raise NotImplementedError

    def context(self, name: str) -> Any:
        raise NotImplementedError(f"no context value {name!r}")

    def duration(self, name: str) -> float:
        raise NotImplementedError(f"no duration {name!r}")

    def holds(self, precondition: str) -> bool:
        """Whether an invariant's ``when`` precondition holds for this target."""
        return False

    def send(self, name: str, request: dict[str, Any], body: dict[str, Any], to: Any) -> dict:
        """Send the request template ``name`` (its model definition, with ``version`` and
        ``fresh`` evaluated where given, and the evaluated body) to node ``to`` of its listener
        (None: the bootstrap); the decoded response body."""
        raise NotImplementedError

    def observe(self, name: str) -> dict[str, Any]:
        """Views of the entities: view name -> set of entity indexes (``visible_set``) or
        entity index -> record or None (``per_entity``)."""
        raise NotImplementedError(f"no observer {name!r}")

    def cleanup(self, runner: ModelRunner) -> None:
        """Undo what the run left behind on the target (best effort)."""


# --- the interpreter ---------------------------------------------------------------------------


@dataclass
class Entity:
    index: int
    id: Any
    state: str
    vars: dict[str, Any]
    #: monotonic time of the last answer that renewed its session (None: no session)
    contact: float | None = None
    #: requirement ids of a timeout the model applied since the entity's last answer
    timed_out: tuple[str, ...] = ()

    def label(self) -> str:
        return f"#{self.index} ({self.id})"


class ModelRunner:
    """One run of a model against a target through ``binding``.

    ``allowed`` are the requirement ids of the test driving it: failures name only those (a
    failure naming none of them names all it concerns, which fails the whole test)."""

    def __init__(
        self,
        model: Model,
        binding: Binding,
        *,
        allowed: Iterable[str] | None = None,
        invariants: Iterable[str] | None = None,
    ) -> None:
        self.model, self.binding = model, binding
        self.allowed = set(allowed) if allowed is not None else None
        self.count = binding.count or model.count
        self.entities = [self._new_entity(i) for i in range(self.count)]
        wanted = set(invariants) if invariants is not None else None
        self.invariants = [
            inv
            for inv in model.invariants
            if (wanted is None or inv["name"] in wanted)
            and (inv.get("when") is None or binding.holds(inv["when"]))
        ]
        self.steps: list[str] = []
        #: the requirements of the rule the last answered step went through
        self.last_requirements: tuple[str, ...] = ()
        #: told of every failure before it is raised (run_machine keeps the first)
        self.on_failure: Callable[[verify.Failed], None] | None = None

    def _new_entity(self, index: int) -> Entity:
        values = {k: self._initial(v) for k, v in self.model.variables.items()}
        return Entity(index, self.binding.entity_id(index), self.model.initial, values)

    @staticmethod
    def _initial(value: Any) -> Any:
        return uuid.uuid4() if value == "$fresh.uuid" else value

    # --- failures ---------------------------------------------------------------------------

    def fail(self, message: str, reqs: Iterable[str]) -> verify.Failed:
        named = tuple(dict.fromkeys(reqs))
        if self.allowed is not None:
            kept = tuple(r for r in named if r in self.allowed)
            named = kept or named
        history = "; ".join(self.steps[-25:]) or "(none)"
        if len(self.steps) > 25:
            history = f"... {len(self.steps) - 25} earlier; {history}"
        failure = verify.Failed(f"{message} [model {self.model.name}; steps: {history}]", *named)
        if self.on_failure is not None:
            self.on_failure(failure)
        return failure

    # --- sessions and timeouts ----------------------------------------------------------------

    def session(self, e: Entity) -> bool | None:
        """True: certainly alive; False: certainly over; None: cannot tell yet."""
        if e.contact is None:
            return False
        if self.model.session_timeout is None:
            return True
        timeout = self.binding.duration(self.model.session_timeout)
        idle = time.monotonic() - e.contact
        if idle < timeout * ALIVE_SHARE:
            return True
        if idle > timeout * EXPIRED_SHARE + EXPIRY_MARGIN:
            return False
        return None

    def candidates(self, e: Entity) -> list[str]:
        """States the target may hold the entity in: its model state first."""
        self._apply_certain_timeouts(e)
        out = [e.state]
        if self.session(e) is None:
            for t in self.model.timeouts.values():
                if e.state in t["from"] and t["to"] not in out:
                    out.append(t["to"])
        return out

    def _apply_certain_timeouts(self, e: Entity) -> None:
        if e.contact is None or self.session(e) is not False:
            return
        for t in self.model.timeouts.values():
            if e.state in t["from"]:
                self.steps.append(f"{t['name']}({e.label()}): {e.state} -> {t['to']}")
                e.state = t["to"]
                e.timed_out = tuple(t["requirements"])

    def expire(self, timeout: str) -> None:
        """The entities' sessions are over (the caller waited them out): apply ``timeout``."""
        t = self.model.timeouts[timeout]
        for e in self.entities:
            if e.contact is not None:
                e.contact = -1e9
            if e.state in t["from"]:
                self.steps.append(f"{timeout}({e.label()}): {e.state} -> {t['to']}")
                e.state = t["to"]
                e.timed_out = tuple(t["requirements"])

    # --- expressions --------------------------------------------------------------------------

    def value(
        self,
        expr: Any,
        e: Entity | None = None,
        *,
        args: dict | None = None,
        params: dict | None = None,
        response: dict | None = None,
    ) -> Any:
        def ev(x: Any) -> Any:
            return self.value(x, e, args=args, params=params, response=response)

        if isinstance(expr, list):
            return [ev(x) for x in expr]
        if isinstance(expr, dict):
            if set(expr) == {"add"}:
                a, b = (ev(x) for x in expr["add"])
                return a + b
            return {k: ev(v) for k, v in expr.items()}
        if not isinstance(expr, str) or not expr.startswith("$"):
            return expr
        if expr == "$state":
            assert e is not None
            return e.state
        kind, _, rest = expr[1:].partition(".")
        if kind == "fresh":
            return uuid.uuid4()
        if kind == "entity":
            assert e is not None
            return e.id if rest == "id" else e.vars[rest]
        if kind == "arg":
            return (args or {})[rest]
        if kind == "param":
            return (params or {})[rest]
        if kind == "context":
            return self.binding.context(rest)
        if kind == "response":
            return lookup(response or {}, rest)
        raise ValueError(f"unknown expression {expr!r}")

    def guard(self, guard: dict[str, Any], e: Entity) -> bool | None:
        """A transition's guard: True, False, or None (the session cannot be told yet)."""
        result: bool | None = True
        for key, want in guard.items():
            if key == "session":
                alive = self.session(e)
                if alive is None:
                    result = None
                elif alive != (want == "alive"):
                    return False
                continue
            have = e.vars[key]
            if isinstance(want, dict):
                ok = all(_compare(op, have, v) for op, v in want.items())
            else:
                ok = have == want
            if not ok:
                return False
        return result

    # --- events --------------------------------------------------------------------------------

    def applicable(self, event: str, index: int) -> list[tuple[str, Transition]]:
        """(state, transition) pairs the event may take the entity through, model state first."""
        ev = self.model.events[event]
        e = self.entities[index]
        out = []
        for state in self.candidates(e):
            for t in ev.transitions:
                if state in t.sources and self.guard(t.guard, e) is not False:
                    out.append((state, t))
        return out

    def step(self, event: str, index: int | None = None, params: dict | None = None) -> str | None:
        """Send ``event`` for entity ``index``; the entity's new state (None: not applicable)."""
        ev = self.model.events[event]
        if ev.wait is not None:
            self.wait(ev.wait)
            return None
        assert index is not None
        e = self.entities[index]
        options = self.applicable(event, index)
        if not options or options[0][0] != e.state:
            return None  # nothing the model says happens from here: send nothing
        params = params or {}
        args = {k: self.value(v, e, params=params) for k, v in ev.args.items()}
        req = self.model.requests[ev.request or ""]
        body = self.value(req["body"], e, args=args, params=params)
        to = self.value(req.get("to"), e, args=args, params=params)
        for key in ("version", "fresh"):
            if key in req:
                req = {**req, key: self.value(req[key], e, args=args, params=params)}
        label = f"{event}({e.label()}{''.join(f', {k}={v}' for k, v in params.items())})"
        reqs = [r for _, t in options for r in t.requirements] + list(e.timed_out)
        try:
            response = self.binding.send(ev.request or "", req, body, to)
        except ConnectionClosed as x:
            self.steps.append(f"{label} -> connection closed")
            raise self.fail(f"{label}: the target closed the connection ({x})", reqs) from None
        except TimeoutError:
            self.steps.append(f"{label} -> no answer")
            raise self.fail(f"{label}: no answer", reqs) from None
        except (DecodeError, ProtocolViolation) as x:
            self.steps.append(f"{label} -> malformed answer")
            raise self.fail(f"{label}: malformed answer: {x}", reqs) from None
        shown = _brief(response, options)
        for state, t in options:
            for o in t.outcomes:
                if not self._matches(o.expect, response, e, args, params):
                    continue
                new = o.to or state
                self.steps.append(f"{label} -> {shown}: {e.state} -> {new}")
                # the answer is one the model allows: this rule's requirements were checked
                credit.ran([*t.requirements, *e.timed_out], f"{label} -> {shown}")
                self.last_requirements = (*t.requirements, *e.timed_out)
                for c in t.checks:
                    a, b = (self.value(x, e, args=args, response=response) for x in c["args"])
                    held = _compare({"greater": "gt", "equal": "eq"}[c["op"]], a, b)
                    credit.ran(c["requirements"], f"{label}: {c['message']} ({a} vs {b})", held)
                    if not held:
                        raise self.fail(
                            f"{label}: {c['message']} ({a} vs {b})", [*c["requirements"]]
                        )
                updates = {
                    k: self.value(v, e, args=args, params=params, response=response)
                    for k, v in o.effects.items()
                }
                e.vars.update(updates)
                e.state = new
                e.timed_out = ()
                if ev.ends_session:
                    e.contact = None
                elif ev.renews_session and response.get("ErrorCode", 0) == 0:
                    e.contact = time.monotonic()
                return new
        self.steps.append(f"{label} -> {shown}")
        expected = " or ".join(
            f"{_show_expect(o.expect)} (from {state})" for state, t in options for o in t.outcomes
        )
        raise self.fail(f"{label}: answered {shown}; the model expects {expected}", reqs)

    def _matches(self, expect: dict, response: dict, e: Entity, args: dict, params: dict) -> bool:
        for path, want in expect.items():
            have = lookup(response, path)
            if isinstance(want, dict) and set(want) <= {"in", "ne"}:
                if "in" in want and have not in want["in"]:
                    return False
                if "ne" in want and have == want["ne"]:
                    return False
            elif have != self.value(want, e, args=args, params=params):
                return False
        return True

    def wait(self, timeout: str) -> None:
        """Wait out a timeout for every entity (nothing is sent)."""
        t = self.model.timeouts[timeout]
        seconds = self.binding.duration(t["after"]) * EXPIRED_SHARE + EXPIRY_MARGIN + 0.1
        self.steps.append(f"wait {timeout} ({seconds:.1f} s)")
        time.sleep(seconds)
        self.expire(timeout)

    def drive(self, liveness: str, index: int) -> None:
        """Repeat the liveness promise's event until the entity reaches one of its states."""
        lv = self.model.liveness[liveness]
        e = self.entities[index]
        if e.state not in lv["from"]:
            return
        deadline = time.monotonic() + self.binding.duration(lv["within"])
        start = e.state
        while e.state not in lv["until"]:
            if time.monotonic() > deadline:
                raise self.fail(
                    f"{e.label()} still {e.state} after repeating {lv['repeat']} for "
                    f"{self.binding.duration(lv['within']):.1f} s ({lv['name']})",
                    lv["requirements"],
                )
            before = len(self.steps)
            self.step(lv["repeat"], index)
            if len(self.steps) == before:
                raise self.fail(f"{lv['repeat']} does not apply to {e.state}", lv["requirements"])
            time.sleep(0.05)
        credit.ran(lv["requirements"], f"{e.label()}: {start} -> {e.state} ({lv['name']})")

    # --- invariants ------------------------------------------------------------------------------

    def check_invariants(self) -> None:
        for inv in self.invariants:
            self.check(inv)

    def check(self, inv: dict[str, Any]) -> None:
        settle = self.binding.duration(inv["settle"]) if inv.get("settle") else 0.0
        deadline = time.monotonic() + settle
        while True:
            problems, reqs = self._violations(inv)
            if not problems:
                credit.ran(_invariant_requirements(inv), f"{inv['name']} held")
                return
            if time.monotonic() >= deadline:
                within = f" within {settle:.1f} s" if settle else ""
                raise self.fail(f"{inv['name']}{within}: {'; '.join(problems)}", reqs)
            time.sleep(POLL_INTERVAL)

    def _violations(self, inv: dict[str, Any]) -> tuple[list[str], list[str]]:
        views = self.binding.observe(inv["observe"])
        if inv["relation"] == "visible_set":
            return self._visible_set(inv, views)
        return self._per_entity(inv, views)

    def _visible_set(self, inv: dict, views: dict[str, set[int]]) -> tuple[list[str], list[str]]:
        reqs = inv["requirements"]
        maybe, surely = set(), set()
        for e in self.entities:
            states = self.candidates(e)
            if any(self.model.visible(s) for s in states):
                maybe.add(e.index)
            if all(self.model.visible(s) for s in states):
                surely.add(e.index)
        problems, named = [], []
        for view, listed in views.items():
            extra, missing = listed - maybe, surely - listed
            if extra:
                problems.append(f"{view} lists {self._names(extra)}")
                named.extend(reqs["extra"])
                for i in extra:  # fenced by a timeout the model applied: that requirement too
                    named.extend(self.entities[i].timed_out)
            if missing:
                problems.append(f"{view} does not list {self._names(missing)}")
                named.extend(reqs["missing"])
        return problems, named

    def _names(self, indexes: set[int]) -> str:
        return ", ".join(
            f"{self.entities[i].label()} ({self.entities[i].state})" for i in sorted(indexes)
        )

    def _per_entity(self, inv: dict, views: dict[str, dict]) -> tuple[list[str], list[str]]:
        want = inv.get("expect", {})
        problems: list[str] = []
        for view, records in views.items():
            for e in self.entities:
                states = self.candidates(e)
                record = records.get(e.index)
                present = want.get("present", True)
                if isinstance(present, dict):
                    expected = [s in present["states"] for s in states]
                else:
                    expected = [bool(self.value(present, e))]
                where = f"{view}: {e.label()} ({e.state})"
                if record is None:
                    if all(expected):
                        problems.append(f"{where} is missing")
                    continue
                if not any(expected):
                    problems.append(f"{where} is present: {_short(record)}")
                    continue
                sf = want.get("state_field")
                if sf and str(lookup(record, sf)).lower() not in {s.lower() for s in states}:
                    problems.append(f"{where}: {sf} is {lookup(record, sf)!r}")
                for name, expr in want.get("fields", {}).items():
                    value = self.value(expr, e)
                    if value is not None and record.get(name, lookup(record, name)) != value:
                        problems.append(f"{where}: {name} is {record.get(name)!r}, not {value!r}")
                for p in want.get("has", []):
                    if not _has(record, p):
                        problems.append(f"{where}: no {p}")
        reqs = list(inv["requirements"]) if problems else []
        return problems, reqs

    # --- the end ----------------------------------------------------------------------------------

    def cleanup(self) -> None:
        self.binding.cleanup(self)


def _invariant_requirements(inv: dict[str, Any]) -> list[str]:
    reqs = inv["requirements"]
    if isinstance(reqs, dict):  # visible_set: {"extra": [...], "missing": [...]}
        return [r for ids in reqs.values() for r in ids]
    return list(reqs)


def lookup(value: Any, path: str) -> Any:
    """``Topics[0].ErrorCode`` in a decoded body (None where absent)."""
    for m in _PATH.finditer(path):
        name, index = m.group(1), m.group(2)
        if not name:
            continue
        if not isinstance(value, dict) or name not in value:
            return None
        value = value[name]
        if index is not None:
            if not isinstance(value, list) or int(index) >= len(value):
                return None
            value = value[int(index)]
    return value


def _has(record: Any, path: str) -> bool:
    for part in path.split("."):
        if not isinstance(record, dict) or part not in record:
            return False
        record = record[part]
    return True


def _compare(op: str, a: Any, b: Any) -> bool:
    try:
        return {
            "eq": a == b,
            "ne": a != b,
            "gt": a is not None and b is not None and a > b,
            "ge": a is not None and b is not None and a >= b,
        }[op]
    except TypeError:
        return False


def _brief(response: dict, options: list[tuple[str, Transition]]) -> str:
    keys = dict.fromkeys(k for _, t in options for o in t.outcomes for k in o.expect)
    if "ErrorCode" in response:
        keys = {"ErrorCode": None, **keys}
    for k in ("BrokerEpoch",):
        if k in response:
            keys[k] = None
    names = verify.known_codes()
    parts = []
    for k in keys:
        v = lookup(response, k)
        if k.endswith("ErrorCode") and isinstance(v, int):
            v = names.get(v, v)
        parts.append(f"{k}={v}")
    return " ".join(parts) or _short(response)


def _show_expect(expect: dict) -> str:
    names = verify.known_codes()
    return " ".join(
        f"{k}={names.get(v, v) if k.endswith('ErrorCode') and isinstance(v, int) else v}"
        for k, v in expect.items()
    )


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, default=str, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "..."


# --- hypothesis ----------------------------------------------------------------------------------


def state_machine(
    model: Model,
    make_runner: Callable[[], ModelRunner],
    *,
    events: Iterable[str] | None = None,
    initialize: Iterable[str] = (),
    param_strategies: Callable[[str, dict], Any] | None = None,
) -> type:
    """A ``RuleBasedStateMachine`` with one rule per event (``events``: a subset, e.g. without
    the slow ones) and the model's invariants; each example gets a fresh runner and starts by
    sending the ``initialize`` events to every entity (so that examples begin somewhere)."""
    from hypothesis import strategies as st
    from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
    from hypothesis.stateful import initialize as init_rule

    chosen = [model.events[n] for n in (events or model.events)]
    namespace: dict[str, Any] = {}

    def __init__(self) -> None:
        RuleBasedStateMachine.__init__(self)
        self.runner = make_runner()

    def teardown(self) -> None:
        self.runner.cleanup()

    namespace["__init__"] = __init__
    namespace["teardown"] = teardown

    def params_of(ev: Event) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for pname, spec in ev.params.items():
            if param_strategies is not None:
                out[pname] = param_strategies(pname, spec)
            elif isinstance(spec["from"], list):
                out[pname] = st.sampled_from(spec["from"])
            else:
                raise ValueError(f"{model.name}: no strategy for parameter {pname}")
        return out

    first = [model.events[n] for n in initialize]
    if first:
        drawn = {f"{ev.method}__{p}": s for ev in first for p, s in params_of(ev).items()}

        @init_rule(**drawn)
        def start(self, **values: Any) -> None:
            for ev in first:
                prefix = f"{ev.method}__"
                params = {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)}
                for index in range(self.runner.count):
                    self.runner.step(ev.name, index, params)

        namespace["start"] = start
    for ev in chosen:
        strategies: dict[str, Any] = params_of(ev)
        if ev.wait is None:
            strategies["entity"] = st.integers(0, model.count - 1)
        namespace[ev.method] = rule(**strategies)(_rule(ev.name))

    @invariant()
    def invariants(self) -> None:
        self.runner.check_invariants()

    namespace["invariants"] = invariants
    name = "".join(p.capitalize() for p in model.name.split("-")) + "Machine"
    return type(name, (RuleBasedStateMachine,), namespace)


def _rule(event: str) -> Callable[..., None]:
    def run(self: Any, entity: int | None = None, **params: Any) -> None:
        if entity is not None and entity >= self.runner.count:
            entity %= self.runner.count
        self.runner.step(event, entity, params)

    run.__name__ = event.replace("-", "_")
    return run


def run_machine(
    harness: Any, machine: type, *, examples: int | None = None, steps: int = 12
) -> int:
    """Run ``machine`` with the run's seed (no shrinking: each step is a round trip); returns
    how many examples ran. The first failure is raised as the model raised it: hypothesis's
    replay of the failing example raises it again at once (the target need not fail twice, and
    a slow failure, such as a view that never settles, is waited out once)."""
    from hypothesis import HealthCheck, Phase, settings
    from hypothesis.errors import Flaky
    from hypothesis.stateful import run_state_machine_as_test

    harness.notes.seeded = True
    failures: list[BaseException] = []
    count = 0

    class Counted(machine):  # type: ignore[misc,valid-type]
        def __init__(self) -> None:
            nonlocal count
            if failures:  # hypothesis replays the failing example: report it, do not redo it
                raise failures[0]
            count += 1
            super().__init__()
            self.runner.on_failure = failures.append

    Counted.__name__ = machine.__name__
    try:
        run_state_machine_as_test(
            Counted,
            settings=settings(
                max_examples=examples or harness.examples,
                stateful_step_count=steps,
                derandomize=False,
                database=None,
                deadline=None,
                print_blob=False,
                suppress_health_check=list(HealthCheck),
                phases=(Phase.explicit, Phase.reuse, Phase.generate),
                report_multiple_bugs=False,
            ),
        )
    except Flaky:
        if failures:
            raise failures[0] from None
        raise
    if count == 0:
        raise RuntimeError("the state machine ran no example")
    return count
