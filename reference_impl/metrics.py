"""Per-node metrics in Prometheus text format, served on a loopback HTTP port.

Each node has its own registry (several nodes may share a test process). Names follow Kafka's
where Kafka has one: the KIP-78 cluster id (``kafka.server:type=KafkaServer,name=ClusterId``),
the broker state, and KIP-590's forwarding counts (num-messages-redirected,
num-client-forwarding-to-controller, request-forwarding-to-controller-authorization-fail).
Other components add their metrics to ``NodeMetrics.registry``.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Enum, Gauge, Info, start_http_server

#: the draft's broker states, as the Enum metric's values
STATES = ["offline", "fenced", "online", "stopping"]


class NodeMetrics:
    def __init__(self, role: str, node_id: int) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.node = Info("kafka_node", "This node's role and id", registry=r)
        self.node.info({"role": role, "node_id": str(node_id)})
        self.cluster = Info("kafka_cluster", "KIP-78: the cluster id", registry=r)
        self.start_time = Gauge(
            "kafka_server_start_time_ms", "KIP-536: process start, ms since the epoch", registry=r
        )
        self.requests = Counter(
            "kafka_network_requests",
            "Requests served, by API and version (Kafka's RequestMetrics RequestsPerSec)",
            ["request", "version"],
            registry=r,
        )
        self.port: int | None = None
        self._server = None

    def set_cluster_id(self, cluster_id: str) -> None:
        self.cluster.info({"id": cluster_id})

    def start(self, port: int = 0, host: str = "127.0.0.1") -> int:
        server, _thread = start_http_server(port, addr=host, registry=self.registry)
        self._server = server
        self.port = server.server_port
        return self.port

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class BrokerMetrics(NodeMetrics):
    def __init__(self, node_id: int) -> None:
        super().__init__("broker", node_id)
        r = self.registry
        self.state = Enum(
            "kafka_broker_state",
            "The broker's state (registration draft)",
            states=STATES,
            registry=r,
        )
        self.state.state("offline")
        self.broker_epoch = Gauge("kafka_broker_epoch", "Current broker epoch", registry=r)
        self.redirected = Counter(
            "kafka_server_num_messages_redirected",
            "KIP-590: requests forwarded to the controller in an Envelope",
            ["api"],
            registry=r,
        )
        self.forwarding = Gauge(
            "kafka_server_num_client_forwarding_to_controller",
            "KIP-590: client requests waiting on a forward to the controller",
            registry=r,
        )
        self.forwarding_auth_failures = Counter(
            "kafka_server_request_forwarding_to_controller_authorization_fail",
            "KIP-590: Envelopes the controller refused with CLUSTER_AUTHORIZATION_FAILED",
            registry=r,
        )
        self.metadata_offset = Gauge(
            "kafka_broker_metadata_offset", "Controller metadata offset applied", registry=r
        )


class ControllerMetrics(NodeMetrics):
    def __init__(self, node_id: int) -> None:
        super().__init__("controller", node_id)
        r = self.registry
        self.active = Gauge(
            "kafka_controller_active", "1 when this controller is active", registry=r
        )
        self.epoch = Gauge("kafka_controller_epoch", "Controller epoch", registry=r)
        self.metadata_offset = Gauge(
            "kafka_controller_metadata_offset", "Offset of the last metadata record", registry=r
        )
        self.broker_state = Gauge(
            "kafka_controller_broker_state",
            "1 for each registered broker's current state (registration draft)",
            ["broker_id", "state"],
            registry=r,
        )
        self.envelopes = Counter(
            "kafka_controller_envelope_requests",
            "KIP-590: Envelopes received, by outcome",
            ["result"],
            registry=r,
        )

    def set_broker_state(self, broker_id: int, state: str | None) -> None:
        for s in STATES:
            self.broker_state.labels(str(broker_id), s).set(1 if s == state else 0)
