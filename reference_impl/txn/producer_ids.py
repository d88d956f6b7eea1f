"""Producer ids a broker hands out, idempotent and transactional alike.

Ids are unique across the cluster without asking anyone: a broker hands out
``node_id * 2**32 + n``, where ``n`` comes from blocks reserved in ``producer-ids`` in its data
dir (the block is written and fsynced before any id from it is given out, so a restart never
repeats an id). The transaction coordinator and InitProducerId without a transactional id share
one allocator per broker (``txn.service.service_for(node).allocator``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

BLOCK = 1000
FILE = "producer-ids"


class ProducerIdAllocator:
    def __init__(self, node_id: int, data_dir: Path) -> None:
        if not 0 <= node_id < 2**31:
            raise ValueError(f"node id {node_id} out of range for producer ids")
        self.base = node_id << 32
        self.path = Path(data_dir) / FILE
        self.next = self.limit = self._reserved()

    def _reserved(self) -> int:
        try:
            return int(json.loads(self.path.read_text())["next_block"])
        except (OSError, ValueError, KeyError, TypeError):
            return 0

    def _reserve(self) -> None:
        limit = self.limit + BLOCK
        if limit >= 2**32:
            raise RuntimeError("this broker has handed out every producer id it owns")
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as f:
            json.dump({"version": 1, "next_block": limit}, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        self.next, self.limit = self.limit, limit

    def allocate(self) -> int:
        if self.next >= self.limit:
            self._reserve()
        n = self.next
        self.next += 1
        return self.base + n
