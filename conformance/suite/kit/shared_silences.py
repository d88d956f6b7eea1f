"""What a concurrent run's processes learn of the target's unanswered requests, shared live.

A worker of a concurrent run that sees a node leave a request unanswered waits the full request
timeout for it; without this, each of the other workers waited for the same silence on its own
(a swallowed API cost ``--jobs`` full waits and ``--jobs`` times SILENT_AFTER requests). Each
process now writes what it learned (a ``Harness.knowledge`` fragment: the API and version left
unanswered, where, in which test; at each test's end, the APIs nodes answered it for the first
time) as a file of its own in a folder the run's processes share, the run's flags folder, and
reads the others' files through ``Harness.learn``: the same rules as its own records.

Reading is cheap: a ``stat`` of the folder, and a listing only when its mtime moved. A listing
taken within ``RACY_NS`` of the folder's mtime is not trusted to be complete (a file created in
the same clock tick leaves the mtime as it was), so the next read lists again.
"""

from __future__ import annotations

import json
import os
import time
from itertools import count
from pathlib import Path
from typing import Any

#: the prefix and suffix of the files written here (other files of the folder are not read)
PREFIX, SUFFIX = "silence-", ".json"
#: a listing this close to the folder's mtime may miss a file created in the same clock tick
RACY_NS = 100_000_000
#: told apart within a process (the project's tests share a folder between harnesses of one)
_INSTANCES = count()


class SharedSilences:
    """The files of one run's processes in ``folder``: ``tell`` writes one, ``news`` reads the
    others' not read yet. A folder that is gone (the run ended) reads as empty."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        me = f"{os.getpid()}.{next(_INSTANCES)}"
        self._names = (f"{PREFIX}{me}-{n}{SUFFIX}" for n in count())
        self._read: set[str] = set()
        self._mtime: int | None = None

    def tell(self, known: dict[str, Any]) -> None:
        """Written whole or not at all (renamed into place); a failure only loses the sharing."""
        name = next(self._names)
        self._read.add(name)
        part = self.folder / f".{name}.part"
        try:
            part.write_text(json.dumps(known), encoding="utf-8")
            os.replace(part, self.folder / name)
        except OSError:
            pass

    def news(self) -> list[dict[str, Any]]:
        """What the other processes wrote since the last call, in their files' name order."""
        try:
            mtime = os.stat(self.folder).st_mtime_ns
            if mtime == self._mtime:
                return []
            names = sorted(
                n
                for n in os.listdir(self.folder)
                if n.startswith(PREFIX) and n.endswith(SUFFIX) and n not in self._read
            )
        except OSError:
            return []
        self._mtime = mtime if time.time_ns() - mtime > RACY_NS else None
        out = []
        for name in names:
            try:
                out.append(json.loads((self.folder / name).read_text(encoding="utf-8")))
            except (OSError, ValueError):
                self._mtime = None  # read it again next time
                continue
            self._read.add(name)
        return out
