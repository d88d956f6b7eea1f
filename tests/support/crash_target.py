"""A pytest plugin for the project's tests: the suite's reference target behind a crash proxy.

Loaded with ``-p tests.support.crash_target`` in a suite run. It makes the plugin's ``--target
reference`` a :class:`CrashingReference`: the reference cluster, with its first broker's client
listener behind a :class:`tests.support.faults_crash.CrashProxy` that, at the invalid-varint
Metadata request, drops every connection, stops listening and kills that broker by pid
(SIGKILL). Its restart is the reference target's own ``recover`` (the dead broker started again
on its data and ports), then the proxy listens again: the run goes on, as after a real crash.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass, field
from typing import Any

import pytest

import conformance.targets
from conformance.targets import Target, TargetOptions
from conformance.targets.base import Endpoint
from conformance.targets.reference import ReferenceTarget
from tests.support.faults_crash import CrashProxy, on_invalid_varint


@dataclass
class CrashingReference(ReferenceTarget):
    proxy: CrashProxy | None = field(default=None, repr=False)
    #: how many times recover() ran
    recovered: int = 0

    def start(self) -> None:
        super().start()
        first = self._cluster.broker_nodes()[0]
        upstream = self._cluster.broker_address(first)
        if self.proxy is None:

            def kill() -> None:
                self._cluster.kill(first.name, signal.SIGKILL)

            self.proxy = CrashProxy(upstream, on_invalid_varint, kill)
            self.proxy.__enter__()
        self.bootstrap = [Endpoint("127.0.0.1", self.proxy.port)]

    def recover(self) -> None:
        super().recover()  # the reference target's restart of its dead broker
        self.recovered += 1
        assert self.proxy is not None
        self.proxy.reopen()

    def stop(self) -> None:
        try:
            if self.proxy is not None:
                self.proxy.__exit__(None, None, None)
                self.proxy = None
        finally:
            super().stop()


def pytest_configure(config: pytest.Config) -> None:
    make = conformance.targets.make_target

    def crashing(opts: TargetOptions) -> Target:
        target: Any = make(opts)
        if type(target) is ReferenceTarget:
            return CrashingReference(kind=target.kind, name="crashing-reference")
        return target

    conformance.targets.make_target = crashing
