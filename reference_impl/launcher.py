"""``kafka-conformance serve``: the reference cluster's processes, started and stopped together.

``Cluster`` writes one JSON config per node into the data dir (``<name>/config.json``), starts
the controller(s) and the brokers as OS processes on loopback, and waits until every broker is
Online (it appears, unfenced, in every broker's Metadata). ``stop`` sends SIGTERM to the brokers
(each goes through the draft's Stopping state), then to the controllers, and waits; what does
not exit in time is killed. Tests use ``Cluster`` directly (``kill``/``start_node`` for restarts).

Listeners: each broker has a client listener ``PLAINTEXT`` (connections are ``User:ANONYMOUS``)
and an inter-broker listener ``INTERNAL`` (connections are ``User:broker``); each controller a
``CONTROLLER`` listener (``User:broker``). Only ``User:broker`` holds ClusterAction, so clients
cannot send the controller-to-broker RPCs or Envelope (KIP-590). With ``--port-base P``:
controller k listens on P+k (its optional client listener on P+50+k), broker i's client
listener on P+100+i, its inter-broker listener on P+200+i, and node n's metrics on P+300+n;
without it, free ports are picked. Node ids: controllers 0, 1001, 1002 …; brokers 1..N.

A secured cluster (``sasl``: a super user's mechanism, name and password; the ``security``
settings and ``super_users`` come with the overrides) has every listener SASL_PLAINTEXT: a
connection is who it authenticates as, and the launcher's own readiness checks authenticate.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.client.ports import free_port
from conformance.protocol import ApiKey
from reference_impl.config import ControllerAddress, ListenerConfig, NodeConfig
from reference_impl.process import LIFELINE_ENV

BROKER_PRINCIPAL = "User:broker"


def describe_exit(returncode: int) -> str:
    """How a node process ended, in words: ``killed by signal 9 (SIGKILL)``, ``exited with
    code 1``."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = "unknown"
        return f"killed by signal {-returncode} ({name})"
    return f"exited with code {returncode}"


class ClusterError(RuntimeError):
    """The cluster did not come up (the message names the node and its last words)."""


def controller_id(k: int) -> int:
    """Controller k's node id: 0, then 1001, 1002 … (brokers are 1..N)."""
    return 0 if k == 0 else 1000 + k


@dataclass
class NodeProcess:
    name: str
    config: NodeConfig
    config_path: Path
    log_path: Path
    proc: subprocess.Popen | None = None
    starts: int = 0
    #: our end of the node's lifeline: the pipe on its stdin (see ``reference_impl.node``)
    lifeline: int | None = None
    #: the current process's exit was already reported by ``died``
    reported: bool = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def start(self) -> None:
        """Spawn the node in a session of its own (a terminal's Ctrl-C reaches ``serve`` only),
        tied to this process by a lifeline: the node's stdin is a pipe whose writing end only we
        hold, so when we go, however we go, the node reads end of file and stops."""
        if self.running:
            raise ClusterError(f"{self.name} is already running")
        self.release()
        log = open(self.log_path, "ab")
        read_end, write_end = os.pipe()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", f"reference_impl.{self.config.role}", str(self.config_path)],
                stdin=read_end,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env={**os.environ, LIFELINE_ENV: "0"},
            )
        except BaseException:
            os.close(write_end)
            raise
        finally:
            os.close(read_end)
            log.close()
        self.lifeline = write_end
        self.reported = False
        self.starts += 1

    def release(self) -> None:
        """Close our end of the lifeline (the node, if still running, stops on its own)."""
        if self.lifeline is not None:
            os.close(self.lifeline)
            self.lifeline = None

    def died(self) -> int | None:
        """The exit status of a process that ended since the last call, once; else None."""
        if self.proc is None or self.reported or self.proc.poll() is None:
            return None
        self.reported = True
        self.release()
        return self.proc.returncode

    def log_line(self, text: str) -> None:
        """A line of the supervisor's in the node's log."""
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        with open(self.log_path, "a", encoding="utf-8") as f:
            f.write(f"{stamp} supervisor: {self.name} {text}\n")

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal(self, sig: int) -> None:
        if self.running:
            assert self.proc is not None
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.proc.pid, sig)

    def wait(self, timeout: float) -> int | None:
        if self.proc is None:
            return None
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None
        self.release()
        return code

    def last_words(self) -> str:
        """The node's last error line (its one-line reason when it refused to run)."""
        try:
            lines = self.log_path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return ""
        errors = [line for line in lines if ": error: " in line]
        return (errors or lines or [""])[-1]

    def runtime(self) -> dict[str, Any]:
        try:
            return json.loads((Path(self.config.data_dir) / "node.json").read_text())
        except (OSError, ValueError):
            return {}


@dataclass
class Cluster:
    data_dir: Path
    brokers: int = 3
    controllers: int = 1
    metadata_store: str = "embedded"
    host: str = "127.0.0.1"
    port_base: int | None = None
    #: also give each controller an ``EXTERNAL`` listener whose connections are clients
    #: (``User:ANONYMOUS``, no ClusterAction): where a client's Envelope is refused
    client_controller_listener: bool = False
    #: NodeConfig fields for every node / for controllers / for brokers (a role's ``settings``
    #: sections replace the same sections of every node's, the others are kept)
    overrides: dict[str, Any] = field(default_factory=dict)
    controller_overrides: dict[str, Any] = field(default_factory=dict)
    broker_overrides: dict[str, Any] = field(default_factory=dict)
    nodes: dict[str, NodeProcess] = field(default_factory=dict)
    #: (mechanism, username, password) of a super user: every listener SASL_PLAINTEXT, and the
    #: readiness checks authenticate so (None: PLAINTEXT listeners)
    sasl: tuple[str, str, str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir)
        if not self.nodes:
            self._configure()

    # --- configuration -----------------------------------------------------------------

    def _port(self, offset: int) -> int:
        return self.port_base + offset if self.port_base is not None else free_port(self.host)

    def _configure(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        controllers = [
            ControllerAddress(controller_id(k), self.host, self._port(k))
            for k in range(self.controllers)
        ]
        common = {
            "controllers": controllers,
            "metadata_store": self.metadata_store,
            "inter_broker_listener": "INTERNAL",
            "broker_principals": [BROKER_PRINCIPAL],
        }
        for k, c in enumerate(controllers):
            listeners = [
                ListenerConfig("CONTROLLER", c.port, self.host, principal=BROKER_PRINCIPAL)
            ]
            if self.client_controller_listener:
                listeners.append(ListenerConfig("EXTERNAL", self._port(50 + k), self.host))
            self._add("controller", c.node_id, listeners, common, self.controller_overrides)
        for i in range(1, self.brokers + 1):
            listeners = [
                ListenerConfig("PLAINTEXT", self._port(100 + i), self.host),
                ListenerConfig(
                    "INTERNAL", self._port(200 + i), self.host, principal=BROKER_PRINCIPAL
                ),
            ]
            self._add("broker", i, listeners, common, self.broker_overrides)

    def _add(
        self,
        role: str,
        node_id: int,
        listeners: list[ListenerConfig],
        common: dict[str, Any],
        role_overrides: dict[str, Any],
    ) -> None:
        name = f"{role}-{node_id}"
        node_dir = self.data_dir / name
        node_dir.mkdir(parents=True, exist_ok=True)
        values: dict[str, Any] = {
            **common,
            "role": role,
            "node_id": node_id,
            "data_dir": str(node_dir / "data"),
            "listeners": listeners,
            "metrics_port": self._port(300 + len(self.nodes)),
            "log_file": str(node_dir / "node.log"),
            **self.overrides,
            **role_overrides,
        }
        if "settings" in self.overrides and "settings" in role_overrides:
            # settings sections merge (a role's replace every node's section by section): a
            # controller's group bounds must not drop every node's faults or replication
            values["settings"] = {**self.overrides["settings"], **role_overrides["settings"]}
        if self.sasl is not None:
            for listener in listeners:
                listener.security_protocol = "SASL_PLAINTEXT"
        config = NodeConfig(**values)
        path = node_dir / "config.json"
        config.dump(path)
        self.nodes[name] = NodeProcess(name, config, path, node_dir / "node.log")

    # --- who is where ------------------------------------------------------------------

    def broker_nodes(self) -> list[NodeProcess]:
        return [p for p in self.nodes.values() if p.config.role == "broker"]

    def controller_nodes(self) -> list[NodeProcess]:
        return [p for p in self.nodes.values() if p.config.role == "controller"]

    def broker_address(self, node: NodeProcess, listener: str = "PLAINTEXT") -> tuple[str, int]:
        lc = node.config.listener(listener)
        return lc.host, lc.port

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in map(self.broker_address, self.broker_nodes()))

    @property
    def controller(self) -> str:
        c = self.controller_nodes()[0].config.listeners[0]
        return f"{c.host}:{c.port}"

    @property
    def cluster_id(self) -> str | None:
        for node in self.nodes.values():
            cid = node.runtime().get("cluster_id")
            if cid:
                return cid
        return None

    def ready_info(self) -> dict[str, Any]:
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "controller": self.controller,
            "cluster_id": self.cluster_id,
            "brokers": [
                {"node_id": b.config.node_id, "host": h, "port": p}
                for b in self.broker_nodes()
                for h, p in [self.broker_address(b)]
            ],
            "controllers": [c.config.listeners[0].port for c in self.controller_nodes()],
            "metadata_store": self.metadata_store,
            "metrics": {n.name: n.config.metrics_port for n in self.nodes.values()},
            "pids": {n.name: n.pid for n in self.nodes.values()},
            "data_dir": str(self.data_dir),
        }

    # --- processes ---------------------------------------------------------------------

    def start(self, timeout: float = 60.0, abort: threading.Event | None = None) -> None:
        """Spawn every node and wait until the cluster is ready; on failure, or once ``abort``
        is set, stop what was spawned (by pid) and raise ClusterError."""
        try:
            for node in [*self.controller_nodes(), *self.broker_nodes()]:
                if abort is not None and abort.is_set():
                    raise ClusterError("start-up interrupted")
                node.start()
            self.wait_ready(timeout, abort=abort)
        except BaseException:
            self.stop(timeout=5)
            raise

    def start_node(self, name: str) -> None:
        self.nodes[name].start()

    def kill(self, name: str, sig: int = signal.SIGKILL, timeout: float = 10.0) -> None:
        node = self.nodes[name]
        node.signal(sig)
        if sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT) and node.wait(timeout) is None:
            node.signal(signal.SIGKILL)
            node.wait(timeout)

    def wait_ready(
        self,
        timeout: float = 60.0,
        brokers: list[str] | None = None,
        abort: threading.Event | None = None,
    ) -> None:
        """Until every (named) broker is Online in the Metadata of every running broker (without
        brokers: until a controller is active); ClusterError once ``abort`` is set."""
        names = brokers or [b.name for b in self.broker_nodes()]
        deadline = time.monotonic() + timeout
        expected = {self.nodes[n].config.node_id for n in names}
        while True:
            if abort is not None and abort.is_set():
                raise ClusterError("start-up interrupted")
            for node in self.nodes.values():
                if node.proc is not None and node.proc.poll() is not None:
                    raise ClusterError(f"{node.name} exited: {node.last_words()}")
            if asyncio.run(self._all_see(names, expected)):
                return
            if time.monotonic() > deadline:
                raise ClusterError(f"brokers {sorted(expected)} not all Online after {timeout} s")
            time.sleep(0.05)

    def active_controller(self, timeout: float = 30.0) -> NodeProcess:
        """The controller that answers DescribeCluster on its controller listener (standbys
        answer NOT_CONTROLLER), once there is one."""
        deadline = time.monotonic() + timeout
        while (found := asyncio.run(self._active())) is None:
            if time.monotonic() > deadline:
                raise ClusterError(f"no controller became active in {timeout} s")
            time.sleep(0.05)
        return found

    async def _open(self, host: str, port: int) -> Any:
        """A connection for the readiness checks (authenticated in a secured cluster)."""
        from conformance.client.sasl import authenticate
        from conformance.client.wire import Connection
        from conformance.protocol import Codec

        conn = await Connection.open(host, port, codec=_codec(Codec), timeout=1)
        if self.sasl is not None:
            try:
                await authenticate(conn, *self.sasl, timeout=1)
            except BaseException:
                await conn.close()
                raise
        return conn

    async def _active(self) -> NodeProcess | None:
        for node in self.controller_nodes():
            lc = node.config.listeners[0]
            try:
                async with await self._open(lc.host, lc.port) as c:
                    resp = await c.request(ApiKey.DESCRIBE_CLUSTER, 0, {}, timeout=1)
            except (OSError, ConnectionError, TimeoutError):
                continue
            if resp.body["ErrorCode"] == 0:
                return node
        return None

    async def _all_see(self, names: list[str], expected: set[int]) -> bool:
        if not names:  # no brokers: ready once a controller is active
            return await self._active() is not None
        for name in names:
            host, port = self.broker_address(self.nodes[name])
            try:
                async with await self._open(host, port) as conn:
                    resp = await conn.request(ApiKey.METADATA, 9, {"Topics": []}, timeout=1)
            except (OSError, ConnectionError, TimeoutError):
                return False
            if not expected <= {b["NodeId"] for b in resp.body["Brokers"]}:
                return False
        return True

    def stop(self, timeout: float = 20.0) -> None:
        """Brokers first (gracefully: Stopping, then Offline), then controllers."""
        for group in (self.broker_nodes(), self.controller_nodes()):
            for node in group:
                node.signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            for node in group:
                if node.wait(max(deadline - time.monotonic(), 0.1)) is None:
                    node.signal(signal.SIGKILL)
                    node.wait(5)


_CODEC: list[Any] = []


def _codec(cls: Any) -> Any:
    if not _CODEC:
        _CODEC.append(cls.from_specs())
    return _CODEC[0]


# --- serve: the cluster until a signal -----------------------------------------------------


def serve(
    *,
    brokers: int = 3,
    metadata_store: str = "embedded",
    data_dir: Path | None = None,
    host: str = "127.0.0.1",
    port_base: int | None = None,
    controllers: int = 1,
    ready_file: Path | None = None,
    restart_failed: bool = False,
    timeout: float = 60.0,
    client_controller_listener: bool = False,
    broker_settings: dict[str, Any] | None = None,
) -> int:
    """Run the cluster until SIGINT/SIGTERM (``broker_settings``: sections of every broker's
    ``settings``, e.g. a release's ``api_ranges``); returns the exit code. The ready file
    exists only while the cluster is ready: a stale one is removed first, the new one appears
    whole (rename) once every broker is Online and is removed before the cluster stops. A signal
    during start-up stops the nodes spawned so far and returns 128 + the signal's number, without
    writing the ready file. With ``restart_failed`` a node that dies is started again
    (``supervise``). Bad arguments and a cluster that does not start raise ClusterError (the
    command line, ``kafka-conformance serve``, prints it as one line)."""
    if brokers < 1:
        raise ClusterError("--brokers must be at least 1")
    if host not in ("127.0.0.1", "localhost", "::1"):
        raise ClusterError("the reference cluster listens on loopback only")
    if controllers > 1 and not metadata_store.startswith("zookeeper://"):
        raise ClusterError("several controllers need --metadata-store zookeeper://H:P")
    if ready_file is not None:
        ready_file.unlink(missing_ok=True)
    stop = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, _frame: Any) -> None:
        received.append(signum)
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, on_signal)
    temporary = data_dir is None
    data_dir = Path(tempfile.mkdtemp(prefix="kc-serve-")) if data_dir is None else data_dir
    started = time.monotonic()
    try:
        cluster = Cluster(
            data_dir,
            brokers=brokers,
            controllers=controllers,
            metadata_store=metadata_store,
            host=host,
            port_base=port_base,
            client_controller_listener=client_controller_listener,
            broker_overrides={"settings": dict(broker_settings)} if broker_settings else {},
        )
        try:
            cluster.start(timeout=timeout, abort=stop)
        except ClusterError:
            if received:
                print(f"stopped during start-up by signal {received[0]}", file=sys.stderr)
                return 128 + received[0]
            raise
        if stop.is_set():  # the signal came as the last broker became Online
            cluster.stop()
            print(f"stopped during start-up by signal {received[0]}", file=sys.stderr)
            return 128 + received[0]
        info = cluster.ready_info()
        info["startup_seconds"] = round(time.monotonic() - started, 3)
        try:
            if ready_file is not None:
                _write_atomically(ready_file, json.dumps(info, indent=2) + "\n")
            print(
                f"ready in {info['startup_seconds']} s: bootstrap {info['bootstrap_servers']}, "
                f"controller {info['controller']}, cluster id {info['cluster_id']}",
                flush=True,
            )
            supervise(cluster, stop, restart_failed)
        finally:
            if ready_file is not None:
                ready_file.unlink(missing_ok=True)
            cluster.stop()
        return 0
    finally:
        if temporary:
            shutil.rmtree(data_dir, ignore_errors=True)


#: --restart-failed: the first restart's delay, doubled while a node keeps dying young
RESTART_BACKOFF_S = (1.0, 30.0)
#: a node that ran this long before dying is restarted after the first delay again
RESTART_STABLE_S = 30.0


def supervise(cluster: Cluster, stop: threading.Event, restart_failed: bool) -> None:
    """Until ``stop``: report every node that dies and how (signal or exit code), on stderr and
    in the node's log; with ``restart_failed``, start it again (with a growing delay while it
    keeps dying within RESTART_STABLE_S of its start)."""
    started = {name: time.monotonic() for name in cluster.nodes}
    delay = dict.fromkeys(cluster.nodes, RESTART_BACKOFF_S[0])
    due: dict[str, float] = {}
    while not stop.wait(0.2):
        now = time.monotonic()
        for name, node in cluster.nodes.items():
            code = node.died()
            if code is not None:
                how = describe_exit(code)
                if now - started[name] >= RESTART_STABLE_S:
                    delay[name] = RESTART_BACKOFF_S[0]
                plan = f"; restarting in {delay[name]:.0f} s" if restart_failed else ""
                print(f"warning: {name} {how}{plan}: {node.last_words()}", file=sys.stderr)
                node.log_line(how + plan)
                if restart_failed:
                    due[name] = now + delay[name]
                    delay[name] = min(delay[name] * 2, RESTART_BACKOFF_S[1])
            if name in due and now >= due[name]:
                del due[name]
                node.start()
                started[name] = now
                node.log_line(f"restarted (pid {node.pid})")
                print(f"{name} restarted (pid {node.pid})", file=sys.stderr, flush=True)


def _write_atomically(path: Path, text: str) -> None:
    """``text`` into ``path`` through a temporary file in the same folder and a rename, so a
    reader sees either no file or the whole of it."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)
