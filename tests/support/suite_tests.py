"""The suite's test functions as written: every ``@conformance`` test of ``conformance.suite``
with its mark's arguments (test id, requirements, API, disruptive), read by importing the
modules, without collecting or running them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from pathlib import Path
from types import FunctionType
from typing import Any

import conformance.suite
from conformance.suite.kit.meta import MARKER


def declared(mentioning: str | None = None) -> Iterator[tuple[FunctionType, dict[str, Any]]]:
    """(test function, its ``conformance`` mark's arguments) for every suite test module; with
    ``mentioning``, only of the modules whose dotted name or source text holds it (the others
    are not imported: importing every module of the suite takes seconds)."""
    for info in pkgutil.walk_packages(conformance.suite.__path__, "conformance.suite."):
        leaf = info.name.rsplit(".", 1)[-1]
        if not leaf.startswith("test_"):
            continue
        if mentioning is not None and mentioning not in info.name:
            source = Path(getattr(info.module_finder, "path", "")) / f"{leaf}.py"
            if mentioning not in source.read_text(encoding="utf-8"):
                continue
        module = importlib.import_module(info.name)
        for _, fn in inspect.getmembers(module, inspect.isfunction):
            for mark in getattr(fn, "pytestmark", []):
                if mark.name == MARKER:
                    yield fn, mark.kwargs
