"""What several OFFSETS test modules use: the topics a test commits offsets on."""

from __future__ import annotations

from conformance.suite.kit.harness import Harness
from conformance.suite.kit.provision import Topics

#: partitions of each topic where the suite creates it (auto-created or given topics have
#: what they have: the tests use every partition there is)
PARTITIONS = 3


def two_topics(harness: Harness) -> Topics:
    """Two topics for the test (``with two_topics(harness) as topics``)."""
    return Topics(harness, "offsets", count=2, partitions=1, prefer=PARTITIONS)


def every_partition(topics: Topics) -> list[tuple[str, int]]:
    return [(t.name, p) for t in topics.obtained for p in range(t.partitions)]
