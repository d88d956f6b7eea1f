"""``docker:IMAGE[?profile=NAME|PATH]``: a container image run as the target (the docker SDK).

How an image is started and when it serves is its profile (``conformance.targets.profiles``):
named in the target, or recognised from the image name (``docker:apache/kafka:3.9.1`` is
``kafka-kraft``, ``docker:ghcr.io/tansu-io/tansu:0.6`` is ``tansu``). The implementation's name
is the image's last path part and its version the tag, so runs of several tags of one image are
versions of one implementation in a matrix.

The container shares the host's network and listens on 127.0.0.1 only, on a block of free ports
the target picks. ``stop`` removes it; so does the interpreter's exit, and a container whose
owning process died without either (killed) is removed by the next start. The container is
created, then started: however a start fails (an entrypoint that cannot exec, a readiness check
that does not pass, an interrupt) the container it created is removed and its ZooKeeper stopped.
When the container ran, its log is kept in ``logs_dir`` (the run's results folder) and the error
names the file.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import socket
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from conformance.client.ports import free_run
from conformance.targets import docker_nodes
from conformance.targets.base import (
    Endpoint,
    Target,
    TargetError,
    metadata_brokers,
    pid_alive,
    wait_listening,
)
from conformance.targets.profiles import Profile, load_profile, recognise
from conformance.targets.zookeeper import ZooKeeperServer

#: label of every container the target starts: "<host name>:<pid>" of the process that owns it
OWNER_LABEL = "kafka-conformance.owner"
#: label of one start's container: "<host name>:<pid>:<random>", to find the container the
#: engine made when its creation raised
START_LABEL = "kafka-conformance.start"
#: the OCI label an image may carry its version in (read when the tag says nothing: latest)
VERSION_LABEL = "org.opencontainers.image.version"


def parse_image(image: str) -> tuple[str, str]:
    """(repository, version) of ``[registry[:port]/]path[:tag][@digest]``; version is the tag,
    else the digest's first 12 hex digits, else ``latest``."""
    ref, _, digest = image.partition("@")
    head, _, last = ref.rpartition("/")
    name, _, tag = last.partition(":")
    repository = f"{head}/{name}" if head else name
    if tag:
        return repository, tag
    if digest:
        return repository, digest.split(":", 1)[-1][:12]
    return repository, "latest"


def free_block(size: int, host: str = "127.0.0.1") -> int:
    """The first of ``size`` consecutive ports nobody listens on right now, below the ephemeral
    range (where connections take their local ports) and held by this process as its other
    ports are (``conformance.client.ports``)."""
    base = free_run(size, host)
    if base is None:
        raise TargetError(f"no block of {size} free ports on {host} below the ephemeral range")
    return base


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass
class DockerTarget(Target):
    kind: str = "docker"
    image: str = ""
    profile: Profile | None = None
    host: str = "127.0.0.1"
    #: the first port of the container's block (0: chosen at start)
    port: int = 0
    _client: Any = field(default=None, repr=False)
    _container: Any = field(default=None, repr=False)
    _zk: ZooKeeperServer | None = field(default=None, repr=False)
    #: node id -> how the process of a node the suite killed ran (several nodes in a container)
    _killed: dict[int, docker_nodes.NodeProcess] = field(default_factory=dict, repr=False)

    @classmethod
    def from_spec(cls, spec: str) -> DockerTarget:
        """``IMAGE[?profile=NAME|PATH]``."""
        image, _, query = spec.partition("?")
        if not image:
            raise TargetError("docker target needs an image: --target docker:IMAGE")
        params = parse_qs(query, keep_blank_values=True)
        unknown = set(params) - {"profile"}
        if unknown:
            raise TargetError(
                f"docker target: unknown option(s) {', '.join(sorted(unknown))} (known: profile)"
            )
        repository, version = parse_image(image)
        profile = load_profile(params["profile"][-1]) if "profile" in params else None
        profile = profile or recognise(repository)
        return cls(
            name=repository.rsplit("/", 1)[-1],
            version=version,
            image=image,
            profile=profile,
            client_listener_types=profile.client_listener_types,
        )

    def describe(self) -> str:
        return f"{super().describe()} (image {self.image}, profile {self.prof.name})"

    @property
    def prof(self) -> Profile:
        if self.profile is None:
            raise TargetError("the docker target has no profile")
        return self.profile

    @property
    def container_name(self) -> str:
        return f"kc-{self.prof.name}-{self.port}"

    # --- configuration (no engine needed) -------------------------------------------------

    def run_config(self, zookeeper: str | None = None) -> dict[str, Any]:
        """The container's run arguments, for a port block chosen already."""
        if not self.port:
            raise ValueError("the port block must be chosen before the configuration is built")
        command, env = self.prof.render(self.prof.values(self.host, self.port, zookeeper))
        cfg: dict[str, Any] = {
            "image": self.image,
            "name": self.container_name,
            "environment": env,
            "network_mode": "host",
            "labels": {OWNER_LABEL: f"{socket.gethostname()}:{os.getpid()}"},
            "detach": True,
        }
        if command is not None:
            cfg["command"] = command
        if self.prof.volumes:
            cfg["volumes"] = {h: {"bind": c, "mode": "ro"} for h, c in self.prof.volumes.items()}
        if self.prof.tmpfs:
            cfg["tmpfs"] = dict.fromkeys(self.prof.tmpfs, "")
        return cfg

    def endpoint(self, port_name: str) -> Endpoint:
        return Endpoint(self.host, self.port + self.prof.ports[port_name])

    # --- running -------------------------------------------------------------------------------

    def prepare(self) -> None:
        self._engine()

    def _engine(self) -> Any:
        try:
            import docker
            from docker.errors import DockerException
        except ImportError:
            raise TargetError(
                "the docker target needs the docker package (pip install docker)"
            ) from None
        try:
            client = docker.from_env()
            client.ping()
        except DockerException as e:
            raise TargetError(
                f"no Docker engine reachable for --target docker:{self.image} ({e})"
            ) from None
        return client

    def _local_image(self, client: Any) -> Any:
        """The image, pulled when it is not on this machine."""
        from docker.errors import DockerException, ImageNotFound

        try:
            return client.images.get(self.image)
        except ImageNotFound:
            pass
        repository, _, tag = self.image.partition("@")[0].rpartition(":")
        try:
            if "/" in tag or not repository:
                return client.images.pull(self.image)
            return client.images.pull(repository, tag=tag)
        except DockerException as e:
            why = " ".join(str(e).split())
            raise TargetError(
                f"docker: the image {self.image} is not on this machine and cannot be pulled "
                f"(build it or pull it first): {why}"
            ) from None

    def start(self) -> None:
        profile = self.prof
        self._client = client = self._engine()
        remove_orphans(client)
        image = self._local_image(client)
        if self.version == "latest":
            self.version = (image.labels or {}).get(VERSION_LABEL) or self.version
        self.port = self.port or free_block(profile.block, self.host)
        self.bootstrap = [self.endpoint("client")]
        if "controller" in profile.ports:
            self.controller = self.controller or self.endpoint("controller")
        if "controller_client" in profile.ports:
            self.controller_client = self.endpoint("controller_client")
        nodes = dict(profile.nodes)
        if profile.node_id is not None:
            nodes.setdefault(profile.node_id, "client")
        self.restartable = {n: self.endpoint(port) for n, port in nodes.items()}
        atexit.register(self.stop)
        try:
            zookeeper = None
            if profile.zookeeper:
                self._zk = ZooKeeperServer(self.host)
                self._zk.start()
                zookeeper = self._zk.connect
                self.zookeeper = self.zookeeper or zookeeper
            spawned = _now_ms()
            self._run(client, zookeeper)
            self._wait_ready()
        except BaseException:
            # however the start failed: the container (created, started or not) and ZooKeeper go
            self.stop()
            raise
        self.started = dict.fromkeys(self.restartable, (spawned, _now_ms()))

    def _run(self, client: Any, zookeeper: str | None) -> None:
        """Create the container, then start it: a container that was created and cannot start
        (an entrypoint that cannot exec, a mount that fails) is ``self._container`` already, so
        ``stop`` removes it. One the engine made though ``create`` raised (a timeout) is found
        by the start's own label."""
        from docker.errors import APIError

        token = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex}"
        cfg = self.run_config(zookeeper)
        cfg["labels"] = {**cfg["labels"], START_LABEL: token}
        cfg.pop("detach", None)
        try:
            self._container = client.containers.create(**cfg)
            self._container.start()
        except Exception as e:  # the SDK's errors, and requests' (a timeout)
            if self._container is None:
                with contextlib.suppress(Exception):
                    made = client.containers.list(
                        all=True, filters={"label": f"{START_LABEL}={token}"}
                    )
                    self._container = made[0] if made else None
            why = e.explanation if isinstance(e, APIError) and e.explanation else str(e)
            raise TargetError(
                f"docker: cannot start {self.image}: {' '.join(str(why).split())}"
            ) from None

    def _wait_ready(self, exit_ok: bool = False) -> bool:
        """Until the container passes its readiness check (True); False when it exited and
        ``exit_ok``, else the error naming its log."""
        profile, ep = self.prof, self.bootstrap[0]
        deadline = time.monotonic() + profile.ready_timeout
        while True:
            self._container.reload()
            if self._container.status in ("exited", "dead"):
                if exit_ok:
                    return False
                code = self._container.attrs.get("State", {}).get("ExitCode")
                self._failed(f"exited (code {code}) before it served on {ep}")
            left = deadline - time.monotonic()
            if left <= 0:
                self._failed(
                    f"did not pass its readiness check ({profile.ready_check}) on {ep} "
                    f"within {profile.ready_timeout:g} s"
                )
            if profile.ready_check == "tcp":
                if wait_listening(ep, min(left, 0.5)):
                    return True
            elif metadata_brokers(ep, min(left, 5.0)) >= profile.ready_brokers:
                return True
            else:
                time.sleep(min(left, 0.2))

    def _failed(self, why: str) -> None:
        """Keep the container's log, remove it, and raise the one-line error naming the log."""
        log = self.save_log()
        last = next(
            (line for line in reversed(log.read_text(errors="replace").splitlines()) if line),
            "",
        )
        self.stop()
        raise TargetError(
            f"docker: {self.image} (profile {self.prof.name}) {why}; its log: {log}"
            + (f" (last line: {last.strip()[:200]})" if last else "")
        )

    def save_log(self) -> Path:
        folder = self.logs_dir or Path(tempfile.gettempdir())
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"docker-{self.container_name}.log"
        try:
            data = self._container.logs(stdout=True, stderr=True)
        except Exception as e:
            data = f"(the container's log could not be read: {e})\n".encode()
        path.write_bytes(data)
        return path

    def restart_broker(self, node_id: int) -> None:
        """Restart the container (the profile's one broker) and wait until it serves again."""
        if node_id not in self.restartable or self._container is None:
            super().restart_broker(node_id)
        spawned = _now_ms()
        self._container.restart(timeout=10)
        self._wait_ready()
        # every node of the container started again
        self.started = dict.fromkeys(self.restartable, (spawned, _now_ms()))

    # --- faults: one container is one node (its main process), or holds several processes -----

    def fault_nodes(self, role: str = "broker") -> list[int]:
        """Brokers: the profile's ``nodes`` (processes in the container) or its ``node_id`` (the
        container itself); controllers: its ``controllers`` (processes in the container)."""
        prof = self.prof
        if self._container is None:
            return []
        if role == "controller":
            return sorted(prof.controllers)
        if role != "broker":
            return []
        return sorted(prof.nodes or ([] if prof.node_id is None else [prof.node_id]))

    def _node_port(self, node_id: int) -> int | None:
        """The port the node listens on where it is one process of several (None: the node is
        the container)."""
        if node_id not in self.fault_nodes("broker") + self.fault_nodes("controller"):
            raise TargetError(f"the docker target runs no node {node_id} it can signal")
        name = self.prof.nodes.get(node_id) or self.prof.controllers.get(node_id)
        return None if name is None else self.endpoint(name).port

    def signal_node(self, node_id: int, sig: int) -> None:
        port, c = self._node_port(node_id), self._container
        if port is None:  # the container is the node: SIGSTOP/SIGCONT freeze and thaw it
            c.reload()
            if sig == signal.SIGSTOP:
                c.pause()
            elif sig == signal.SIGCONT:
                if c.status == "paused":
                    c.unpause()
            elif c.status in ("running", "paused"):
                c.kill(signal=int(sig))
            if sig == signal.SIGKILL:
                self._until(lambda: not self.node_running(node_id), f"node {node_id} gone")
            return
        proc = docker_nodes.find(c, port)
        if proc is None:  # killed already: nothing listens on its port
            return
        if sig == signal.SIGKILL:
            self._killed[node_id] = proc
        docker_nodes.send(c, proc.pid, sig)
        if sig == signal.SIGKILL:
            gone = lambda: docker_nodes.state(c, proc.pid) in ("Z", "gone")  # noqa: E731
            self._until(gone, f"node {node_id}'s process {proc.pid} gone")

    def _until(self, ok: Any, what: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not ok():
            if time.monotonic() > deadline:
                raise TargetError(f"docker: {what} not within {timeout:g} s")
            time.sleep(0.1)

    def start_node(self, node_id: int) -> None:
        port = self._node_port(node_id)
        if self.node_running(node_id):
            raise TargetError(f"the docker target's node {node_id} is already running")
        spawned = _now_ms()
        if port is None:
            # ZooKeeper mode: a broker killed with SIGKILL leaves its /brokers/ids znode until
            # its session expires, and a broker starting meanwhile exits at once: started again
            # until then, as the kafka target does
            deadline = time.monotonic() + self.prof.ready_timeout
            self._container.start()
            while not self._wait_ready(exit_ok=time.monotonic() < deadline):
                time.sleep(1.0)
                self._container.start()
        else:
            proc = self._killed.pop(node_id, None)
            if proc is None:
                raise TargetError(f"node {node_id} was not killed by the suite: no command line")
            docker_nodes.relaunch(self._container, proc)
            ep = Endpoint(self.host, port)
            if not wait_listening(ep, self.prof.ready_timeout):
                raise TargetError(f"docker: node {node_id} did not listen again on {ep}")
        if node_id in self.restartable:
            self.started[node_id] = (spawned, _now_ms())

    def node_running(self, node_id: int) -> bool:
        port = self._node_port(node_id)
        if port is not None:
            return docker_nodes.find(self._container, port) is not None
        self._container.reload()
        return self._container.status in ("running", "paused")

    def stop(self) -> None:
        atexit.unregister(self.stop)
        container, self._container = self._container, None
        if container is not None:
            try:
                container.remove(force=True)
            except Exception as e:
                from docker.errors import NotFound

                if not isinstance(e, NotFound):
                    raise TargetError(
                        f"docker: could not remove the container {container.name}: {e}"
                    ) from None
        if self._zk is not None:
            self._zk.stop()
            self._zk = None


def remove_orphans(client: Any) -> list[str]:
    """Remove the containers on this host whose owning process is gone; their names."""
    host = socket.gethostname()
    removed = []
    for c in client.containers.list(all=True, filters={"label": OWNER_LABEL}):
        owner_host, _, pid = c.labels.get(OWNER_LABEL, "").rpartition(":")
        if owner_host == host and pid.isdigit() and not pid_alive(int(pid)):
            c.remove(force=True)
            removed.append(c.name)
    return removed
