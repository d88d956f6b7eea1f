"""One share partition: the records of a topic partition as a share group delivers them (KIP-932).

Kafka keeps this on the partition's leader (``SharePartition``), its durable part with the share
coordinator. Here the state machine alone, with time passed in (no timers: an acquisition lock
past its deadline is seen as released by the next operation), so the ShareFetch and
ShareAcknowledge handlers and the tests drive the same code.

* The share-partition start offset (SPSO): records below it are done. It starts where
  ``share.auto.offset.reset`` says when the partition is first read (latest: the log end then;
  earliest: the log start) and advances over every leading record that is acknowledged or
  archived.
* Each record from the SPSO on is AVAILABLE (never delivered, or released), ACQUIRED (by one
  member, until its acquisition lock ends, ``share.record.lock.duration.ms``), ACKNOWLEDGED or
  ARCHIVED. Acquiring counts a delivery; a record delivered ``share.delivery.count.limit`` times
  that comes back (released, or its lock ended) is archived, never delivered again.
* Acknowledgement types (ShareFetch/ShareAcknowledge ``AcknowledgeTypes``): GAP 0 (the offset is
  no record), ACCEPT 1 (acknowledged), RELEASE 2 (available again, or archived at the limit),
  REJECT 3 (archived), RENEW 4 (KIP-1222, ShareFetch/ShareAcknowledge v2: the record stays
  acquired by the member and its acquisition lock starts again; refused with INVALID_RECORD_STATE
  where the group's ``share.renew.acknowledge.enable`` is false). Acknowledging a record that is
  not acquired by that member (another member's, one whose lock ended, one never delivered) is
  INVALID_RECORD_STATE and changes nothing of that batch; offsets below the SPSO are passed over
  (Kafka 4.4.0 answers NONE to an acknowledgement of records already done there).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from conformance.protocol import ErrorCode

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = "available", "acquired", "acknowledged", "archived"
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4


@dataclass
class InFlight:
    state: str = AVAILABLE
    delivery_count: int = 0
    member: str | None = None
    deadline_ms: int = 0


@dataclass
class SharePartition:
    start_offset: int
    lock_duration_ms: int = 30_000
    delivery_limit: int = 5
    #: offset -> its state, for records at or past the SPSO that were ever delivered
    records: dict[int, InFlight] = field(default_factory=dict)

    def delivery_complete(self) -> int:
        """How many records at or past the SPSO are acknowledged or archived (KIP-1226's
        DeliveryCompleteCount: a share partition's lag is the high watermark less the SPSO
        less this)."""
        return sum(r.state in (ACKNOWLEDGED, ARCHIVED) for r in self.records.values())

    def _expire(self, now_ms: int) -> None:
        for r in self.records.values():
            if r.state == ACQUIRED and r.deadline_ms <= now_ms:
                self._release(r)

    def _release(self, r: InFlight) -> None:
        r.member = None
        r.state = ARCHIVED if r.delivery_count >= self.delivery_limit else AVAILABLE

    def _advance(self) -> None:
        while self.records.get(self.start_offset, InFlight()).state in (ACKNOWLEDGED, ARCHIVED):
            del self.records[self.start_offset]
            self.start_offset += 1

    def acquire(
        self,
        member: str,
        offsets: list[int],
        max_records: int,
        now_ms: int,
        batches: list[tuple[int, int]] | None = None,
    ) -> list[tuple[int, int, int]]:
        """Acquire for ``member`` up to ``max_records`` of the record ``offsets`` the log holds
        (ascending) that are available: (first, last, delivery count) ranges. With ``batches``
        (the log batches' (base, last) offsets: KIP-1206's batch-optimized mode, Kafka's
        default) a batch once started is acquired whole, so the limit is passed to finish it;
        without, the limit is exact (record_limit)."""
        self._expire(now_ms)
        got: list[tuple[int, int, int]] = []
        taken = 0
        ends = sorted(batches or [])
        for offset in offsets:
            if taken >= max_records and not (ends and _same_batch(ends, got, offset)):
                break
            if offset < self.start_offset:
                continue
            r = self.records.setdefault(offset, InFlight())
            if r.state != AVAILABLE:
                continue
            r.state, r.member = ACQUIRED, member
            r.delivery_count += 1
            r.deadline_ms = now_ms + self.lock_duration_ms
            taken += 1
            if got and got[-1][1] == offset - 1 and got[-1][2] == r.delivery_count:
                got[-1] = (got[-1][0], offset, r.delivery_count)
            else:
                got.append((offset, offset, r.delivery_count))
        return got

    def archive(self, offsets: list[int]) -> None:
        """Records never to be delivered (a read_committed group's aborted transactions):
        archived where not delivered yet."""
        for offset in offsets:
            if offset >= self.start_offset and offset not in self.records:
                self.records[offset] = InFlight(ARCHIVED)
        self._advance()

    def acknowledge(
        self,
        member: str,
        first: int,
        last: int,
        types: list[int],
        now_ms: int,
        renew: bool = True,
    ) -> int:
        """One acknowledgement batch: ``types`` has one type for the whole range, or one per
        offset. NONE, INVALID_REQUEST (malformed) or INVALID_RECORD_STATE (nothing changed;
        also a RENEW where ``renew`` is off: the group's share.renew.acknowledge.enable)."""
        if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
            return ErrorCode.INVALID_REQUEST
        if any(t not in (GAP, ACCEPT, RELEASE, REJECT, RENEW) for t in types):
            return ErrorCode.INVALID_REQUEST
        self._expire(now_ms)
        kinds = types * (last - first + 1) if len(types) == 1 else types
        plan = list(zip(range(first, last + 1), kinds, strict=True))
        if not renew and RENEW in kinds:
            return ErrorCode.INVALID_RECORD_STATE
        for offset, kind in plan:
            r = self.records.get(offset)
            if offset < self.start_offset:
                continue  # done already: Kafka 4.4.0 answers NONE
            if kind == GAP and (r is None or r.state != ACQUIRED):
                continue
            if r is None or r.state != ACQUIRED or r.member != member:
                return ErrorCode.INVALID_RECORD_STATE
        for offset, kind in plan:
            r = self.records.get(offset)
            if r is None or r.state != ACQUIRED:
                continue
            if kind == RENEW:
                r.deadline_ms = now_ms + self.lock_duration_ms
            elif kind in (ACCEPT, GAP):
                r.state, r.member = (ACKNOWLEDGED if kind == ACCEPT else ARCHIVED), None
            elif kind == REJECT:
                r.state, r.member = ARCHIVED, None
            else:
                self._release(r)
        self._advance()
        return ErrorCode.NONE

    def release_member(self, member: str, now_ms: int) -> None:
        """The member left or its share session closed: what it holds is available again."""
        self._expire(now_ms)
        for r in self.records.values():
            if r.state == ACQUIRED and r.member == member:
                self._release(r)
        self._advance()

    def state_of(self, offset: int, now_ms: int) -> str:
        self._expire(now_ms)
        if offset < self.start_offset:
            return ARCHIVED
        r = self.records.get(offset)
        return AVAILABLE if r is None else r.state

    def to_json(self) -> dict:
        """What survives a restart: the SPSO and each in-flight record's state and delivery
        count (an acquired record comes back available: its lock died with the process)."""
        return {
            "start": self.start_offset,
            "records": {
                str(o): [AVAILABLE if r.state == ACQUIRED else r.state, r.delivery_count]
                for o, r in self.records.items()
            },
        }

    @classmethod
    def from_json(cls, d: dict) -> SharePartition:
        sp = cls(int(d["start"]))
        for o, (state, count) in d.get("records", {}).items():
            sp.records[int(o)] = InFlight(state, int(count))
        return sp


def _same_batch(ends: list[tuple[int, int]], got: list[tuple[int, int, int]], offset: int) -> bool:
    """Whether ``offset`` is in the log batch of the last record acquired (batch-optimized
    acquisition finishes a batch it started)."""
    if not got:
        return False
    last = got[-1][1]
    return any(base <= last <= end and base <= offset <= end for base, end in ends)
