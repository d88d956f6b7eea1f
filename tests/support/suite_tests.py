"""The suite's test functions as written: every ``@conformance`` test of ``conformance.suite``
with its mark's arguments (test id, requirements, API, disruptive), read by importing the
modules, without collecting or running them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator
from types import FunctionType
from typing import Any

import conformance.suite
from conformance.suite.kit.meta import MARKER


def declared() -> Iterator[tuple[FunctionType, dict[str, Any]]]:
    """(test function, its ``conformance`` mark's arguments) for every suite test module."""
    for info in pkgutil.walk_packages(conformance.suite.__path__, "conformance.suite."):
        if not info.name.rsplit(".", 1)[-1].startswith("test_"):
            continue
        module = importlib.import_module(info.name)
        for _, fn in inspect.getmembers(module, inspect.isfunction):
            for mark in getattr(fn, "pytestmark", []):
                if mark.name == MARKER:
                    yield fn, mark.kwargs
