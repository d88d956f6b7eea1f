"""Targets: option parsing, and tansu started on a free loopback port and stopped by pid (the
docker target: tests/targets)."""

from __future__ import annotations

import os
import subprocess
import time

import pytest

from conformance.targets import TargetError, TargetOptions, make_target
from conformance.targets.base import Endpoint, parse_bootstrap, parse_endpoint, parse_zookeeper
from conformance.targets.tansu import TansuTarget, prune_logs


def test_endpoints_parse() -> None:
    assert parse_endpoint("127.0.0.1:9092") == Endpoint("127.0.0.1", 9092)
    assert parse_endpoint("[::1]:9092") == Endpoint("::1", 9092)
    assert str(Endpoint("::1", 1)) == "[::1]:1"
    assert parse_bootstrap("a:1,b:2") == [Endpoint("a", 1), Endpoint("b", 2)]
    assert parse_zookeeper("127.0.0.1:2181/kafka") == "127.0.0.1:2181/kafka"


@pytest.mark.parametrize("bad", ["localhost", "host:", ":9092", "host:99999", "host:0", "a b:1"])
def test_malformed_addresses_are_refused_in_one_line(bad: str) -> None:
    with pytest.raises(TargetError) as e:
        parse_endpoint(bad, "bootstrap server")
    assert "malformed bootstrap server" in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(
    ("opts", "message"),
    [
        (TargetOptions(target="nonsense"), "unknown target 'nonsense'"),
        (TargetOptions(target="external"), "needs --bootstrap-server"),
        (TargetOptions(target="tansu", bootstrap="h:1"), "starts its own"),
        (TargetOptions(bootstrap="h:1", sasl_mechanism="PLAIN"), "together"),
        (
            TargetOptions(
                bootstrap="h:1", sasl_mechanism="GSSAPI", sasl_username="u", sasl_password="p"
            ),
            "unknown SASL mechanism",
        ),
        (TargetOptions(bootstrap="h:1", controller="nope"), "malformed controller bootstrap"),
        (TargetOptions(bootstrap="h:1", zookeeper="/only-chroot"), "ZooKeeper"),
        (TargetOptions(target="docker:"), "needs an image"),
        (TargetOptions(target="docker:apache/kafka:3.9.1?mode=raft"), "unknown option"),
        (TargetOptions(target="reference?controllers=3"), "several controllers need"),
        (TargetOptions(target="reference:zookeeper?controllers=x"), "controllers must be 1 to 9"),
        (TargetOptions(target="reference:zookeeper?brokers=5"), "unknown option"),
        (TargetOptions(target="reference?security=tls"), "security must be none or sasl"),
        (TargetOptions(bootstrap="h:1", unprivileged_username="alice"), "together"),
        (
            TargetOptions(bootstrap="h:1", unprivileged_username="a", unprivileged_password="p"),
            "the suite's own --sasl-mechanism",
        ),
    ],
)
def test_bad_target_options(opts: TargetOptions, message: str) -> None:
    with pytest.raises(TargetError, match=message.replace("(", r"\(")):
        make_target(opts)


def test_external_target_keeps_what_it_was_given() -> None:
    t = make_target(
        TargetOptions(
            bootstrap="127.0.0.1:1,127.0.0.1:2",
            controller="127.0.0.1:3",
            zookeeper="127.0.0.1:4/k",
            target_name="kafka",
            target_version="3.9.1",
        )
    )
    assert t.kind == "external" and t.name == "kafka" and t.version == "3.9.1"
    assert t.bootstrap == [Endpoint("127.0.0.1", 1), Endpoint("127.0.0.1", 2)]
    assert t.controller == Endpoint("127.0.0.1", 3) and t.zookeeper == "127.0.0.1:4/k"
    assert t.client_listener_types == ("zkBroker", "broker")


def test_tansu_starts_on_a_free_loopback_port_and_stops_by_pid() -> None:
    t = TansuTarget()
    t.start()
    try:
        pid, log = t.pid, t._log
        assert pid and t.bootstrap[0].host == "127.0.0.1" and t.bootstrap[0].port > 0
        os.kill(pid, 0)  # running
        assert log is not None and log.name.startswith(f"kc-tansu-{os.getpid()}-")
        t.restart_broker(111)
        assert t.pid != pid
        assert not log.exists() and t._log is not None and t._log.exists()  # one log at a time
        pid, log = t.pid, t._log
    finally:
        t.stop()
    assert t.pid is None and not log.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_tansu_logs_of_gone_processes_are_removed(tmp_path) -> None:
    """A run killed before it stopped tansu leaves its log; the next start removes the logs of
    processes that are gone (and unowned ones a day old), never a live process's."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    day_ago = time.time() - 2 * 86400
    names = {
        "gone": f"kc-tansu-{dead.pid}-a.log",
        "mine": f"kc-tansu-{os.getpid()}-b.log",
        "parent": f"kc-tansu-{os.getppid()}-c.log",
        "unowned-old": "kc-tansu-x1y2.log",
        "unowned-new": "kc-tansu-z3w4.log",
    }
    for name in names.values():
        (tmp_path / name).write_text("tansu broker 0.6.0\n")
    os.utime(tmp_path / names["unowned-old"], (day_ago, day_ago))
    assert prune_logs(tmp_path) == 2
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {names["mine"], names["parent"], names["unowned-new"]}
