"""A model file (``specs/models/<name>.json``): read, validated against ``model.schema.json``
and checked for consistency (states, requests, timeouts and requirement ids it names)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from conformance import specs
from conformance.protocol import ErrorCode
from conformance.protocol.errors import SpecError

MODELS_DIR = specs.MODELS
MODEL_SCHEMA = specs.SCHEMA / "model.schema.json"


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
    code = ErrorCode.__members__.get(name)
    if code is None:
        raise SpecError(str(path), where, f"unknown error name {name!r}")
    return int(code)


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
