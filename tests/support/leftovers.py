"""What a command leaves running when it is SIGTERMed: ``python -m tests.support.leftovers
MARKER CWD CMD...`` starts CMD in CWD, SIGTERMs it once a process among its descendants has
MARKER in its command line (its target is starting), waits for it, and prints JSON: when it was
signalled, its exit code, and the command lines of every process it left (this process is a
child subreaper, PR_SET_CHILD_SUBREAPER, so what CMD's processes orphaned becomes its own),
which it then SIGKILLs by pid. Run in a process of its own: a subreaper adopts every orphan."""

from __future__ import annotations

import ctypes
import json
import os
import signal
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
#: how long CMD may take to start what MARKER names, and to stop after SIGTERM
WITHIN = 120.0


def processes() -> dict[int, tuple[int, str, str]]:
    """pid -> (parent pid, state, command line) of every process /proc shows."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        out[int(name)] = (int(fields[1]), fields[0], cmd)
    return out


def descendants(root: int) -> dict[int, str]:
    """pid -> command line of every live (not zombie) process below ``root``."""
    every = processes()
    found: set[int] = set()
    frontier = {root}
    while frontier:
        frontier = {p for p, (pp, _, _) in every.items() if pp in frontier and p not in found}
        found |= frontier
    return {p: every[p][2] for p in found if p in every and every[p][1] != "Z"}


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def main(marker: str, cwd: str, cmd: list[str]) -> dict:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    seen: dict[int, str] = {}
    while time.monotonic() - started < WITHIN and proc.poll() is None:
        seen = descendants(proc.pid)
        if any(marker in c for c in seen.values()):
            break
        time.sleep(0.05)
    signalled = time.monotonic() - started
    os.kill(proc.pid, signal.SIGTERM)
    try:
        code: int | None = proc.wait(WITHIN)
    except subprocess.TimeoutExpired:
        code = None
    deadline = time.monotonic() + 5  # orphans still stopping after CMD ended
    while True:
        reap()
        left = descendants(os.getpid())
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for pid in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    reap()
    return {
        "signalled_after": round(signalled, 1),
        "seen": sorted(seen.values()),
        "exit": code,
        "left": sorted(left.values()),
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2], sys.argv[3:])))
