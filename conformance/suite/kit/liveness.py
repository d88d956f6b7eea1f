"""Whether the target is still up, asked after a test that failed or sent malformed input.

A target is down when a bootstrap endpoint refuses connections, or closes a new connection
without answering ApiVersions (what a crashed process, or one that drops every connection at
once, looks like). A target that accepts and answers slowly is not down here: its requests time
out in the tests themselves. Each probe is retried a few times, a short pause apart, so that a
blip (a listener restarting) is not taken for a crash; the whole probe is bounded in time.
"""

from __future__ import annotations

import asyncio
import time

from conformance.client.wire import Connection
from conformance.protocol import ApiKey, DecodeError
from conformance.suite.kit.harness import Harness
from conformance.targets.base import Endpoint

#: seconds a probe waits for a connection, then for the ApiVersions answer
PROBE_TIMEOUT = 5.0
#: probes before the target is declared down, and the pause between them
ATTEMPTS = 3
PAUSE = 0.5


def down(harness: Harness) -> str | None:
    """Why the target is down (which endpoint, what it did), or None while it serves."""
    why: str | None = None
    for attempt in range(ATTEMPTS):
        why = next(filter(None, (_probe(harness, ep) for ep in harness.target.bootstrap)), None)
        if why is None:
            return None
        if attempt + 1 < ATTEMPTS:
            time.sleep(PAUSE)
    return why


def _probe(harness: Harness, ep: Endpoint) -> str | None:
    lo, hi = harness.advertised.get(ApiKey.API_VERSIONS, (0, 0))
    version = max(lo, min(3, hi))

    async def probe() -> str | None:
        try:
            conn = await Connection.open(
                ep.host, ep.port, codec=harness.codec, timeout=PROBE_TIMEOUT
            )
        except TimeoutError:
            return None  # slow, not down
        except ConnectionRefusedError:
            return f"{ep} refuses connections"
        except OSError as e:
            return f"{ep} cannot be connected to ({e.strerror or type(e).__name__})"
        try:
            await conn.api_versions(version, timeout=PROBE_TIMEOUT)
        except (TimeoutError, DecodeError):
            return None  # it holds the connection, or answered something: not down
        except (ConnectionError, OSError, asyncio.IncompleteReadError):
            return f"{ep} closes new connections without answering ApiVersions v{version}"
        finally:
            await conn.close()
        return None

    return harness.call(probe(), timeout=3 * PROBE_TIMEOUT)
