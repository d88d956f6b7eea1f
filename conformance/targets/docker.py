"""``docker:IMAGE``: an Apache Kafka image run with the docker SDK, in KRaft or ZooKeeper mode.

``docker:apache/kafka:3.9.1`` runs one combined broker+controller in KRaft mode;
``docker:apache/kafka:3.9.1?mode=zookeeper`` runs a ZooKeeper container and a ZooKeeper-mode
broker beside it (images that still support it: Kafka before 4.0, e.g. bitnami/kafka:3.9 or
confluentinc/cp-kafka:7.x, which read the same ``KAFKA_*`` settings). Ports are published on
127.0.0.1 only. The container configuration is plain data (``broker_config``) so that it can be
checked without an engine; where no engine is reachable the target fails with one clear line.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from conformance.targets.base import Endpoint, Target, TargetError, free_port, wait_listening

MODES = ("kraft", "zookeeper")
ZOOKEEPER_IMAGE = "zookeeper:3.8"
#: a fixed KRaft cluster id (22-character URL-safe Base64, as KIP-78 recommends)
KRAFT_CLUSTER_ID = "a2NvbmZvcm1hbmNlLXN1aQ"


@dataclass
class DockerTarget(Target):
    kind: str = "docker"
    image: str = ""
    mode: str = "kraft"
    host_port: int = 0
    controller_port: int = 0
    zookeeper_port: int = 0
    startup_timeout: float = 120.0
    _client: Any = field(default=None, repr=False)
    _containers: list[Any] = field(default_factory=list, repr=False)
    _network: Any = field(default=None, repr=False)

    @classmethod
    def from_spec(cls, spec: str) -> DockerTarget:
        """``IMAGE[?mode=kraft|zookeeper]``."""
        image, _, query = spec.partition("?")
        if not image:
            raise TargetError("docker target needs an image: --target docker:IMAGE")
        params = parse_qs(query)
        unknown = set(params) - {"mode"}
        if unknown:
            raise TargetError(f"docker target: unknown option(s) {', '.join(sorted(unknown))}")
        mode = params.get("mode", ["kraft"])[-1]
        if mode not in MODES:
            raise TargetError(f"docker target: mode must be kraft or zookeeper, not {mode!r}")
        name, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "")
        return cls(
            name=(name or image).split("/")[-1],
            version=tag or "latest",
            image=image,
            mode=mode,
            client_listener_types=("broker",) if mode == "kraft" else ("zkBroker",),
        )

    # --- configuration (no engine needed) -------------------------------------------------

    def broker_config(self, zookeeper_host: str = "zookeeper") -> dict[str, Any]:
        """The broker container's run arguments: image, environment, published ports."""
        if not self.host_port:
            raise ValueError("host_port must be chosen before the configuration is built")
        env: dict[str, str] = {
            "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT,"
            "INTERNAL:PLAINTEXT",
            "KAFKA_INTER_BROKER_LISTENER_NAME": "INTERNAL",
            "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
            "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
            "KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS": "0",
            "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "true",
        }
        ports = {"9092/tcp": ("127.0.0.1", self.host_port)}
        if self.mode == "kraft":
            env |= {
                "KAFKA_NODE_ID": "1",
                "KAFKA_PROCESS_ROLES": "broker,controller",
                "CLUSTER_ID": KRAFT_CLUSTER_ID,
                "KAFKA_CONTROLLER_QUORUM_VOTERS": "1@localhost:9093",
                "KAFKA_CONTROLLER_LISTENER_NAMES": "CONTROLLER",
                "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,CONTROLLER://0.0.0.0:9093,"
                "INTERNAL://0.0.0.0:19092",
                "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{self.host_port},"
                "INTERNAL://localhost:19092",
            }
            if self.controller_port:
                ports["9093/tcp"] = ("127.0.0.1", self.controller_port)
        else:
            env |= {
                "KAFKA_BROKER_ID": "1",
                "KAFKA_ZOOKEEPER_CONNECT": f"{zookeeper_host}:2181",
                "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092,INTERNAL://0.0.0.0:19092",
                "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://127.0.0.1:{self.host_port},"
                "INTERNAL://localhost:19092",
            }
        return {"image": self.image, "environment": env, "ports": ports, "detach": True}

    def zookeeper_config(self) -> dict[str, Any]:
        if not self.zookeeper_port:
            raise ValueError("zookeeper_port must be chosen before the configuration is built")
        return {
            "image": ZOOKEEPER_IMAGE,
            "name": None,
            "environment": {"ZOO_4LW_COMMANDS_WHITELIST": "srvr,ruok"},
            "ports": {"2181/tcp": ("127.0.0.1", self.zookeeper_port)},
            "detach": True,
        }

    # --- running -------------------------------------------------------------------------------

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

    def start(self) -> None:
        self._client = client = self._engine()
        self.host_port = self.host_port or free_port()
        if self.mode == "kraft":
            self.controller_port = self.controller_port or free_port()
        zk_host = "zookeeper"
        try:
            if self.mode == "zookeeper":
                self._network = client.networks.create(f"kc-{self.host_port}")
                self.zookeeper_port = self.zookeeper_port or free_port()
                cfg = self.zookeeper_config()
                cfg["name"] = f"kc-zk-{self.host_port}"
                zk = client.containers.run(network=self._network.name, **cfg)
                self._containers.append(zk)
                zk_host = cfg["name"]
                self.zookeeper = f"127.0.0.1:{self.zookeeper_port}"
            run = self.broker_config(zk_host)
            if self._network is not None:
                run["network"] = self._network.name
            self._containers.append(client.containers.run(**run))
        except Exception as e:
            self.stop()
            raise TargetError(f"docker: cannot start {self.image}: {e}") from None
        ep = Endpoint("127.0.0.1", self.host_port)
        self.bootstrap = [ep]
        if self.controller_port:
            self.controller = Endpoint("127.0.0.1", self.controller_port)
        if not wait_listening(ep, self.startup_timeout):
            self.stop()
            raise TargetError(f"docker: {self.image} did not listen on {ep} in time")
        time.sleep(1.0)  # the port opens before the broker has registered itself

    def stop(self) -> None:
        for c in reversed(self._containers):
            try:
                c.remove(force=True)
            except Exception:
                pass
        self._containers.clear()
        if self._network is not None:
            try:
                self._network.remove()
            except Exception:
                pass
            self._network = None
