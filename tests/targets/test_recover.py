"""A target restarted after it went down mid-run (``Target.recover``) is found where its new
processes serve: the endpoints its start found are forgotten, those the user named are kept."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from conformance.targets import TargetError, TargetOptions, make_target
from conformance.targets.base import Endpoint, Target


@dataclass
class Counting(Target):
    """Each start serves its controller and ZooKeeper on new ports, as new processes would."""

    kind: str = "counting"
    starts: int = 0
    stops: int = 0

    def start(self) -> None:
        self.starts += 1
        self.controller = self.controller or Endpoint("127.0.0.1", 1000 + self.starts)
        self.zookeeper = self.zookeeper or f"127.0.0.1:{2000 + self.starts}/kafka"

    def stop(self) -> None:
        self.stops += 1


def test_a_restart_forgets_the_endpoints_the_start_found() -> None:
    target = Counting()
    target.start()
    target.recover()
    assert (target.starts, target.stops) == (2, 1)
    assert target.controller == Endpoint("127.0.0.1", 1002)
    assert target.zookeeper == "127.0.0.1:2002/kafka"


def test_a_restart_keeps_the_endpoints_the_user_named() -> None:
    target = Counting(controller=Endpoint("127.0.0.1", 999), given=frozenset({"controller"}))
    target.start()
    target.recover()
    assert target.controller == Endpoint("127.0.0.1", 999)
    assert target.zookeeper == "127.0.0.1:2002/kafka"


def test_the_options_say_which_endpoints_the_user_named() -> None:
    opts = TargetOptions(bootstrap="127.0.0.1:9092", controller="127.0.0.1:9093")
    assert make_target(opts).given == frozenset({"controller"})


def test_an_external_target_is_not_restarted() -> None:
    target = make_target(TargetOptions(bootstrap="127.0.0.1:9092"))
    assert not target.manages_processes
    with pytest.raises(TargetError, match="cannot restart"):
        target.recover()
