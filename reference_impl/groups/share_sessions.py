"""A broker's share sessions and the share partitions it leads (KIP-932's ShareFetch and
ShareAcknowledge), as Kafka 4.4.0 answers them (probed on the wire, issue 39):

* a share session is keyed by (group, member): ShareSessionEpoch 0 opens one (replacing any),
  with the request's partitions; each later request carries the next epoch (1, 2, …), adds its
  partitions and drops ``ForgottenTopicsData``; -1 closes it (acknowledgements are still applied;
  no records). An epoch past 0 without a session is SHARE_SESSION_NOT_FOUND, a wrong one
  INVALID_SHARE_SESSION_EPOCH (ShareAcknowledge with epoch 0 too), and the epoch does not move;
* when a session closes or is replaced, what its member holds is released;
* a share partition is made the first time a session reads it, its start offset where the
  group's ``share.auto.offset.reset`` says (latest by default: the high watermark then). Kafka
  initializes it when the group coordinator first assigns the partition, so records produced
  between that and the first ShareFetch are delivered by Kafka and not by the reference.

The records and offsets come from the caller (``Log``: the partition's batches), so this module
needs no replica manager. Given a file, the share partitions' state (``SharePartition.to_json``)
is written there after each request that changed it (``save``) and read back when the broker
starts again: accepted and archived records are not delivered again after a restart, records in
flight are, with a higher delivery count. Sessions do not survive (clients open new ones).
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from conformance.protocol import ErrorCode
from reference_impl.groups.share_partition import SharePartition

TopicIdPartition = tuple[uuid.UUID, int]


@dataclass
class ShareSession:
    epoch: int = 1
    partitions: list[TopicIdPartition] = field(default_factory=list)


class ShareSessions:
    def __init__(self, now_ms: Callable[[], int], store: Path | None = None) -> None:
        self.now_ms = now_ms
        self.store = store
        self.sessions: dict[tuple[str, str], ShareSession] = {}
        self.partitions: dict[tuple[str, uuid.UUID, int], SharePartition] = {}
        if store is not None and store.exists():
            for key, state in json.loads(store.read_text()).items():
                group, tid, index = key.rsplit("|", 2)
                self.partitions[(group, uuid.UUID(tid), int(index))] = SharePartition.from_json(
                    state
                )

    def save(self) -> None:
        """Write every share partition's state to the store (atomically), if there is one."""
        if self.store is None:
            return
        state = {f"{g}|{t}|{p}": sp.to_json() for (g, t, p), sp in self.partitions.items()}
        tmp = self.store.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump(state, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.store)

    def session(
        self,
        group: str,
        member: str,
        epoch: int,
        adds: list[TopicIdPartition],
        forgets: list[TopicIdPartition],
        *,
        acknowledge: bool = False,
    ) -> tuple[int, ShareSession | None]:
        """The session a request with ``epoch`` works in (NONE), or its error; a closing
        request (-1) gets its session, already removed."""
        key = (group, member)
        if epoch == 0 and not acknowledge:
            self.close(group, member)
            fresh = self.sessions[key] = ShareSession(1, list(dict.fromkeys(adds)))
            return ErrorCode.NONE, fresh
        session = self.sessions.get(key)
        if epoch == 0:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        if session is None:
            return ErrorCode.SHARE_SESSION_NOT_FOUND, None
        if epoch == -1:
            return ErrorCode.NONE, session
        if epoch != session.epoch:
            return ErrorCode.INVALID_SHARE_SESSION_EPOCH, None
        session.epoch += 1
        session.partitions = [p for p in session.partitions if p not in forgets]
        session.partitions += [p for p in adds if p not in session.partitions]
        return ErrorCode.NONE, session

    def close(self, group: str, member: str) -> None:
        """The member's session ends: what it holds in the group's partitions is released."""
        if self.sessions.pop((group, member), None) is None:
            return
        now = self.now_ms()
        for (g, _t, _p), sp in self.partitions.items():
            if g == group:
                sp.release_member(member, now)

    def partition(
        self,
        group: str,
        tp: TopicIdPartition,
        start: Callable[[], int],
        lock_duration_ms: int,
        delivery_limit: int,
    ) -> SharePartition:
        """The group's share partition (made at ``start()`` the first time); its lock duration
        and delivery limit follow the group's configs."""
        key = (group, *tp)
        sp = self.partitions.get(key)
        if sp is None:
            sp = self.partitions[key] = SharePartition(start())
        sp.lock_duration_ms, sp.delivery_limit = lock_duration_ms, delivery_limit
        return sp
