"""What the suite runs against: endpoints, how to start and stop it, what it lets the suite do.

A target is started once per run. ``reference``, ``tansu`` and ``docker`` start processes (and
stop them by pid or container id); ``external`` only names endpoints somebody else runs.
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

#: Listener types of a broker's client listener when the target does not say which it is: a
#: ZooKeeper-mode broker (zkBroker) or a KRaft broker (broker) both serve clients there.
CLIENT_LISTENER_TYPES = ("zkBroker", "broker")

_HOST_PORT = re.compile(
    r"^(?:\[(?P<v6>[0-9A-Fa-f:.]+)\]|(?P<host>[A-Za-z0-9._-]+)):(?P<port>\d{1,5})$"
)


#: why the suite injects no fault into a target it does not run (an external one)
CANNOT_STOP = "the suite cannot stop the target's brokers"


class TargetError(Exception):
    """The target cannot be used (bad address, unreachable, missing engine): one clear line."""


@dataclass(frozen=True)
class Endpoint:
    host: str
    port: int

    def __str__(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"


def parse_endpoint(text: str, what: str = "address") -> Endpoint:
    """``HOST:PORT`` (or ``[v6]:PORT``) to an Endpoint; TargetError names what was malformed."""
    m = _HOST_PORT.match(text.strip()) if text else None
    if m is None:
        raise TargetError(f"malformed {what} {text!r}: expected HOST:PORT")
    port = int(m.group("port"))
    if not 0 < port < 65536:
        raise TargetError(f"malformed {what} {text!r}: port {port} out of range 1-65535")
    return Endpoint(m.group("v6") or m.group("host"), port)


def parse_bootstrap(text: str, what: str = "bootstrap server") -> list[Endpoint]:
    """A comma-separated bootstrap list."""
    parts = [p for p in text.split(",") if p.strip()] if text else []
    if not parts:
        raise TargetError(f"malformed {what} {text or ''!r}: expected HOST:PORT[,HOST:PORT...]")
    return [parse_endpoint(p, what) for p in parts]


_ZK = re.compile(r"^(?P<hosts>[^/]+)(?P<chroot>/.*)?$")


def parse_zookeeper(text: str) -> str:
    """``H:P[,H:P...][/chroot]`` checked and returned as kazoo takes it."""
    m = _ZK.match(text.strip()) if text else None
    if m is None:
        raise TargetError(f"malformed ZooKeeper connect string {text!r}: expected H:P[/chroot]")
    for part in m.group("hosts").split(","):
        parse_endpoint(part, "ZooKeeper address")
    return text.strip()


def wait_listening(ep: Endpoint, timeout: float) -> bool:
    """True once a TCP connection to ``ep`` succeeds within ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((ep.host, ep.port), timeout=1.0):
                return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.02)


def metadata_brokers(ep: Endpoint, timeout: float, sasl: Sasl | None = None) -> int:
    """How many brokers a Metadata request on ``ep`` lists (0 when it is not answered);
    authenticated first when ``sasl`` is given."""
    from conformance.client.metadata import ClusterMetadata

    async def probe() -> int:
        meta = ClusterMetadata(str(ep), request_timeout=timeout, sasl=sasl)
        try:
            await meta.start()
            return len(meta.brokers)
        finally:
            await meta.close()

    try:
        return asyncio.run(asyncio.wait_for(probe(), timeout))
    except Exception:  # not serving yet, whatever the way: the caller waits and asks again
        return 0


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (another user's counts), for files named after one."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


#: Linux's prctl option: the signal a process gets when the thread that forked it ends
PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In a child before exec (``preexec_fn``): SIGKILL it when the thread that started it
    ends, so that a run killed without stopping its target (SIGKILL, an OOM) leaves it no
    process; the thread must live as long as the process (a run's target-starting thread
    does, ``plugin._Opening``)."""
    import ctypes

    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except OSError:
        pass


def stop_process(proc: subprocess.Popen | None, timeout: float = 10.0) -> None:
    """SIGTERM ``proc`` by its pid, SIGKILL it if it has not exited within ``timeout``."""
    if proc is None or proc.poll() is not None:
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)


@dataclass(frozen=True)
class Sasl:
    mechanism: str
    username: str
    password: str


#: ``security=sasl`` (the reference's and Kafka's): sessions of this one mechanism last this
#: long and are re-authenticated (KIP-368, Kafka's listener.name.L.M.connections.max.reauth.ms);
#: the suite logs in with PLAIN and the nodes with PLAIN or SCRAM-SHA-512, whose sessions do not
#: expire, so only SECURITY.R15's connections meet the lifetime
REAUTH_MECHANISM, REAUTH_MS = "SCRAM-SHA-256", 4000


@dataclass
class Target:
    """Endpoints and facts of a running target; subclasses start and stop it."""

    kind: str = "external"
    name: str = "external"
    version: str = "unknown"
    bootstrap: list[Endpoint] = field(default_factory=list)
    #: the active controller's listener, where the suite connects as a broker principal
    controller: Endpoint | None = None
    #: every controller listener the target names, the active one first (several where it runs
    #: standby controllers: there an Envelope must be answered NOT_CONTROLLER)
    controllers: list[Endpoint] = field(default_factory=list)
    zookeeper: str | None = None
    sasl: Sasl | None = None
    #: where the suite authenticates (``sasl``): a principal with no ACL and no super user
    #: rights, for the authorization requirements (None: the target names none)
    unprivileged: Sasl | None = None
    #: the spec listener types (zkBroker, broker, controller) of the client listener
    client_listener_types: tuple[str, ...] = CLIENT_LISTENER_TYPES
    #: node id -> endpoint of each broker the suite can restart (empty: none)
    restartable: dict[int, Endpoint] = field(default_factory=dict)
    #: a controller listener on which the suite connects as a client principal (no
    #: ClusterAction), where the target has one: there a client's Envelope must be refused
    controller_client: Endpoint | None = None
    #: node id -> (ms before its process was spawned, ms once it served clients) for each
    #: broker the target started: what its start time (KIP-536) must lie between
    started: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: where the target leaves the logs of a start that failed: the run's results folder (None:
    #: the temporary folder); the error names the file
    logs_dir: Path | None = None
    #: the endpoint fields the user named (``controller``, ``zookeeper``): a restart keeps them,
    #: and forgets those :meth:`start` found, which the new processes serve elsewhere
    given: frozenset[str] = frozenset()
    #: seconds within which the target, as the suite started it, notices a dead or frozen node
    #: (fences the broker, moves its leaderships, drops it from the ISR): its test-run settings
    #: (broker session, ZooKeeper session, replica lag). None where the suite does not set them
    #: (an external target, an image profile's own settings): the DURABILITY scenarios then
    #: bound their waits by Kafka's defaults
    failure_detection_s: float | None = None

    def prepare(self) -> None:
        """Check (and fetch) what :meth:`start` will need, before any test is collected, so
        that a missing engine or release is one line at once (TargetError)."""

    def start(self) -> None:
        """Start what the target runs (nothing for an external one)."""

    def stop(self) -> None:
        """Stop everything :meth:`start` started."""

    def restart_broker(self, node_id: int) -> None:
        """Restart one broker and return once it serves again."""
        raise TargetError(f"the {self.kind} target cannot restart broker {node_id}")

    # --- faults (the DURABILITY feature): signals to the processes the suite runs -------------

    def fault_nodes(self, role: str = "broker") -> list[int]:
        """Node ids of the ``role`` processes ("broker" or "controller") the suite can signal
        and start again (none: the suite cannot inject faults into this target)."""
        return []

    def signal_node(self, node_id: int, sig: int) -> None:
        """Send ``sig`` to a node's process: SIGKILL (and wait until it is gone), SIGSTOP,
        SIGCONT. TargetError where the suite does not run the node."""
        raise TargetError(CANNOT_STOP)

    def start_node(self, node_id: int) -> None:
        """Start again a node that was killed, on its data and ports; return once it listens
        (whether it serves is the caller's to wait for)."""
        raise TargetError(CANNOT_STOP)

    def start_nodes(self, node_ids: list[int]) -> None:
        """Start again several killed nodes, as :meth:`start_node`; return once all listen. By
        default one after the other; a target that can spawn them all from this thread first,
        then wait, overrides it (their starts overlap: the DURABILITY scenarios wait less)."""
        for node_id in node_ids:
            self.start_node(node_id)

    def node_running(self, node_id: int) -> bool:
        """Whether the node's process is alive (a stopped, SIGSTOPped one counts as alive)."""
        return False

    @property
    def manages_processes(self) -> bool:
        """Whether the suite started (so can restart) what serves the target."""
        return self.kind != "external"

    def recover(self) -> None:
        """Bring back a target that went down mid-run (the run then goes on): by default stop
        everything and start afresh. TargetError when it cannot (an external target)."""
        if not self.manages_processes:
            raise TargetError("the suite does not run an external target, so cannot restart it")
        self.stop()
        if "controller" not in self.given:
            self.controller, self.controllers, self.controller_client = None, [], None
        if "zookeeper" not in self.given:
            self.zookeeper = None
        self.start()

    def describe(self) -> str:
        return f"{self.name} {self.version} at {','.join(map(str, self.bootstrap))}"

    def __enter__(self) -> Target:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
