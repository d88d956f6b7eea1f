"""A Spark standalone cluster on this machine: one master and two workers, started from the
PySpark installation's own launcher (``bin/spark-class``), loopback only, stopped by pid."""

from __future__ import annotations

import os
import re
import subprocess
import time
from pathlib import Path

import pyspark

from conformance.client.ports import free_port

SPARK_HOME = Path(pyspark.__file__).parent
#: a worker counts once the master logs its registration
REGISTERED = re.compile(r"Registering worker 127\.0\.0\.1:\d+")


class StandaloneCluster:
    def __init__(self, workdir: Path, workers: int = 2, start_timeout: float = 180.0) -> None:
        self.workdir, self.workers, self.start_timeout = workdir, workers, start_timeout
        self.port = free_port()
        self.procs: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _spawn(self, name: str, *args: str) -> subprocess.Popen:
        env = dict(os.environ, SPARK_HOME=str(SPARK_HOME), SPARK_LOCAL_IP="127.0.0.1")
        env["SPARK_LOG_DIR"] = env["SPARK_WORKER_DIR"] = str(self.workdir)
        log = (self.workdir / f"{name}.log").open("wb")
        cmd = [str(SPARK_HOME / "bin" / "spark-class"), *args]
        # spark-class execs the JVM, so the pid is the JVM's: stopped by that pid
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env)
        self.procs.append(proc)
        return proc

    def __enter__(self) -> StandaloneCluster:
        self.workdir.mkdir(parents=True, exist_ok=True)
        master = "org.apache.spark.deploy.master.Master"
        worker = "org.apache.spark.deploy.worker.Worker"
        self._spawn("master", master, "--host", "127.0.0.1", "--port", str(self.port),
                    "--webui-port", str(free_port()))  # fmt: skip
        for k in range(self.workers):
            self._spawn(
                f"worker{k}", worker, self.master_url, "--host", "127.0.0.1", "--cores", "1",
                "--memory", "1g", "--webui-port", str(free_port()),
                "--work-dir", str(self.workdir / f"work{k}"),
            )  # fmt: skip
        try:
            self._wait_registered()
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_registered(self) -> None:
        log = self.workdir / "master.log"
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace") if log.exists() else ""
            if len(REGISTERED.findall(text)) >= self.workers:
                return
            dead = [p.args[1] for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"Spark process exited during start-up: {dead}; see {log}")
            time.sleep(0.5)
        raise RuntimeError(f"{self.workers} workers not registered in {self.start_timeout}s")

    def stop(self) -> None:
        for proc in reversed(self.procs):  # workers first, then the master
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def __exit__(self, *exc: object) -> None:
        self.stop()
