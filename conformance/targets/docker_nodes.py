"""The node processes inside one container that runs several of them (the reference image: a
controller and three brokers under ``kafka-conformance serve``), reached with ``docker exec``.

A node's process is the one listening on its port (``/proc/net/tcp`` inside the container), so
no profile has to say how its image names its processes. Before the suite kills a node it keeps
the process's command line, working folder, environment and log file; starting the node again
runs that command line again in the container (its data and ports are the same), with stdin a
pipe nobody closes, as a supervisor's pipe (a node may stop when its stdin ends), and its output
appended to the same log. The helpers run the image's ``python3``: such an image has one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from conformance.targets.base import TargetError

#: prints, as JSON, the process listening on TCP port argv[1] (IPv4 or IPv6): pid, command line,
#: working folder, environment and what its stdout is ({} when nobody listens there)
FIND = r"""
import json, os, sys
port = int(sys.argv[1])
inodes = set()
for table in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        rows = open(table).read().splitlines()[1:]
    except OSError:
        continue
    for row in rows:
        f = row.split()
        if f[3] == "0A" and int(f[1].rsplit(":", 1)[1], 16) == port:
            inodes.add(f[9])
found = {}
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
        links = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in fds}
    except OSError:
        continue
    if any(f"socket:[{i}]" in links for i in inodes):
        raw = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        args = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")[:-1]
        found = {
            "pid": int(pid),
            "argv": [a.decode() for a in args],
            "cwd": os.readlink(f"/proc/{pid}/cwd"),
            "env": dict(e.decode().split("=", 1) for e in raw if b"=" in e),
            "out": os.readlink(f"/proc/{pid}/fd/1"),
        }
        break
print(json.dumps(found))
"""

#: the state letter of process argv[1] (R, S, T, Z ...; "gone" when there is none)
STATE = r"""
import sys
try:
    print(open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")", 1)[1].split()[0])
except OSError:
    print("gone")
"""


@dataclass
class NodeProcess:
    """How a node's process ran, kept to start it again the same way."""

    pid: int
    argv: list[str]
    cwd: str
    env: dict[str, str]
    out: str

    def relaunch_command(self) -> list[str]:
        """A shell that runs the node's command line with stdin a pipe that stays open and its
        output appended to its log (or dropped when it was not a file)."""
        out = self.out if self.out.startswith("/") else "/dev/null"
        script = 'out="$1"; shift; sleep 2147483647 | exec "$@" >>"$out" 2>&1'
        return ["/bin/sh", "-c", script, "sh", out, *self.argv]


def _exec(container: Any, cmd: list[str]) -> str:
    code, output = container.exec_run(cmd, stdout=True, stderr=True)
    text = output.decode(errors="replace") if output else ""
    if code != 0:
        raise TargetError(f"docker exec {cmd[:3]} in {container.name} failed ({code}): {text}")
    return text


def find(container: Any, port: int) -> NodeProcess | None:
    """The process listening on ``port`` in the container (None: nobody listens there)."""
    found = json.loads(_exec(container, ["python3", "-c", FIND, str(port)]) or "{}")
    return NodeProcess(**found) if found else None


def state(container: Any, pid: int) -> str:
    """The process's state letter (Z: dead, not yet reaped), or "gone"."""
    return _exec(container, ["python3", "-c", STATE, str(pid)]).strip()


def send(container: Any, pid: int, sig: int) -> None:
    """``kill -SIG pid`` inside the container."""
    _exec(container, ["/bin/sh", "-c", f"kill -{int(sig)} {int(pid)}"])


def relaunch(container: Any, proc: NodeProcess) -> None:
    """Run the node's command line again, detached, in its folder and environment."""
    container.exec_run(proc.relaunch_command(), detach=True, environment=proc.env, workdir=proc.cwd)
