"""A pytest plugin for the project's tests: the suite's reference target with broker faults.

Loaded with ``-p tests.support.faulty_reference --broker-faults NAME[,NAME]`` in a suite run. It
makes the plugin's ``--target reference`` (either store) a reference cluster whose brokers have
the named faults (``reference_impl/replica/faults.py``: ``ack_before_replication``,
``forget_log_on_start`` ...), which nothing else can switch on: the option exists only where this
plugin is loaded, and the faults only in the broker configs it writes.
"""

from __future__ import annotations

from typing import Any

import pytest

import conformance.targets
from conformance.targets import Target, TargetOptions
from conformance.targets.reference import ReferenceTarget

#: the controller's faults (``reference_impl/metadata/placement.reconcile``); the others are
#: the brokers' (``reference_impl/replica/faults.py``)
CONTROLLER_FAULTS = frozenset({"unclean_leader_election"})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--broker-faults",
        default="",
        help="comma-separated faults: the brokers' (reference_impl/replica/faults.py) and the "
        "controller's (unclean_leader_election)",
    )


def pytest_configure(config: pytest.Config) -> None:
    names = [n.strip() for n in config.getoption("broker_faults").split(",") if n.strip()]
    make = conformance.targets.make_target

    def faulty(opts: TargetOptions) -> Target:
        target: Any = make(opts)
        if isinstance(target, ReferenceTarget) and names:
            ours = [n for n in names if n in CONTROLLER_FAULTS]
            theirs = [n for n in names if n not in CONTROLLER_FAULTS]
            settings = dict(target.broker_overrides.get("settings", {}))
            settings["faults"] = dict.fromkeys(theirs, True)
            target.broker_overrides = {**target.broker_overrides, "settings": settings}
            # every node's settings: the brokers' own (above) replace them on brokers
            target.overrides = {
                **target.overrides,
                "settings": {"faults": dict.fromkeys(ours, True)},
            }
            target.name = "faulty-reference"
        return target

    conformance.targets.make_target = faulty
