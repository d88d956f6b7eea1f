"""Faults a broker can be told to have, for the project's tests of the DURABILITY requirements.

They come from the ``"faults"`` section of a broker's ``NodeConfig.settings``, which nothing
shipped writes: not ``serve``'s options, not the launcher, not the suite's targets. Only a
project test (``tests/support/faulty_reference.py``) puts them into a reference cluster's broker
configs, to show that each DURABILITY requirement fails against a broker that breaks it:

* ``ack_before_replication``: an acks=all Produce is answered once the leader has appended the
  batch, without waiting for the in-sync replicas, and the followers get each client batch only
  once the next one has come: the last acknowledged batch is lost when the leader dies;
* ``forget_log_on_start``: a broker deletes its partition logs when it starts, as if its disk
  had been replaced: records and committed offsets that only the restarted brokers held are
  gone;
* ``no_duplicate_check``: the leader forgets what it knows of a producer before each append,
  so a batch sent again is appended again;
* ``ignore_min_insync_replicas``: an acks=all Produce is taken however small the ISR is;
* ``append_refused``: an acks=all Produce refused NOT_ENOUGH_REPLICAS is appended all the same
  (the answer says refused, the log keeps and replicates the batch: DURABILITY.R7's high
  watermark and read-back checks);
* ``never_expand_isr``: a follower that caught up is never proposed back into the ISR;
* ``hide_first_batch``: a consumer's Fetch answer leaves out its first batch when it holds
  more than one (a hole in the offsets the consumer sees);
* ``forget_share_state``: the broker keeps its share partitions' state in memory only
  (``handlers/share_common.py``): what a share group acknowledged is delivered again after a
  restart (SHARE-GROUPS.R21);
* ``share_read_uncommitted``: ShareFetch reads every group as read_uncommitted, whatever its
  share.isolation.level (SHARE-GROUPS.R22).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from reference_impl.replica.config import from_section

#: a batch's base offset and length fields: its size is this plus the length
LOG_OVERHEAD = 12


@dataclass(frozen=True)
class BrokerFaults:
    ack_before_replication: bool = False
    forget_log_on_start: bool = False
    no_duplicate_check: bool = False
    ignore_min_insync_replicas: bool = False
    append_refused: bool = False
    never_expand_isr: bool = False
    hide_first_batch: bool = False
    forget_share_state: bool = False
    share_read_uncommitted: bool = False

    @classmethod
    def from_settings(cls, section: dict[str, Any] | None) -> BrokerFaults:
        values = {k: bool(v) for k, v in (section or {}).items()}
        return from_section(cls, values, "broker faults")


#: stored batches as read: the fault keeps the reader's kind (bytes stay bytes)
Batches = TypeVar("Batches", bytes, memoryview)


def without_first_batch(data: Batches) -> Batches:
    """Stored batches without the first one, when there is more than one."""
    if len(data) < LOG_OVERHEAD:
        return data
    first = LOG_OVERHEAD + int.from_bytes(bytes(data[8:LOG_OVERHEAD]), "big", signed=True)
    return data[first:] if first < len(data) else data
