"""What several DURABILITY test modules use: a group's committed offsets read back once its
coordinator serves again after the cluster restarted."""

from __future__ import annotations

import time

from conformance.protocol import ApiKey
from conformance.suite.groups.commits import fetch
from conformance.suite.groups.members import TRANSIENT, find_coordinator
from conformance.suite.kit.harness import Harness

#: how long a group's coordinator may take to serve again after the cluster restarted
COORDINATOR_BACK = 30.0


def committed_offsets(harness: Harness, group: str, topic: str) -> dict:
    """The group's committed offset of partition 0, once its coordinator answers without a
    transient error (at most COORDINATOR_BACK seconds)."""
    deadline = time.monotonic() + COORDINATOR_BACK
    while True:
        where = find_coordinator(
            harness, group, harness.pick_version(ApiKey.FIND_COORDINATOR), "DURABILITY.R5"
        )
        got = fetch(
            harness, harness.connect(where.endpoint), group, [(topic, 0)], req="DURABILITY.R5"
        )
        if not {v[2] for v in got.values()} & TRANSIENT or time.monotonic() > deadline:
            return {tp: (v[0], v[1]) for tp, v in got.items()}
        time.sleep(0.3)
