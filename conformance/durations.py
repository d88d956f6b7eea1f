"""How long the suite's long tests take, so that a concurrent run starts them early (issue 36).

A concurrent run's wall time ends with its slowest process. Its disruptive tests are claimed by
the side runs and the controller (``conformance.side_runs``) the longest first, so that what is
left at the end is short; its workers are handed the other tests one at a time in an order where
the long ones (mostly waits: group sessions, rebalances, share deliveries) start early and beside
the short ones, at most half of the workers on a long test at once (``dispatch_order``), so that
neither the waits pile up at the end of the phase nor leave the CPU idle together.

The figures are a guess, not a bound: a wrong one costs time, never a verdict (each test runs
once, whatever its place). They come from whole ``--jobs auto`` runs on the 2-core machine
(``EXPECTED_S``'s comment says which).
"""

from __future__ import annotations

import heapq

#: seconds a test took on the reference and on ``kafka:4.4.0`` in whole ``--jobs auto`` runs: the
#: reference's from the lead's (session 15 at d655ab9, /tmp/lead15/res-*) and, for the disruptive
#: ones, F's quiet run with D's shorter DURABILITY waits and the 2 s broker session (10:17);
#: Kafka's the mean of two whole runs at 2a8d9ea (session 16: the lead's quiet one at 11:37, F's at
#: load 6-14 at 12:00). add-partitions-to-txn v5 waits its request timeout (10 s) on Kafka unless
#: v4 ran in the same process before it (its harness remembers the request unanswered): with
#: tests handed out one at a time they run in different workers. Tests taking under a second
#: on both are left out (``SHORT_S``), but the disruptive ones (their claim order).
EXPECTED_S: dict[str, tuple[float, float]] = {
    # disruptive (the side runs and the controller claim them the longest first)
    "durability/unclean-election/off-by-default": (6.9, 12.4),
    "durability/leader-pause/sigstop": (5.4, 6.2),
    "durability/controller-kill/failover-after": (4.6, 13.6),
    "durability/leader-kill/idempotent-producer": (4.0, 9.2),
    "durability/follower-kill/isr-shrinks-and-grows": (4.1, 9.8),
    "share-groups/restart/acknowledged-stay-done": (4.6, 6.6),
    "durability/state-machine": (3.5, 7.8),
    "durability/min-isr/not-enough-replicas": (3.5, 6.8),
    "broker-registration/lifecycle/fenced-on-missed-heartbeats": (2.2, 3.4),
    "durability/cluster-kill/restart": (2.3, 8.8),
    "broker-registration/lifecycle/state-machine": (0.4, 2.4),
    "offsets/commit-fetch/survive-restart": (1.5, 4.7),
    "kip-536/restart/later": (1.3, 0.0),
    "kip-78/metadata/v2+/cluster-id/survives-restart": (1.2, 3.6),
    "broker-registration/lifecycle/fenced-absent-from-client-metadata": (0.1, 0.4),
    # the workers' (handed out in ``dispatch_order``)
    "consumer-groups/heartbeat/regex-new-topic": (1.0, 11.1),
    "protocol/spec/add-partitions-to-txn/v4/well-formed": (0.1, 10.6),
    "protocol/spec/add-partitions-to-txn/v5/well-formed": (0.1, 10.0),
    "share-groups/consumers/state-machine": (5.7, 8.7),
    "kip-590/routing/state-machine": (1.4, 3.7),
    "share-groups/fetch/auto-offset-reset": (4.0, 4.6),
    "share-groups/acknowledge/accept-release-reject": (2.5, 3.1),
    "share-groups/isolation/read-committed": (3.3, 4.1),
    "txn/producers/state-machine": (2.4, 4.8),
    "log/partition/state-machine": (0.7, 3.1),
    "consumer-groups/heartbeat/server-assignor": (3.2, 3.7),
    "share-groups/admin/start-offset": (1.3, 3.8),
    "consumer-groups/heartbeat/rebalance-timeout": (3.1, 3.5),
    "consumer-groups/heartbeat/session-timeout": (2.8, 3.0),
    "consumer-groups/members/state-machine": (1.7, 2.3),
    "share-groups/heartbeat/session-timeout": (2.6, 3.0),
    "share-groups/acknowledge/delivery-limit": (2.2, 2.7),
    "share-groups/admin/offsets": (0.1, 2.2),
    "consumer-groups/heartbeat/join-reconcile-leave": (2.4, 2.3),
    "share-groups/heartbeat/join-share-leave": (2.5, 2.6),
    "kip-42/producer/send-errors": (0.9, 1.5),
    "txn/timeout/aborted": (1.9, 1.9),
    "topics/admin/state-machine": (0.3, 1.0),
    "txn/v2/end-txn/epoch-bump": (0.7, 1.2),
    "share-groups/fetch/acquisition": (1.6, 1.7),
    "share-groups/acknowledge/renew": (1.6, 1.8),
    "share-groups/fetch/session-epochs": (1.3, 1.3),
    "consumer-groups/migration/classic-member": (1.3, 1.5),
    "share-groups/fetch/record-limit": (1.3, 1.4),
    "consumer-groups/heartbeat/new-partitions": (1.1, 1.4),
    "groups/membership/session-expiry": (1.0, 1.2),
}
#: ``EXPECTED_S``'s column by target kind (other kinds: the reference's)
COLUMN = {"reference": 0, "kafka": 1}
#: what a test not listed is taken to take (the workers' other tests' mean in those runs)
SHORT_S = (0.05, 0.13)
#: a test expected to take at least this long is a long one for ``dispatch_order``
LONG_S = 1.0


def _column(kind: str) -> int:
    return COLUMN.get(kind.partition("?")[0].partition(":")[0], 0)


def expected(test_id: str, kind: str) -> float:
    """How long ``test_id`` is expected to take on the target ``kind``."""
    column = _column(kind)
    listed = EXPECTED_S.get(test_id)
    return SHORT_S[column] if listed is None else listed[column]


def longest_first(ids: list[str], kind: str) -> list[int]:
    """The positions of ``ids`` (collected order), the longest expected on ``kind`` first,
    the others (not listed) in the collected order."""
    column = _column(kind)
    return sorted(range(len(ids)), key=lambda n: -EXPECTED_S.get(ids[n], (0.0, 0.0))[column])


def dispatch_order(ids: list[str], kind: str, workers: int) -> list[int]:
    """The positions of ``ids`` (collected order) in the order ``workers`` processes that each
    take the next test when free are handed them: a free worker takes the longest long test
    (``LONG_S``) left while fewer than half of the workers (at least one) run one, else the next
    short test in the collected order; by the expected durations, so the same on every worker."""
    span = [expected(t, kind) for t in ids]
    long = [n for n in longest_first(ids, kind) if span[n] >= LONG_S]
    chosen = set(long)
    short = [n for n in range(len(ids)) if n not in chosen]
    at_once = max(1, workers // 2)
    free = [(0.0, w) for w in range(max(1, workers))]  # (free at, worker)
    running: list[float] = []  # when the long tests running end
    order: list[int] = []
    li = si = 0
    while li < len(long) or si < len(short):
        now, worker = heapq.heappop(free)
        running = [end for end in running if end > now]
        if li < len(long) and (len(running) < at_once or si == len(short)):
            n, li = long[li], li + 1
            running.append(now + span[n])
        else:
            n, si = short[si], si + 1
        order.append(n)
        heapq.heappush(free, (now + span[n], worker))
    return order
