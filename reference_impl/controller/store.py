"""The metadata store interface, and the embedded store: the controller's own metadata log.

The controller is the only writer. It assigns each record an offset (the image's offset + 1, in
order), applies a batch to a copy of its image, asks the store to persist the batch, and only
then adopts the copy, so a batch the store refuses changes nothing.

``embedded``: ``metadata.log`` in the controller's data dir, one JSON line per batch
(``{"records": [...]}``), appended and fsynced before the batch counts; replayed on start. A
torn last line (the process was killed mid-write) is cut off on replay: that batch never
counted, since nobody was answered before its fsync.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import Any

from reference_impl import cluster_id as kip78
from reference_impl.config import NodeConfig
from reference_impl.metadata.image import MetadataImage

log = logging.getLogger(__name__)


class StoreFenced(Exception):
    """This controller may no longer write: another controller is active (ZooKeeper mode)."""


class MetadataStore(ABC):
    #: called (from the event loop) when this controller stops being the active one
    on_resign: Callable[[], None] = staticmethod(lambda: None)

    @abstractmethod
    async def open(self) -> None:
        """Connect / open files."""

    @abstractmethod
    async def cluster_id(self) -> str:
        """KIP-78 get-or-generate: the cluster's id, created if absent (one winner in a race)."""

    @abstractmethod
    async def become_active(self) -> int:
        """Wait until this controller is the active one; returns the new controller epoch."""

    @abstractmethod
    async def load(self) -> MetadataImage:
        """The current metadata (called once active)."""

    @abstractmethod
    async def append(self, records: list[dict[str, Any]], after: MetadataImage) -> None:
        """Persist ``records`` (``after`` is the image with them applied). Raises StoreFenced."""

    @abstractmethod
    async def close(self) -> None:
        """Release the store (ephemeral registrations disappear)."""


class EmbeddedStore(MetadataStore):
    def __init__(self, config: NodeConfig) -> None:
        self.data_dir = Path(config.data_dir)
        self.path = self.data_dir / "metadata.log"
        self.node_id = config.node_id
        self._image: MetadataImage | None = None
        self._file: Any = None

    async def open(self) -> None:
        self._image = self._replay()
        self._file = open(self.path, "ab")

    def _replay(self) -> MetadataImage:
        image = MetadataImage()
        if not self.path.exists():
            return image
        data = self.path.read_bytes()
        good = 0
        offset = -1
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            try:
                batch = json.loads(line)["records"]
                trial = image.copy() if len(batch) > 1 else image
                for record in batch:
                    trial.apply(record, offset + 1)
                    offset += 1
                image = trial
            except (ValueError, KeyError, TypeError) as e:
                log.warning(
                    "metadata.log: bad batch at byte %d (%s); cutting the log there", good, e
                )
                break
            good += len(line)
        if good < len(data):
            log.warning("metadata.log: cutting %d torn bytes at the end", len(data) - good)
            with open(self.path, "r+b") as f:
                f.truncate(good)
                f.flush()
                os.fsync(f.fileno())
        log.info("metadata.log: replayed %d records", offset + 1)
        return image

    async def cluster_id(self) -> str:
        assert self._image is not None
        if self._image.cluster_id is not None:
            return self._image.cluster_id
        # a log that lost its beginning keeps the id the node already stored (immutable)
        stored = kip78.read_meta_properties(self.data_dir).get("cluster.id")
        new_id = stored or kip78.generate()
        after = self._image.copy()
        record = {"type": "cluster_id", "cluster_id": new_id}
        after.apply(record, self._image.offset + 1)
        await self.append([record], after)
        self._image = after
        return new_id

    async def become_active(self) -> int:
        assert self._image is not None
        epoch = self._image.controller_epoch + 1
        after = self._image.copy()
        record = {"type": "controller_epoch", "epoch": epoch}
        after.apply(record, self._image.offset + 1)
        await self.append([record], after)
        self._image = after
        return epoch

    async def load(self) -> MetadataImage:
        assert self._image is not None
        return self._image.copy()

    async def append(self, records: list[dict[str, Any]], after: MetadataImage) -> None:
        line = json.dumps({"records": records}, separators=(",", ":")).encode() + b"\n"
        await asyncio.to_thread(self._write, line)

    def _write(self, line: bytes) -> None:
        self._file.write(line)
        self._file.flush()
        os.fsync(self._file.fileno())

    async def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
