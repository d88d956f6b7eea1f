"""The interpreter: one run of a model for one set of entities against a target.

``step`` sends an event's real request, matches the answer against the transitions the model
allows from the entity's state and applies the one that matched; ``check_invariants`` polls the
binding's observers until they agree with the model (within the invariant's settle bound). Only
rules, checks, liveness promises and invariants that executed credit their requirements
(``conformance.suite.kit.credit``).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from conformance.client.wire import ConnectionClosed, ProtocolViolation
from conformance.protocol.errors import DecodeError
from conformance.protocol.kafka_errors import error_name
from conformance.suite.kit import credit, verify
from conformance.suite.kit.models.binding import Binding
from conformance.suite.kit.models.spec import Model, Transition

#: a session silent for less than this share of its timeout is certainly alive
ALIVE_SHARE = 0.5
#: ... and for more than this share (plus the margin) certainly timed out
EXPIRED_SHARE = 1.5
EXPIRY_MARGIN = 0.5
POLL_INTERVAL = 0.02

_PATH = re.compile(r"([A-Za-z0-9_.-]+?)(?:\[(\d+)\])?(?:\.|$)")


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
        state, started = self.model.initial, self.binding.start(index)
        if started is not None:
            state, changed = started
            if state not in self.model.states or not set(changed) <= set(values):
                raise ValueError(f"{self.model.name}: entity {index} cannot start as {started}")
            values.update(changed)
        return Entity(index, self.binding.entity_id(index), state, values)

    @staticmethod
    def _initial(value: Any) -> Any:
        return uuid.uuid4() if value == "$fresh.uuid" else value

    # --- credit and failures -------------------------------------------------------------------

    def _ran(self, reqs: Iterable[str], saw: str, held: bool = True) -> None:
        """Credit the driving test's requirements among ``reqs`` (``allowed``): a rule's other
        requirements are another test's to judge, e.g. where this target cannot show them."""
        kept = [r for r in reqs if self.allowed is None or r in self.allowed]
        if kept:
            credit.ran(kept, saw, held)

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
                self._ran([*t.requirements, *e.timed_out], f"{label} -> {shown}")
                self.last_requirements = (*t.requirements, *e.timed_out)
                for c in t.checks:
                    a, b = (self.value(x, e, args=args, response=response) for x in c["args"])
                    held = _compare({"greater": "gt", "equal": "eq"}[c["op"]], a, b)
                    self._ran(c["requirements"], f"{label}: {c['message']} ({a} vs {b})", held)
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
        self._ran(lv["requirements"], f"{e.label()}: {start} -> {e.state} ({lv['name']})")

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
                self._ran(_invariant_requirements(inv), f"{inv['name']} held")
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
    parts = []
    for k in keys:
        v = lookup(response, k)
        if k.endswith("ErrorCode") and isinstance(v, int):
            v = error_name(v)
        parts.append(f"{k}={v}")
    return " ".join(parts) or _short(response)


def _show_expect(expect: dict) -> str:
    return " ".join(
        f"{k}={error_name(v) if k.endswith('ErrorCode') and isinstance(v, int) else v}"
        for k, v in expect.items()
    )


def _short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, default=str, separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "..."
