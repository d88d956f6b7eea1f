"""A suite test that registers fake brokers into the cluster is ``disruptive``.

A fake broker (``conformance.suite.broker_registration.binding``) is registered at a loopback
port nobody listens on; once Online, every broker's Metadata lists it. A test run beside it by a
concurrent run (``--jobs``) that connects to every listed broker gets ECONNREFUSED: the ZooKeeper
store's shared reference run failed so in about 1 CI run in 6 (sessions 11-12), when
BROKER-REGISTRATION.R8's two znode tests, not marked disruptive, overlapped CONFIGS.R12.
Disruptive tests run after the others, one at a time (``conformance.plugin``).

A test registers fake brokers when its code (its lambdas included) builds that binding
(``binding.new_runner`` or ``binding.LifecycleBinding``, named through the module or imported):
found by reading the code objects of the suite tests whose module names broker_registration, so a
new such test is caught without running it.
"""

from __future__ import annotations

from collections.abc import Iterator
from types import CodeType, FunctionType

from conformance.suite.broker_registration import binding
from tests.support import suite_tests

#: what a test calls to build the fake brokers' binding
BUILDERS = {"new_runner": binding.new_runner, "LifecycleBinding": binding.LifecycleBinding}


def names(code: CodeType) -> Iterator[str]:
    """Every global and attribute name ``code`` and the code nested in it refer to."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from names(const)


def registers(fn: FunctionType) -> bool:
    """Whether the test function ``fn`` builds the fake brokers' binding."""
    used, scope = set(names(fn.__code__)), fn.__globals__
    through_module = any(scope.get(n) is binding for n in used) and bool(used & set(BUILDERS))
    return through_module or any(scope.get(n) in BUILDERS.values() for n in used)


def registering_tests() -> dict[str, bool]:
    """test id -> whether it is marked disruptive, for every suite test that builds fake
    brokers."""
    return {
        m["test_id"]: m["disruptive"]
        for fn, m in suite_tests.declared(mentioning="broker_registration")
        if registers(fn)
    }


def test_every_test_that_registers_fake_brokers_is_disruptive() -> None:
    found = registering_tests()
    # the scan sees the lifecycle tests and the ZooKeeper record tests (not an empty pass)
    assert {
        "broker-registration/lifecycle/state-machine",
        "broker-registration/zookeeper/registration-record",
        "broker-registration/zookeeper/written-by-controller-only",
    } <= set(found), sorted(found)
    assert [t for t, disruptive in found.items() if not disruptive] == []
