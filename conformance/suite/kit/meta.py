"""How a suite test declares what it checks: a stable readable id and its requirement ids.

    @conformance("kip-78/metadata/v2+/cluster-id/format", "KIP-78.R3")
    def test_format(harness): ...

The id is the test's name in results, reports and ``--select``. It starts with its feature (the
stem of the requirement file it checks; ``tests/suite/test_layout.py`` holds it) and may use the
test's parameters (``"protocol/spec/{case}/well-formed"``, formatted with ``str()`` of each
parameter). The plugin refuses, at collection, a requirement id that ``specs/requirements`` does
not define.

Crediting: listing a requirement does not credit it. A requirement of a test is PASS only when a
check naming it ran against the target during the test and held:

* every ``verify.check(cond, message, *req_ids)`` / ``verify.soft`` / ``verify.expect_*`` names
  its requirement ids explicitly (a check naming none is a suite bug: ValueError, ERROR), and
  records under each id that it ran and what it saw (``saw=`` when the message is not that);
  ``verify.expect_response`` credits the framing/served/correlation/decoding ids it was given;
* a model run (``conformance.suite.kit.models``) credits the requirements of each rule whose answer
  matched, each check and liveness promise that held and each invariant that held, nothing else;
* a requirement the target gives no way to check (an API or version it does not advertise) is
  recorded with ``harness.can_check(api_key, *req_ids, within="0-1")`` (or
  ``credit.cannot_check(Unsupported("why"), *req_ids)``) and the test goes on with the rest;
* at the end, a listed requirement with no check that ran is that recorded verdict
  (UNSUPPORTED naming the missing API or version), else SKIP "not checked: ...", never PASS.

Each result record carries ``observed`` (checks run, failed, the first texts seen); a failure's
text puts each requirement's statement beside its id. ``kafka-conformance requirements`` lists
every requirement with its statement and the tests that check it, and the project's tests fail
when a requirement has no test that can credit it (``conformance.suite.catalog``). Raising
``verify.Failed`` directly fails its ids but credits nothing: use it for preconditions (a
cluster listing no broker), not for what a check saw hold.
"""

from __future__ import annotations

import re

import pytest

MARKER = "conformance"


def conformance(
    test_id: str, *requirements: str, api: int | None = None, disruptive: bool = False
) -> pytest.MarkDecorator:
    """Mark a test with its stable id, the requirement ids it checks and, optionally, its API.

    ``disruptive``: the test may bring a target down or change it under the tests beside it
    (malformed frames, abrupt disconnects, DURABILITY's faults, a broker restarted, brokers
    registered into the cluster); such tests run after all the others, one at a time, in their
    usual order, so that a target that goes down costs the fewest verdicts and a concurrent run
    (``--jobs``) never runs one beside another test (``conformance.plugin``)."""
    if not requirements:
        raise ValueError(f"{test_id}: a conformance test names at least one requirement id")
    return pytest.mark.conformance(
        test_id=test_id, requirements=tuple(requirements), api=api, disruptive=disruptive
    )


def kebab(name: str) -> str:
    """``DescribeCluster`` -> ``describe-cluster``: API names as they appear in test ids."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", name).lower()
