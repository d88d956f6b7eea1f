"""How a suite test declares what it checks: a stable readable id and its requirement ids.

    @conformance("metadata/v2+/cluster-id/format", "KIP-78.R3")
    def test_format(harness): ...

The id is the test's name in results, reports and ``--select``; it may use the test's
parameters (``"spec/{case}/well-formed"``, formatted with ``str()`` of each parameter). The
plugin refuses, at collection, a requirement id that ``specs/requirements`` does not define.
"""

from __future__ import annotations

import re

import pytest

MARKER = "conformance"


def conformance(test_id: str, *requirements: str, api: int | None = None) -> pytest.MarkDecorator:
    """Mark a test with its stable id, the requirement ids it checks and, optionally, its API."""
    if not requirements:
        raise ValueError(f"{test_id}: a conformance test names at least one requirement id")
    return pytest.mark.conformance(test_id=test_id, requirements=tuple(requirements), api=api)


def kebab(name: str) -> str:
    """``DescribeCluster`` -> ``describe-cluster``: API names as they appear in test ids."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()
