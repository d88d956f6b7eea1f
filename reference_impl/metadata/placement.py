"""Where replicas go and who leads: replica assignment and leader/ISR reconciliation.

Assignment is Kafka's rack-unaware spread: the first replica of each partition round-robins
over the brokers from a random start, the others follow at a shift that moves every full round.

``reconcile`` re-derives every partition's leader and ISR from the brokers' states: only Online
brokers lead; Fenced, Offline and unregistered brokers leave the ISR (its last member stays, so
that the partition can come back without an unclean election); a Stopping broker stays in the
ISR and keeps leading only where no Online member of the ISR can take over (Kafka's controlled
shutdown leaves such partitions where they are).
"""

from __future__ import annotations

import random
from typing import Any

from reference_impl.broker_state import BrokerState
from reference_impl.metadata.image import MetadataImage, Partition


def assign_replicas(
    brokers: list[int], partitions: int, replication_factor: int, first_partition: int = 0
) -> list[list[int]]:
    n = len(brokers)
    if n == 0 or not 0 < replication_factor <= n:
        raise ValueError(f"replication factor {replication_factor} with {n} available brokers")
    brokers = sorted(brokers)
    start = random.randrange(n)
    shift = random.randrange(n)
    out = []
    for p in range(first_partition, first_partition + partitions):
        if p > 0 and p % n == 0:
            shift += 1
        first = (p + start) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
        out.append(replicas)
    return out


def new_partition(replicas: list[int]) -> Partition:
    return Partition(list(replicas), list(replicas), replicas[0], 0, 0)


def reconcile(image: MetadataImage, unclean: bool = False) -> list[dict[str, Any]]:
    """Partition records that bring leaders and ISRs in line with the brokers' states.

    ``unclean`` is a test-only fault (a controller's ``settings["faults"]``, which nothing
    shipped writes): a partition whose ISR has no Online member is given the first Online
    replica as leader and sole ISR member, losing what only the ISR held (unclean election)."""
    states = {b: r.state for b, r in image.brokers.items()}

    def leads(b: int) -> bool:
        return states.get(b) == BrokerState.ONLINE

    def stays_in_isr(b: int) -> bool:
        return states.get(b) in (BrokerState.ONLINE, BrokerState.STOPPING)

    records = []
    for name, topic in sorted(image.topics.items()):
        for index, p in sorted(topic.partitions.items()):
            isr = [b for b in p.isr if stays_in_isr(b)] or p.isr[-1:]
            if p.leader in isr and leads(p.leader):
                leader = p.leader
            else:
                leader = next((b for b in isr if leads(b)), -1)
                if (
                    leader == -1
                    and p.leader in isr
                    and states.get(p.leader) == BrokerState.STOPPING
                ):
                    leader = p.leader
                if leader == -1 and unclean:
                    leader = next((b for b in p.replicas if leads(b)), -1)
                    isr = [leader] if leader != -1 else isr
            if leader == p.leader and isr == p.isr:
                continue
            changed = Partition(
                p.replicas,
                isr,
                leader,
                p.leader_epoch + (1 if leader != p.leader else 0),
                p.partition_epoch + 1,
            )
            records.append(changed.record(name, index))
    return records


def led_by(image: MetadataImage, broker_id: int) -> list[tuple[str, int]]:
    return [
        (name, index)
        for name, topic in sorted(image.topics.items())
        for index, p in sorted(topic.partitions.items())
        if p.leader == broker_id
    ]
