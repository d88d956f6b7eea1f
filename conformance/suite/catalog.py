"""Which suite tests check which requirement, read from the suite itself without running it.

A requirement is covered when a test lists it (``@conformance(..., "KIP-78.R1")``) and something
can credit it: a ``verify`` check whose requirement ids name it, code that hands its id to a
helper that checks it or keeps it in a table of cases, or a rule of a model (``specs/models``)
that names it. ``kafka-conformance requirements`` prints this table; the
project's tests fail when a requirement has no test that can credit it.

The check calls are read from the source (ast) and their requirement arguments evaluated in the
module's namespace, so constants (``R1 = "KIP-590.R1"``, ``*REQS``, ``f"{R}7"``) count; an
argument that only has a value at run time (``*runner.last_requirements``) does not.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import pkgutil
import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import conformance
from conformance import specs

#: verify's checks: name -> positional index where requirement ids start (None: keywords only)
CHECKS: dict[str, int | None] = {
    "check": 2,
    "soft": 3,
    "expect_disconnect": 3,
    "expect_error_code": 3,
    "expect_still_serving": 1,
    "expect_error_or_disconnect": None,
    "expect_response": None,
    "ran": 1,
}
#: keywords of the checks that carry requirement ids, and their defaults
ID_KEYWORDS = ("req_ids", "served", "framing", "correlation", "decoding", "defined", "documented")
REQUIREMENT_ID = re.compile(r"[A-Z][A-Z0-9]*(-[A-Z0-9]+)*\.R[1-9][0-9]*")
RESPONSE_DEFAULTS = ("PROTOCOL.R9", "PROTOCOL.R1", "PROTOCOL.R2", "PROTOCOL.R3")
ERROR_CODE_DEFAULTS = ("PROTOCOL.R4", "PROTOCOL.R5")


@dataclass(frozen=True)
class SuiteTest:
    test_id: str
    requirements: tuple[str, ...]
    where: str
    #: sends what may bring a target down; runs after every other test (``meta.conformance``)
    disruptive: bool = False
    #: where the test is: its file (from the folder holding the ``conformance`` package) and
    #: function, as pytest names it (``conformance/suite/kip78/test_x.py::test_y``)
    location: str = ""


@dataclass
class Catalog:
    tests: list[SuiteTest] = field(default_factory=list)
    #: requirement id -> where a check or model rule names it
    checked_by: dict[str, set[str]] = field(default_factory=dict)

    def tests_of(self, req_id: str) -> list[SuiteTest]:
        return [t for t in self.tests if req_id in t.requirements]

    def creditable(self, req_id: str) -> bool:
        return bool(self.tests_of(req_id)) and bool(self.checked_by.get(req_id))


def _modules() -> list[ModuleType]:
    import conformance.suite as suite

    out = []
    for info in pkgutil.walk_packages(suite.__path__, "conformance.suite."):
        out.append(importlib.import_module(info.name))
    return out


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (tuple, list, set, frozenset)):
        return [v for v in value if isinstance(v, str)]
    return []


def _evaluate(node: ast.expr, namespace: dict[str, Any]) -> list[str]:
    try:
        value = eval(compile(ast.Expression(node), "<catalog>", "eval"), dict(namespace))
    except Exception:
        return []
    return _strings(value)


def _call_name(call: ast.Call) -> str | None:
    f = call.func
    if isinstance(f, ast.Attribute) and not (
        isinstance(f.value, ast.Name) and f.value.id == "self"
    ):
        return f.attr
    if isinstance(f, ast.Name):
        return f.id
    return None


def _checked_ids(module: ModuleType) -> set[str]:
    try:
        source = inspect.getsource(module)
    except (OSError, TypeError):
        return set()
    found: set[str] = set()
    namespace = vars(module)
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = _call_name(node)
        if name not in CHECKS:
            continue
        start = CHECKS[name]
        if start is not None:
            for arg in node.args[start:]:
                found.update(
                    _evaluate(arg.value if isinstance(arg, ast.Starred) else arg, namespace)
                )
        for kw in node.keywords:
            if kw.arg in ID_KEYWORDS:
                found.update(_evaluate(kw.value, namespace))
        if name == "expect_response":
            given = {kw.arg for kw in node.keywords}
            defaults = zip(ID_KEYWORDS[1:5], RESPONSE_DEFAULTS, strict=True)
            found.update(rid for kw, rid in defaults if kw not in given)
    if module.__name__ == "conformance.suite.kit.verify":
        found.update(ERROR_CODE_DEFAULTS)  # check_error_codes' defaults
    return found | _mentioned_ids(ast.parse(source))


def _mentioned_ids(tree: ast.Module) -> set[str]:
    """Requirement ids written as text in code (not in a ``@conformance`` mark or a docstring):
    ids handed to a helper that checks them, or kept in a table of cases."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _call_name(node) == "conformance":
            skip.update(id(n) for n in ast.walk(node))
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skip.add(id(body[0].value))  # a docstring
    return {
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant)
        and isinstance(n.value, str)
        and id(n) not in skip
        and REQUIREMENT_ID.fullmatch(n.value)
    }


def unnamed_checks() -> list[str]:
    """``module:line`` of every check call in the suite that names no requirement id."""
    out = []
    for module in _modules():
        try:
            source = inspect.getsource(module)
        except (OSError, TypeError):
            continue
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.Call) or _call_name(node) not in CHECKS:
                continue
            start = CHECKS[_call_name(node) or ""]
            if start is None or module.__name__ == "conformance.suite.kit.verify":
                continue  # keyword ids with defaults; verify's own plumbing passes them on
            if isinstance(node.func, ast.Name) and not any(
                isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args
            ):
                continue  # a local function of the same name, not a check
            named = len(node.args) > start or any(isinstance(a, ast.Starred) for a in node.args)
            if not named and "req_ids" not in {kw.arg for kw in node.keywords}:
                out.append(f"{module.__name__}:{node.lineno}")
    return out


def _model_ids() -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}

    def walk(v: Any, where: str) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                if k in ("requirements", "extra", "missing") and isinstance(x, list):
                    for rid in x:
                        out.setdefault(rid, set()).add(where)
                else:
                    walk(x, where)
        elif isinstance(v, list):
            for x in v:
                walk(x, where)

    for path in sorted(specs.MODELS.glob("*.json")):
        walk(json.loads(path.read_text(encoding="utf-8")), f"model {path.stem}")
    return out


def _file(module: ModuleType) -> str:
    """The module's file as a path from the folder that holds the ``conformance`` package."""
    path = Path(module.__file__ or "")
    root = Path(conformance.__file__).resolve().parents[1]
    try:
        return path.resolve().relative_to(root).as_posix()
    except ValueError:
        return path.as_posix()


@cache
def catalog() -> Catalog:
    """The suite's tests and what their checks name (imports every suite module once)."""
    cat = Catalog()
    for module in _modules():
        for rid in _checked_ids(module):
            cat.checked_by.setdefault(rid, set()).add(module.__name__)
        for name, obj in vars(module).items():
            if not (name.startswith("test_") and callable(obj)):
                continue
            if getattr(obj, "__module__", None) != module.__name__:
                continue
            for mark in getattr(obj, "pytestmark", []):
                if mark.name == "conformance":
                    cat.tests.append(
                        SuiteTest(
                            mark.kwargs["test_id"],
                            tuple(mark.kwargs["requirements"]),
                            f"{module.__name__}.{name}",
                            bool(mark.kwargs.get("disruptive")),
                            f"{_file(module)}::{name}",
                        )
                    )
    for rid, where in _model_ids().items():
        cat.checked_by.setdefault(rid, set()).update(where)
    return cat


# --- kafka-conformance requirements ------------------------------------------------------------


def add_requirements(sub: Any) -> None:
    p = sub.add_parser(
        "requirements",
        help="list every requirement with its statement and the suite tests that check it",
        description="Every requirement of specs/requirements, its level and statement, and the "
        "suite tests that check it, one a line: the test id as declared ({name} is a test "
        "parameter) and where the test is (file::function, as pytest names it). Exit code 1 "
        "when a listed requirement has no test that can credit it.",
    )
    p.add_argument(
        "only",
        nargs="*",
        metavar="ID|FEATURE",
        help="requirement ids or features (kip-78, KIP-78, protocol ...) to list",
    )
    p.set_defaults(handler=requirements_command)


def _wanted(req: Any, only: list[str]) -> bool:
    names = {req.id.lower(), req.feature.lower(), req.file.lower()}
    return not only or any(o.lower() in names for o in only)


def requirements_command(args: Any) -> int:
    from conformance.requirements import requirements

    cat = catalog()
    shown = [r for r in requirements() if _wanted(r, args.only)]
    if not shown:
        print(f"kafka-conformance: error: no requirement matches {' '.join(args.only)}")
        return 2
    uncovered = []
    for r in shown:
        tests = sorted({(t.test_id, t.location) for t in cat.tests_of(r.id)})
        print(f"{r.id}  {r.level}  {r.statement}")
        for test_id, location in tests:
            print(f"    {test_id}  {location}")
        if not cat.creditable(r.id):
            uncovered.append(r.id)
            why = "no check names it" if tests else "no test lists it"
            print(f"    {'' if tests else 'no test; '}nothing can credit it ({why})")
    if uncovered:
        print(f"{len(uncovered)} requirement(s) no test can credit: {', '.join(uncovered)}")
        return 1
    return 0
