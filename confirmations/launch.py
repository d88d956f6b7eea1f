"""What the Apache Kafka confirmations share: one target per version named on the command line,
started outside the event loop (the target waits for its brokers with an asyncio.run of its own),
the confirmation run against it, the target stopped by its pids."""

import asyncio
import sys
from collections.abc import Awaitable, Callable

from conformance.targets.kafka import KafkaTarget


def each_version(confirm: Callable[[str, KafkaTarget], Awaitable[None]], query: str = "") -> None:
    """``confirm(version, target)`` for each version in ``sys.argv`` (3.9.1 if none);
    ``query`` is the target's options, e.g. ``?store=zookeeper``."""
    for version in sys.argv[1:] or ["3.9.1"]:
        target = KafkaTarget.from_spec(version + query)
        target.start()
        try:
            asyncio.run(confirm(version, target))
        finally:
            target.stop()


def each_target(confirm: Callable[[KafkaTarget], Awaitable[None]]) -> None:
    """``confirm(target)`` for each target spec in ``sys.argv`` (``3.9.1`` if none), e.g.
    ``'3.9.1?store=zookeeper'``, with a blank line after each."""
    for spec in sys.argv[1:] or ["3.9.1"]:
        target = KafkaTarget.from_spec(spec)
        target.start()
        try:
            asyncio.run(confirm(target))
        finally:
            target.stop()
        print()
