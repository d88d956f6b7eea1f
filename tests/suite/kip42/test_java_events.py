"""The KIP-42 judges on recorded events of a release that has the record checksum (kafka-clients
2.8.2 against the reference, ``data/kip42-java-2.8.2.jsonl``): R7 PASSes with its checksum,
FAILs when the checksums disagree and is UNSUPPORTED where the release has none. No JVM: well
under a second."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from conformance.results.verdicts import Unsupported
from conformance.suite.kip42 import java_events
from conformance.suite.kit.verify import Failed
from conformance.targets.java_client import read_events

EVENTS = read_events(Path(__file__).with_name("data") / "kip42-java-2.8.2.jsonl")


def _consumed(events: list[dict]) -> list[dict]:
    return [
        r
        for e in events
        if e["who"] == "consumer-interceptor-0" and e["call"] == "onConsume"
        for r in e["args"]["records"]
    ]


def test_the_release_has_a_checksum_and_r7_passes() -> None:
    assert all(isinstance(r["checksum"], int) for r in _consumed(EVENTS))
    java_events.judge_r7(EVENTS, "java:2.8.2")


def test_a_checksum_that_changed_on_the_way_fails_r7() -> None:
    events = copy.deepcopy(EVENTS)
    _consumed(events)[0]["checksum"] += 1
    with pytest.raises(Failed, match=r"KIP-42\.R7.*consumed with"):
        java_events.judge_r7(events, "java:2.8.2")


def test_a_size_that_changed_on_the_way_fails_r7() -> None:
    events = copy.deepcopy(EVENTS)
    _consumed(events)[0]["value_size"] += 1
    with pytest.raises(Failed, match=r"KIP-42\.R7"):
        java_events.judge_r7(events, "java:2.8.2")


def test_a_release_without_checksum_is_unsupported_on_r7() -> None:
    events = copy.deepcopy(EVENTS)
    for e in events:
        for r in e["args"].get("records") or []:
            r["checksum"] = "absent"
        if e["args"].get("metadata"):
            e["args"]["metadata"]["checksum"] = "absent"
    with pytest.raises(Unsupported, match="no checksum"):
        java_events.judge_r7(events, "java:3.9.1")


def test_the_other_requirements_on_this_release() -> None:
    for rid in ("KIP-42.R1", "KIP-42.R3", "KIP-42.R4", "KIP-42.R5", "KIP-42.R6"):
        java_events.JUDGES[rid](EVENTS)
    # a send refused before queuing (s6) calls the user's callback first, inside send(): an
    # order R2's reading accepts on that path, as every release but 3.0.x does it
    java_events.judge_r2(EVENTS)


def test_a_second_on_acknowledgement_on_the_refused_send_fails_r2() -> None:
    """kafka-clients 3.0.2: each interceptor's onAcknowledgement before and after the callback."""
    events = copy.deepcopy(EVENTS)
    at = next(
        i for i, e in enumerate(events) if e["call"] == "callback" and e["args"]["id"] == "s6"
    )
    again = copy.deepcopy([e for e in events[at + 1 : at + 4] if e["call"] == "onAcknowledgement"])
    assert len(again) == 3
    events[at:at] = again  # the same three calls once more, before the callback
    for seq, e in enumerate(events):
        e["seq"] = seq
    with pytest.raises(Failed, match=r"send s6 \(failed\): onAcknowledgement called by"):
        java_events.judge_r2(events)


def test_a_callback_before_on_acknowledgement_of_an_acknowledged_send_fails_r2() -> None:
    """The order stays judged wherever the released contract states it: a broker's answer."""
    events = copy.deepcopy(EVENTS)
    at = next(
        i for i, e in enumerate(events) if e["call"] == "callback" and e["args"]["id"] == "s5"
    )
    callback = events.pop(at)
    events.insert(at - 3, callback)  # before the three onAcknowledgement calls of s5
    for seq, e in enumerate(events):
        e["seq"] = seq
    with pytest.raises(Failed, match=r"send s5 \(acknowledged\): the user.s callback ran"):
        java_events.judge_r2(events)
