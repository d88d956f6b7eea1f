"""Image profiles and the container configuration they give (no engine needed): recognition
from the image name, templates filled from a block of loopback ports, user profile files, and
one-line errors for bad ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conformance.targets import TargetError, TargetOptions, make_target
from conformance.targets.base import Endpoint
from conformance.targets.docker import DockerTarget, parse_image
from conformance.targets.profiles import builtin_names, load_profile


@pytest.mark.parametrize(
    ("image", "repository", "version"),
    [
        ("apache/kafka:3.9.1", "apache/kafka", "3.9.1"),
        ("ghcr.io/tansu-io/tansu:0.6", "ghcr.io/tansu-io/tansu", "0.6"),
        ("localhost:5000/tansu", "localhost:5000/tansu", "latest"),
        ("localhost:5000/tansu:1.0", "localhost:5000/tansu", "1.0"),
        ("tansu@sha256:0123456789abcdef0123", "tansu", "0123456789ab"),
    ],
)
def test_image_names_give_repository_and_version(image, repository, version) -> None:
    assert parse_image(image) == (repository, version)


@pytest.mark.parametrize(
    ("image", "profile", "name", "version"),
    [
        ("apache/kafka:3.9.1", "kafka-kraft", "kafka", "3.9.1"),
        ("apache/kafka-native:3.9.1", "kafka-kraft", "kafka-native", "3.9.1"),
        ("confluentinc/cp-kafka:7.6.0", "kafka-kraft", "cp-kafka", "7.6.0"),
        ("ghcr.io/tansu-io/tansu:0.6", "tansu", "tansu", "0.6"),
        ("kafka-conformance:0.1.0", "reference", "kafka-conformance", "0.1.0"),
        ("bitnami/kafka:3.9?profile=kafka-zookeeper", "kafka-zookeeper", "kafka", "3.9"),
        ("mycorp/broker:2?profile=tansu", "tansu", "broker", "2"),
    ],
)
def test_profile_recognised_or_named(image, profile, name, version) -> None:
    t = make_target(TargetOptions(target=f"docker:{image}"))
    assert isinstance(t, DockerTarget)
    assert (t.profile.name, t.name, t.version, t.kind) == (profile, name, version, "docker")
    assert t.client_listener_types == t.profile.client_listener_types


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("docker:mycorp/broker:2", "no docker profile recognises the image 'mycorp/broker'"),
        ("docker:apache/kafka:3.9.1?profile=kraft", "unknown docker profile 'kraft'"),
        ("docker:apache/kafka:3.9.1?profile=/nonexistent/p.toml", "cannot read docker profile"),
        ("docker:apache/kafka:3.9.1?mode=zookeeper", "unknown option(s) mode (known: profile)"),
    ],
)
def test_bad_docker_targets_are_one_line(target, message) -> None:
    with pytest.raises(TargetError) as e:
        make_target(TargetOptions(target=target))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_every_project_profile_is_valid_and_recognises_only_its_own_images() -> None:
    assert builtin_names() == ["kafka-kraft", "kafka-zookeeper", "reference", "tansu"]
    profiles = {n: load_profile(n) for n in builtin_names()}
    samples = {
        "kafka-kraft": ["apache/kafka", "kafka", "confluentinc/cp-kafka"],
        "reference": ["kafka-conformance", "ghcr.io/me/kafka-conformance"],
        "tansu": ["tansu", "ghcr.io/tansu-io/tansu", "kc-test/tansu"],
    }
    for owner, images in samples.items():
        for image in images:
            assert [n for n, p in profiles.items() if p.matches(image)] == [owner], image
    assert not profiles["kafka-zookeeper"].images  # chosen by name only


def _configured(image: str, base: int, zookeeper: str | None = None) -> tuple[DockerTarget, dict]:
    t = DockerTarget.from_spec(image)
    t.port = base
    return t, t.run_config(zookeeper)


def test_kafka_kraft_listens_on_loopback_ports_of_its_block() -> None:
    t, cfg = _configured("apache/kafka:3.9.1", 21000)
    env = cfg["environment"]
    assert cfg["image"] == "apache/kafka:3.9.1" and cfg["network_mode"] == "host"
    assert "ports" not in cfg and "command" not in cfg  # host network: nothing published
    assert env["KAFKA_LISTENERS"] == (
        "PLAINTEXT://127.0.0.1:21000,CONTROLLER://127.0.0.1:21001,INTERNAL://127.0.0.1:21002"
    )
    assert env["KAFKA_ADVERTISED_LISTENERS"].startswith("PLAINTEXT://127.0.0.1:21000,")
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == "1@127.0.0.1:21001"
    assert env["KAFKA_PROCESS_ROLES"] == "broker,controller" and len(env["CLUSTER_ID"]) == 22
    assert "KAFKA_ZOOKEEPER_CONNECT" not in env
    assert (t.endpoint("client"), t.endpoint("controller")) == (
        Endpoint("127.0.0.1", 21000),
        Endpoint("127.0.0.1", 21001),
    )
    assert t.profile.node_id == 1 and t.client_listener_types == ("broker",)


def test_kafka_zookeeper_mode_names_the_zookeeper_the_target_starts() -> None:
    t, cfg = _configured("bitnami/kafka:3.9?profile=kafka-zookeeper", 22000, "127.0.0.1:2999")
    env = cfg["environment"]
    assert env["KAFKA_ZOOKEEPER_CONNECT"] == "127.0.0.1:2999" and env["KAFKA_BROKER_ID"] == "1"
    assert "KAFKA_PROCESS_ROLES" not in env and t.profile.zookeeper
    assert env["KAFKA_LISTENERS"] == "PLAINTEXT://127.0.0.1:22000,INTERNAL://127.0.0.1:22001"
    assert t.client_listener_types == ("zkBroker",)


def test_reference_image_is_a_serve_command_line_on_its_port_block() -> None:
    t, cfg = _configured("kafka-conformance:0.1.0", 23000)
    assert cfg["command"] == [
        "serve",
        "--host",
        "127.0.0.1",
        "--port-base",
        "23000",
        "--brokers",
        "3",
        "--data-dir",
        "/var/lib/kafka-conformance",
        "--client-controller-listener",
    ]
    # a restart of broker 1 is a restart of the container, whose data folder outlives it
    assert t.profile.nodes == {1: "client", 2: "broker2", 3: "broker3"}
    assert t.endpoint("broker3") == Endpoint("127.0.0.1", 23103)
    # serve's layout: controller at the base, broker 1's client listener at base+101, the
    # nodes' metrics up to base+303: the block covers them all
    assert t.profile.block == 304
    assert t.endpoint("client") == Endpoint("127.0.0.1", 23101)
    assert t.endpoint("controller") == Endpoint("127.0.0.1", 23000)
    assert t.endpoint("controller_client") == Endpoint("127.0.0.1", 23050)
    assert (t.profile.ready_check, t.profile.ready_brokers) == ("metadata", 3)


def test_tansu_profile_is_the_tansu_targets_command_line() -> None:
    from conformance.targets.tansu import TansuTarget

    t, cfg = _configured("kc-test/tansu:0.6.0", 24000)
    process = TansuTarget(port=24000)
    assert cfg["command"] == process.command()[1:]  # the same arguments after the executable
    assert cfg["environment"] == {"RUST_LOG": "warn"}
    assert t.client_listener_types == process.client_listener_types


USER_TOML = """
description = "my broker"
command = ["--listen", "{host}:{client_port}", "--admin", "{admin_port}"]
node_id = 7
tmpfs = ["/scratch"]
volumes = { "/etc/mine.conf" = "/etc/broker.conf" }
[env]
LOG = "{port}"
[ports]
client = 0
admin = 4
[ready]
check = "metadata"
brokers = 1
timeout = 9
"""


def test_a_users_profile_file_toml_or_json(tmp_path: Path) -> None:
    (tmp_path / "mine.toml").write_text(USER_TOML)
    import tomllib

    (tmp_path / "mine.json").write_text(json.dumps(tomllib.loads(USER_TOML)))
    for name in ("mine.toml", "mine.json"):
        t, cfg = _configured(f"mycorp/broker:2?profile={tmp_path / name}", 25000)
        assert t.profile.name == "mine" and t.profile.block == 5
        assert cfg["command"] == ["--listen", "127.0.0.1:25000", "--admin", "25004"]
        assert cfg["environment"] == {"LOG": "25000"}
        assert t.profile.ready_timeout == 9 and t.restartable == {}
        assert cfg["volumes"] == {"/etc/mine.conf": {"bind": "/etc/broker.conf", "mode": "ro"}}
        assert cfg["tmpfs"] == {"/scratch": ""}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.replace("{admin_port}", "{adminport}"), "unknown template name {adminport}"),
        (lambda s: s.replace("client = 0", "cliente = 0"), "at ports: 'client' is a required"),
        (lambda s: s.replace('"metadata"', '"http"'), "at ready/check: 'http' is not one of"),
        (lambda s: s.replace("[env]", "[env"), "malformed TOML"),
        (lambda s: s.replace('"{port}"', '"{port"'), "malformed template"),
        (lambda s: s.replace("node_id = 7", "zookeeper = 1"), "at zookeeper: 1 is not of type"),
        (lambda s: s.replace('"/scratch"', '"scratch"'), "at tmpfs/0: 'scratch' does not match"),
        (lambda s: s.replace('"{port}"', '"{zookeeper}"'), "unknown template name {zookeeper}"),
        (lambda s: s + '\n[nodes]\n2 = "broker2"\n', "nodes name the port 'broker2'"),
    ],
)
def test_bad_profile_files_are_one_line(change, message, tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(change(USER_TOML))
    with pytest.raises(TargetError) as e:
        DockerTarget.from_spec(f"mycorp/broker:2?profile={path}")
    assert message in str(e.value), str(e.value)
    assert "docker profile" in str(e.value) and "bad" in str(e.value)  # names the profile
    assert "\n" not in str(e.value)


def test_readmes_profile_example_is_a_valid_profile(tmp_path: Path) -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    example = re.search(r"```toml\n(.*?)```", readme, re.S)
    assert example, "README shows a profile"
    (tmp_path / "broker.toml").write_text(example.group(1))
    t, cfg = _configured(f"mycorp/broker:2.1?profile={tmp_path / 'broker.toml'}", 26000)
    assert cfg["command"] == ["--listen", "127.0.0.1:26000", "--admin", "26001"]
    assert t.profile.ready_check == "metadata" and t.profile.node_id == 1
