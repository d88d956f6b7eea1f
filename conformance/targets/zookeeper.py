"""A standalone ZooKeeper 3.8 (Debian's ``zookeeper`` package) for the reference cluster's
ZooKeeper metadata store: loopback only, a fresh data dir, stopped by pid.

Ready when the ``srvr`` four-letter word answers ``Mode: standalone``.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from conformance.client.ports import free_port
from conformance.targets.base import TargetError, die_with_parent, stop_process

JARS = (
    "/usr/share/java/zookeeper.jar",
    "/usr/share/java/zookeeper-jute.jar",
    "/usr/share/java/slf4j-api.jar",
    "/usr/share/java/slf4j-log4j12.jar",
    "/usr/share/java/log4j-1.2.jar",
)
CONF_DIR = "/etc/zookeeper/conf"
MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"


def srvr(host: str, port: int, timeout: float = 1.0) -> str:
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(b"srvr")
        chunks = []
        while data := s.recv(4096):
            chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


class ZooKeeperServer:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.host, self.port = host, port or free_port(host)
        self.dir: Path | None = None
        self.proc: subprocess.Popen | None = None

    @property
    def connect(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, timeout: float = 30.0) -> None:
        missing = [j for j in JARS if not Path(j).exists()]
        java = shutil.which("java")
        if missing or java is None:
            raise TargetError(
                "ZooKeeper is not installed (apt-get install zookeeper, and Java 17): "
                f"missing {', '.join(missing) or 'java'}"
            )
        self.dir = Path(tempfile.mkdtemp(prefix="kc-zk-"))
        cfg = self.dir / "zoo.cfg"
        cfg.write_text(
            f"dataDir={self.dir / 'data'}\nclientPort={self.port}\n"
            f"clientPortAddress={self.host}\ntickTime=500\nmaxClientCnxns=0\n"
            "4lw.commands.whitelist=srvr,ruok,conf\nadmin.enableServer=false\n"
        )
        classpath = ":".join([CONF_DIR, *JARS])
        log = (self.dir / "zookeeper.log").open("wb")
        self.proc = subprocess.Popen(
            [java, "-Xmx256m", "-cp", classpath, MAIN, str(cfg)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # as Kafka's JVMs: a run SIGKILLed leaves no ZooKeeper behind (session 16's
            # publication found one of a kafka:3.2.3?store=zookeeper run)
            preexec_fn=die_with_parent,
        )
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                if "Mode: standalone" in srvr(self.host, self.port):
                    return
            except OSError:
                pass
            time.sleep(0.1)
        self.stop()
        raise TargetError(f"ZooKeeper did not start on {self.connect} within {timeout:.0f} s")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        stop_process(proc, 10)
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
