"""Compiled codec units kept on disk between processes, as ``.pyc`` files keep modules.

Every reference node and suite process compiles the (message, version) units it uses, and
``compile`` of the generated source was most of a process's codec start-up: a whole run starts
about 40 processes. A unit's code object is stored under the hash of its generated source (and
the file name it carries), so an entry can never be stale, only unused. Like bytecode, entries
are written only where the interpreter may write bytecode (``PYTHONDONTWRITEBYTECODE`` unset);
``code_cache.warm()`` writes every unit of the project's specs
regardless, as ``compileall`` does (``./dev.sh setup`` runs both), and then removes the
entries no unit of the current compiler and specs uses (each change of the generated source
left a new set of about 1000 behind). A missing, unreadable or damaged entry just means
compiling, as before, so removing is safe beside running processes of another version: they
compile again what they miss; only what no current unit uses and was not written in the last
hour (:data:`PRUNE_AFTER_S`) goes.
"""

from __future__ import annotations

import hashlib
import importlib.util
import marshal
import os
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from types import CodeType

#: one folder per bytecode format, beside the package's own ``.pyc`` files
CACHE_DIR = (
    Path(__file__).resolve().parent
    / "__pycache__"
    / f"codec-units.{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}"
)
#: an unused entry (or a writer's leftover ``.tmp``) is removed once this old: one just written
#: may be a concurrent process's of another version, which would only compile it again
PRUNE_AFTER_S = 3600.0


def _entry(source: str, filename: str, folder: Path) -> Path:
    digest = hashlib.sha256(f"{filename}\0{source}".encode()).hexdigest()[:40]
    return folder / f"{digest}.code"


def load_or_compile(
    source: str, filename: str, *, folder: Path | None = None, write: bool | None = None
) -> CodeType:
    """The code object of ``source``: read from the cache, else compiled (and stored when
    ``write``, by default when bytecode may be written)."""
    folder = CACHE_DIR if folder is None else folder
    path = _entry(source, filename, folder)
    try:
        code = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        code = None
    if isinstance(code, CodeType) and code.co_filename == filename:
        return code
    code = compile(source, filename, "exec")
    if sys.dont_write_bytecode if write is None else not write:
        return code
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps(code))
        os.replace(tmp, path)
    except OSError:
        pass  # a read-only install: compile in each process, as before
    return code


def used_entries(folder: Path | None = None) -> set[Path]:
    """The entries of every unit this process has compiled or read (the compiler's table)."""
    from conformance.protocol import compiler

    folder = CACHE_DIR if folder is None else folder
    return {_entry(src, code.co_filename, folder) for src, code in compiler._CODE.items()}


def prune(folder: Path, keep: Iterable[Path], older_than: float = PRUNE_AFTER_S) -> int:
    """Remove the entries of ``folder`` not in ``keep`` (and leftover ``.tmp`` files) last
    written more than ``older_than`` seconds ago; returns how many went."""
    keep = set(keep)
    cutoff = time.time() - older_than
    gone = 0
    try:
        paths = list(folder.iterdir())
    except OSError:
        return 0
    for path in paths:
        if path in keep or path.suffix not in (".code", ".tmp"):
            continue
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                gone += 1
        except OSError:
            pass  # gone already (another pruner), or not ours to remove
    return gone


def warm() -> int:
    """Store every unit (fast and checked) of every message and version of the project's
    specs, then prune the entries none of them uses; returns how many distinct units exist."""
    from conformance.protocol import compiler
    from conformance.protocol.spec import SpecSet

    n = 0
    was, sys.dont_write_bytecode = sys.dont_write_bytecode, False
    try:
        for msg in SpecSet.load():
            for version in range(msg.valid_versions.lo, msg.valid_versions.hi + 1):
                unit = compiler.compile_message(msg, version)
                unit.decode_checked  # noqa: B018 - compiles (and stores) the checked pair
                n += 1
    finally:
        sys.dont_write_bytecode = was
    prune(CACHE_DIR, used_entries())
    return n
