"""A class-data-sharing archive per Kafka release and Java: a node's JVM starts on about half
the CPU (issue 36).

A Kafka node's JVM spends most of its start loading and verifying the same few thousand classes
from the release's jars: a 4.4.0 broker used 1.7-1.9 CPU-s before it listened, 1.0 with the
archive (benchmarks/README.md, session 14). A run starts many (its cluster, each side run's,
every restart of a durability scenario), on two cores shared with the suite. Java 13 and later
write the classes a process loaded into an archive when it exits (``-XX:ArchiveClassesAtExit``)
and map them at the next start (``-XX:SharedArchiveFile``). The archive is kept beside the
release's jars in the cache, one per Java build (its name holds a digest of the JVM's files); a
JVM that cannot use it (changed jars, another classpath) starts as without one, which is Java's
default (``-Xshare:auto``). Only class loading changes: the same classes, the same behaviour.

The first node started while there is no archive writes one when it stops of itself (SIGTERM:
a node killed with SIGKILL writes nothing), into a file of its own that is then renamed into
place, so runs writing at once do not mix their files (the last rename stays).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

#: the archive's name beside the release's ``libs`` folder: ``classes-<digest>.jsa``
PREFIX = "classes-"


def java_digest(java: str) -> str:
    """Names the Java build: its launcher's and JVM library's real paths, sizes and times."""
    launcher = Path(os.path.realpath(java))
    parts = []
    for path in (launcher, launcher.parent.parent / "lib" / "server" / "libjvm.so"):
        try:
            st = path.stat()
        except OSError:
            continue
        parts.append(f"{path}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ClassArchive:
    """The archive of one release's jars for one Java build."""

    path: Path

    def options(self) -> tuple[str, ...]:
        """JVM options that map the archive, where there is one."""
        return (f"-XX:SharedArchiveFile={self.path}",) if self.path.is_file() else ()

    def writer(self, tag: str) -> Path | None:
        """Where a node writes the archive when it stops (None: there is one already)."""
        if self.path.is_file():
            return None
        return self.path.with_name(f"{self.path.stem}.{os.getpid()}-{tag}.tmp")

    def keep(self, written: Path | None, proc: subprocess.Popen | None) -> None:
        """Put what a node wrote into place once it exited of itself; else drop it."""
        if written is None:
            return
        finished = proc is not None and proc.poll() is not None and proc.returncode >= 0
        try:
            if finished and written.is_file() and written.stat().st_size > 0:
                os.replace(written, self.path)
        except OSError:
            pass
        written.unlink(missing_ok=True)


def class_archive(classpath: str, java: str) -> ClassArchive:
    """The archive of the jars of ``classpath`` (``<release>/libs/*``) for ``java``."""
    libs = Path(classpath).parent
    return ClassArchive(libs.parent / f"{PREFIX}{java_digest(shutil.which(java) or java)}.jsa")
