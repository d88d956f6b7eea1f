"""The kafka:VERSION target: its options, the release cache, and a cluster started and stopped by
pid (the whole-suite judgement of Kafka is tests/suite/runs/test_against_kafka.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from conformance.targets import TargetError, TargetOptions, kafka, make_target
from conformance.targets.base import metadata_brokers
from conformance.targets.class_archive import ClassArchive
from conformance.targets.kafka import KafkaTarget
from conformance.targets.maven import cached_broker

CI_RELEASE = "3.9.1"


@pytest.mark.parametrize(
    ("spec", "name", "store", "brokers", "controllers", "listener"),
    [
        ("kafka:3.9.1", "apache-kafka", "kraft", 3, 1, ("broker",)),
        ("kafka:4.4.0?brokers=1&controllers=3", "apache-kafka", "kraft", 1, 3, ("broker",)),
        ("kafka:3.9.1?store=zookeeper", "apache-kafka-zookeeper", "zookeeper", 3, 1, ("zkBroker",)),
    ],
)
def test_options(spec, name, store, brokers, controllers, listener) -> None:
    t = make_target(TargetOptions(target=spec))
    assert isinstance(t, KafkaTarget)
    assert (t.name, t.version, t.kind) == (name, spec.split(":")[1].split("?")[0], spec)
    assert (t.store, t.broker_count, t.controller_count) == (store, brokers, controllers)
    assert t.client_listener_types == listener


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("kafka:3.9", "not a release number"),
        ("kafka:latest", "not a release number"),
        ("kafka:4.0.2?store=zookeeper", "no ZooKeeper mode"),
        ("kafka:3.9.1?store=raft", "store must be kraft or zookeeper"),
        ("kafka:3.9.1?brokers=0", "brokers must be 1 to 9"),
        ("kafka:3.9.1?controllers=x", "controllers must be 1 to 5"),
        ("kafka:3.9.1?store=zookeeper&controllers=2", "controllers=N is for KRaft"),
        ("kafka:3.9.1?colour=red", "unknown option(s) colour"),
        ("kafka:3.9.1?security=tls", "security must be none or sasl"),
        ("kafka:3.4.1?security=sasl", "in KRaft needs Apache Kafka 3.5"),
    ],
)
def test_bad_options_are_one_line_errors(spec, says) -> None:
    with pytest.raises(TargetError) as e:
        make_target(TargetOptions(target=spec))
    assert says in str(e.value) and "\n" not in str(e.value)


def test_fetch_names_a_release_it_cannot_resolve(tmp_path) -> None:
    env = {**os.environ, "KC_CACHE_DIR": str(tmp_path)}
    cmd = [sys.executable, "-m", "conformance", "fetch", "kafka:9.9.9"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 2
    line = proc.stderr.strip()
    assert "\n" not in line and "kafka_2.13:9.9.9" in line and "cannot be resolved" in line
    assert not (tmp_path / "kafka" / "9.9.9").exists()


def test_fetch_of_a_cached_release_says_so() -> None:
    if cached_broker(CI_RELEASE) is None:
        pytest.skip(
            f"Apache Kafka {CI_RELEASE} is not cached (kafka-conformance fetch kafka:{CI_RELEASE})"
        )
    cmd = [sys.executable, "-m", "conformance", "fetch", f"kafka:{CI_RELEASE}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("(cached)"), proc.stderr


def test_a_broker_restarts_and_every_process_stops_by_pid(tmp_path, monkeypatch) -> None:
    """One broker and one controller: the restarted broker serves again; stop ends both pids.
    With no class archive yet, the broker writes one when it stops, and its next JVM maps it."""
    archive = ClassArchive(tmp_path / "classes-test.jsa")
    monkeypatch.setattr(kafka, "class_archive", lambda classpath, java: archive)
    target = KafkaTarget.from_spec(f"{CI_RELEASE}?brokers=1")
    target.logs_dir = tmp_path
    target.start()
    try:
        pids = target.pids
        assert len(pids) == 2
        (node_id,) = target.restartable
        before = target.started[node_id]
        target.restart_broker(node_id)
        assert target.started[node_id][0] > before[1]
        assert metadata_brokers(target.bootstrap[0], 10.0) == 1
        (new,) = set(target.pids) - set(pids)  # the broker has a new pid
        assert archive.path.stat().st_size > 0
        with open(f"/proc/{new}/cmdline", "rb") as f:
            assert f"-XX:SharedArchiveFile={archive.path}".encode() in f.read().split(b"\0")
        pids = target.pids
    finally:
        target.stop()
    assert [p.name for p in tmp_path.glob("*.tmp")] == []
    for pid in pids:
        assert (
            not os.path.exists(f"/proc/{pid}")
            or "zombie" in open(f"/proc/{pid}/status").read().lower()
        )
    assert (tmp_path / "kafka" / "broker-1.log").exists()


def test_run_names_a_release_it_cannot_resolve_before_starting_anything(tmp_path) -> None:
    env = {**os.environ, "KC_CACHE_DIR": str(tmp_path / "cache")}
    cmd = [sys.executable, "-m", "conformance", "run", "--target", "kafka:9.9.8"]
    cmd += ["--results-dir", str(tmp_path / "results")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.startswith("kafka-conformance: error: org.apache.kafka:kafka_2.13:9.9.8")
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "results").exists()


def test_cluster_ids_never_start_with_a_dash(monkeypatch) -> None:
    """kafka-storage format reads an id starting with "-" as an option and fails."""
    import uuid

    from conformance.targets import kafka

    dashed = uuid.UUID(bytes=bytes([0xF8]) + bytes(15))  # Base64 "-A...": a dash first
    drawn = iter([dashed, dashed, uuid.UUID(int=1)])
    monkeypatch.setattr(kafka.uuid, "uuid4", lambda: next(drawn))
    assert kafka._cluster_id() == "AAAAAAAAAAAAAAAAAAAAAQ"


@pytest.mark.parametrize(
    ("spec", "session", "detection"),
    [
        ("3.9.1", ("broker.session.timeout.ms", "2000"), 2.0),
        ("3.9.1?store=zookeeper", ("zookeeper.session.timeout.ms", "6000"), 6.0),
    ],
)
def test_test_run_settings_notice_failures_in_seconds(tmp_path, spec, session, detection) -> None:
    """The broker's properties shorten failure detection (README, "Test-run settings"), and the
    target states how soon it notices a dead broker, which DURABILITY's waits derive from."""
    from conformance.targets.kafka import Node

    t = KafkaTarget.from_spec(spec)
    t._dir = tmp_path
    broker = Node(1, "broker", 9092, tmp_path / "b.properties", tmp_path / "b.log")
    settings = t._settings(broker, "1000@127.0.0.1:9093", "127.0.0.1:2181/kafka")
    assert settings[session[0]] == session[1]
    assert settings["replica.lag.time.max.ms"] == "10000"
    assert settings["group.initial.rebalance.delay.ms"] == "0"
    assert settings["transaction.abort.timed.out.transaction.cleanup.interval.ms"] == "1000"
    assert t.failure_detection_s == detection


def test_test_run_settings_spare_the_clusters_cpu(tmp_path) -> None:
    """Internal topics of one partition on every broker (KRaft and ZooKeeper mode), a no-op
    metadata record every 5 s on KRaft controllers, a heartbeat every 400 ms in a 2 s session,
    fewer request and background threads on every node (benchmarks/README.md, sessions 15-17,
    K)."""
    from conformance.targets.kafka import Node

    internal = (
        "offsets.topic.num.partitions",
        "transaction.state.log.num.partitions",
        "share.coordinator.state.topic.num.partitions",
    )
    broker = Node(1, "broker", 9092, tmp_path / "b.properties", tmp_path / "b.log")
    controller = Node(1000, "controller", 9093, tmp_path / "c.properties", tmp_path / "c.log")
    for spec in ("3.9.1", "3.9.1?store=zookeeper", f"{CI_RELEASE}?security=sasl"):
        t = KafkaTarget.from_spec(spec)
        t._dir = tmp_path
        t.passwords = {"admin": "a-pw", "alice": "b-pw"}
        b = t._settings(broker, "1000@127.0.0.1:9093", "127.0.0.1:2181/kafka")
        assert [b[k] for k in internal] == ["1", "1", "1"], spec
        if t.store == "kraft":
            c = t._settings(controller, "1000@127.0.0.1:9093", None)
            assert c["metadata.max.idle.interval.ms"] == "5000"
            assert "metadata.max.idle.interval.ms" not in b
            assert (b["broker.heartbeat.interval.ms"], b["broker.session.timeout.ms"]) == (
                "400",
                "2000",
            )
            assert (c["num.network.threads"], c["num.io.threads"]) == ("1", "2")
        threads = ("num.network.threads", "num.io.threads", "background.threads")
        assert [b[k] for k in threads] == ["1", "2", "2"], spec
        assert b["group.coordinator.threads"] == "1", spec


def test_reference_test_run_settings() -> None:
    from conformance.targets.reference import ReferenceTarget

    t = ReferenceTarget()
    assert t.overrides["session_timeout_ms"] == 2000
    assert t.broker_overrides["settings"]["replication"] == {"replica_lag_time_max_ms": 10_000}
    assert t.failure_detection_s == 2.0
    assert ReferenceTarget.from_spec("reference:zookeeper").failure_detection_s == 4.0


def test_security_sasl_settings(tmp_path) -> None:
    """security=sasl (issue 40): a SASL_PLAINTEXT broker listener with PLAIN and both SCRAMs,
    StandardAuthorizer and the super user on every node; the controllers' listener SASL, PLAIN."""
    from conformance.targets.kafka import Node

    t = KafkaTarget.from_spec(f"{CI_RELEASE}?security=sasl")
    t._dir = tmp_path
    t.passwords = {"admin": "a-pw", "alice": "b-pw"}
    broker = Node(1, "broker", 9092, tmp_path / "b.properties", tmp_path / "b.log")
    controller = Node(1000, "controller", 9093, tmp_path / "c.properties", tmp_path / "c.log")
    b = t._settings(broker, "1000@127.0.0.1:9093", None)
    c = t._settings(controller, "1000@127.0.0.1:9093", None)
    assert b["listeners"] == "SASL_PLAINTEXT://127.0.0.1:9092"
    assert b["inter.broker.listener.name"] == "SASL_PLAINTEXT"
    assert b["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert 'user_alice="b-pw"' in b["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert c["listeners"] == "CONTROLLER://127.0.0.1:9093"
    assert c["listener.security.protocol.map"].endswith("CONTROLLER:SASL_PLAINTEXT")
    for s in (b, c):
        assert s["authorizer.class.name"].endswith("StandardAuthorizer")
        assert s["super.users"] == "User:admin"
        assert s["listener.name.controller.sasl.enabled.mechanisms"] == "PLAIN"


def test_security_sasl_settings_in_zookeeper_mode(tmp_path) -> None:
    """security=sasl with store=zookeeper: the broker's one listener SASL_PLAINTEXT with PLAIN
    and both SCRAMs, brokers between themselves over it, ZooKeeper's AclAuthorizer."""
    from conformance.targets.kafka import Node

    t = KafkaTarget.from_spec("3.9.1?store=zookeeper&security=sasl")
    t._dir = tmp_path
    t.passwords = {"admin": "a-pw", "alice": "b-pw"}
    broker = Node(1, "broker", 9092, tmp_path / "b.properties", tmp_path / "b.log")
    b = t._settings(broker, "", "127.0.0.1:2181/kafka")
    assert b["listeners"] == b["advertised.listeners"] == "SASL_PLAINTEXT://127.0.0.1:9092"
    assert b["security.inter.broker.protocol"] == "SASL_PLAINTEXT"
    assert b["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    assert 'user_alice="b-pw"' in b["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    assert b["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    assert b["super.users"] == "User:admin"


def test_a_class_archive_is_kept_only_from_a_jvm_that_exited_of_itself(tmp_path) -> None:
    archive = ClassArchive(tmp_path / "classes-x.jsa")
    killed = subprocess.Popen(["sleep", "30"])
    killed.kill()
    killed.wait()
    written = archive.writer("broker1")
    assert written is not None
    written.write_bytes(b"half")
    archive.keep(written, killed)
    assert not archive.path.exists() and not written.exists()
    assert archive.options() == ()
    done = subprocess.Popen(["true"])
    done.wait()
    written.write_bytes(b"whole")
    archive.keep(written, done)
    assert archive.path.read_bytes() == b"whole" and not written.exists()
    assert archive.options() == (f"-XX:SharedArchiveFile={archive.path}",)
    assert archive.writer("broker1") is None


def test_the_format_helper_reports_each_nodes_exit_code() -> None:
    from conformance.targets.format_nodes import exit_codes

    out = "Formatting ...\nFORMAT-EXIT 0 0\nstack trace\nFORMAT-EXIT 1 1\nFORMAT-EXIT x 0\n"
    assert exit_codes(out) == {0: 0, 1: 1}
    assert exit_codes("Exception in thread main") == {}


def test_without_javac_nodes_are_formatted_one_jvm_each(tmp_path, monkeypatch) -> None:
    """No JDK and no helper in the cache: no helper, so the target formats node by node."""
    from conformance.targets import format_nodes

    monkeypatch.setenv("KC_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(format_nodes.shutil, "which", lambda name: None)
    assert format_nodes.helper_classes() is None
