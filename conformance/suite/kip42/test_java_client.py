"""KIP-42.R1-R7 judged on Java kafka-clients releases (``run --client java:VERSION``).

Each release named runs the harness once per run (``targets/java_client``) against the run's
broker target, on a topic of the suite's; every test below judges one requirement on those
events (``java_events``). The environment variable ``KC_JAVA_HARNESS_FAULT`` makes the harness
run a deliberately wrong chain (the project's tests only: ``reorder``, ``drop-failed-acks``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from conformance.protocol import ApiKey
from conformance.results.verdicts import MissingPrecondition
from conformance.suite.kip42 import env as client_env
from conformance.suite.kip42 import java_events
from conformance.suite.kit.harness import Harness
from conformance.suite.kit.meta import conformance
from conformance.suite.kit.safety import fresh_name
from conformance.targets import TargetError
from conformance.targets.java_client import Client, parse_client, run_harness

#: the project's tests' switch for a wrong chain in the harness
FAULT_ENV = "KC_JAVA_HARNESS_FAULT"

#: (client, bootstrap, fault) -> the harness's events, or why it could not run
_RUNS: dict[tuple[str, str, str], list[dict] | str] = {}


def java_clients(config: pytest.Config) -> list[Client]:
    """The Java releases named with ``--client`` (none: these tests are deselected)."""
    try:
        named = config.getoption("client") or []
    except ValueError:
        return []
    return [c for c in map(parse_client, named) if c.implementation == "java"]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "client" in metafunc.fixturenames:
        metafunc.parametrize("client", java_clients(metafunc.config), ids=str)


def events_of(harness: Harness, client: Client) -> list[dict]:
    """The harness's events for this release and target, run once per run."""
    fault = os.environ.get(FAULT_ENV, "")
    bootstrap = ",".join(map(str, harness.target.bootstrap))
    key = (str(client), bootstrap, fault)
    if key not in _RUNS:
        client_env.harness_env(harness, commits=True)
        with client_env.suite_topic(harness) as [topic], tempfile.TemporaryDirectory() as tmp:
            try:
                _RUNS[key] = run_harness(
                    client.version or "",
                    bootstrap,
                    topic,
                    fresh_name("kip42-java"),
                    Path(tmp) / "events.jsonl",
                    fault=fault,
                )
            except TargetError as e:
                _RUNS[key] = str(e)
    got = _RUNS[key]
    if isinstance(got, str):
        raise MissingPrecondition(f"the {client} harness could not run: {got}")
    return got


def _judge(harness: Harness, client: Client, judge: Callable[[list[dict]], None]) -> None:
    judge(events_of(harness, client))


@conformance("kip-42/client/{client}/on-send-chain", "KIP-42.R1", api=ApiKey.PRODUCE)
def test_on_send(harness: Harness, client: Client) -> None:
    _judge(harness, client, java_events.judge_r1)


@conformance("kip-42/client/{client}/on-acknowledgement", "KIP-42.R2", api=ApiKey.PRODUCE)
def test_on_acknowledgement(harness: Harness, client: Client) -> None:
    _judge(harness, client, java_events.judge_r2)


@conformance("kip-42/client/{client}/on-consume-chain", "KIP-42.R3", api=ApiKey.FETCH)
def test_on_consume(harness: Harness, client: Client) -> None:
    _judge(harness, client, java_events.judge_r3)


@conformance("kip-42/client/{client}/on-commit", "KIP-42.R4", api=ApiKey.OFFSET_COMMIT)
def test_on_commit(harness: Harness, client: Client) -> None:
    _judge(harness, client, java_events.judge_r4)


@conformance("kip-42/client/{client}/close", "KIP-42.R5")
def test_close(harness: Harness, client: Client) -> None:
    _judge(harness, client, java_events.judge_r5)


@conformance("kip-42/client/{client}/exceptions-swallowed", "KIP-42.R6")
def test_exceptions_swallowed(harness: Harness, client: Client) -> None:
    _judge(harness, client, java_events.judge_r6)


@conformance("kip-42/client/{client}/checksum-and-sizes", "KIP-42.R7", api=ApiKey.PRODUCE)
def test_checksum_and_sizes(harness: Harness, client: Client) -> None:
    _judge(harness, client, lambda ev: java_events.judge_r7(ev, str(client)))
