"""The docker target against a real engine and a tansu image built here: the same verdicts as
tansu run as a plain process, readiness checks that can fail, the container's log kept when a
start fails, and no container left behind however the run ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.targets import TargetError
from conformance.targets.base import Endpoint, wait_listening
from conformance.targets.docker import OWNER_LABEL, DockerTarget, remove_orphans
from tests.support.runs import run_cli, verdicts
from tests.targets.conftest import SEED, TANSU_REPOSITORY, containers, run_each


@pytest.fixture(scope="module")
def runs(tansu_image, tmp_path_factory):
    """The selection against the image and against tansu as a process, with one seed."""
    image, _ = tansu_image
    tmp = tmp_path_factory.mktemp("docker-vs-process")
    return run_each({"docker": f"docker:{image}", "process": "tansu"}, tmp)


def test_the_image_gives_the_verdicts_of_the_process(runs) -> None:
    (dproc, docker_run), (pproc, process_run) = runs["docker"], runs["process"]
    assert dproc.returncode == pproc.returncode == 1, dproc.stderr[-2000:]  # tansu FAILs MUSTs
    got, want = verdicts(docker_run), verdicts(process_run)
    keys = got.keys() | want.keys()
    diff = {k: (got.get(k), want.get(k)) for k in keys if got.get(k) != want.get(k)}
    assert not diff, sorted(diff.items())[:10]
    assert {"PASS", "FAIL", "UNSUPPORTED"} <= set(got.values())
    families = {rid.split(".")[0] for _, rid in got}
    assert {"KIP-78", "KIP-536", "KIP-42", "PROTOCOL"} <= families
    # the restart checks ran: the suite restarted the container's broker
    assert got[("kip-78/metadata/v2+/cluster-id/survives-restart", "KIP-78.R6")] == "PASS"


def test_the_run_names_the_image_its_tag_and_where_it_listened(runs, tansu_image) -> None:
    _, run = runs["docker"]
    _, version = tansu_image
    m = run.manifest
    assert (m["target_kind"], m["target_name"], m["target_version"]) == ("docker", "tansu", version)
    assert m["bootstrap"].startswith("127.0.0.1:")
    assert m["hypothesis_seed"] == int(SEED)
    assert runs["docker"][0].stdout.count(f"image {TANSU_REPOSITORY}:{version}, profile tansu")


def test_containers_are_removed_when_the_run_ends(runs, engine) -> None:
    assert not containers(engine)


def _profile(tmp_path: Path, command: str, ready: str = 'check = "tcp"\ntimeout = 3') -> Path:
    path = tmp_path / "broken.toml"
    path.write_text(
        f'description = "tansu, broken on purpose"\ncommand = {command}\n'
        f"[ports]\nclient = 0\nother = 1\n[ready]\n{ready}\n"
    )
    return path


def test_a_failed_start_keeps_the_containers_log_beside_the_results(
    tansu_image, tmp_path: Path, no_leftovers
) -> None:
    image, _ = tansu_image
    profile = _profile(tmp_path, '["broker", "--no-such-option"]')
    results = tmp_path / "results"
    proc = run_cli(
        "--target", f"docker:{image}?profile={profile}", "--results-dir", str(results),
        cwd=tmp_path, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    err = proc.stderr.strip()
    assert "\n" not in err and "Traceback" not in err
    assert "(profile broken) exited (code 2) before it served on 127.0.0.1:" in err
    logs = list(results.glob("*/docker-kc-broken-*.log"))  # in the run's own folder
    assert len(logs) == 1 and f"its log: {logs[0]}" in err
    assert "--no-such-option" in logs[0].read_text()  # tansu's own complaint


def test_a_container_that_never_serves_costs_its_timeout(
    tansu_image, tmp_path: Path, no_leftovers
) -> None:
    image, _ = tansu_image
    # tansu listens, but on the block's other port: the client port never opens
    url = "tcp://{host}:{other_port}"
    command = f'["broker", "--listener-url", "{url}", "--storage-engine", "memory://tansu/"]'
    t = DockerTarget.from_spec(f"{image}?profile={_profile(tmp_path, command)}")
    t.logs_dir = tmp_path / "logs"
    started = time.monotonic()
    with pytest.raises(TargetError, match=r"did not pass its readiness check \(tcp\)") as e:
        t.start()
    assert time.monotonic() - started < 30
    log = next((tmp_path / "logs").glob("docker-kc-broken-*.log"))
    assert f"its log: {log}" in str(e.value) and "listening on" in log.read_text()


def test_the_metadata_check_waits_for_the_brokers_it_names(
    tansu_image, tmp_path: Path, no_leftovers
) -> None:
    image, _ = tansu_image
    command = (
        '["broker", "--listener-url", "tcp://{host}:{client_port}", "--advertised-listener-url", '
        '"tcp://{host}:{client_port}", "--storage-engine", "memory://tansu/"]'
    )
    one = _profile(tmp_path, command, 'check = "metadata"\nbrokers = 1\ntimeout = 20')
    t = DockerTarget.from_spec(f"{image}?profile={one}")
    with t:
        assert wait_listening(t.bootstrap[0], 1)
    two = _profile(tmp_path, command, 'check = "metadata"\nbrokers = 2\ntimeout = 3')
    t = DockerTarget.from_spec(f"{image}?profile={two}")
    t.logs_dir = tmp_path
    with pytest.raises(TargetError, match=r"readiness check \(metadata\)"):
        t.start()  # tansu has one broker: the check must not pass


def test_restart_and_the_version_of_an_untagged_image(tansu_image, engine, no_leftovers) -> None:
    _, version = tansu_image
    t = DockerTarget.from_spec(TANSU_REPOSITORY)  # :latest, whose label names the version
    assert t.version == "latest"
    with t:
        assert t.version == version
        (node,) = t.restartable
        spawned, served = t.started[node]
        assert spawned <= served
        container = engine.containers.get(t.container_name)
        assert container.attrs["HostConfig"]["NetworkMode"] == "host"
        started_at = container.attrs["State"]["StartedAt"]
        t.restart_broker(node)
        container.reload()
        assert container.attrs["State"]["StartedAt"] != started_at  # restarted, same container
        assert wait_listening(t.bootstrap[0], 5) and t.started[node][0] >= served
    with pytest.raises(Exception, match="No such container"):
        engine.containers.get(container.id)


def test_an_image_not_here_is_one_clear_error(engine) -> None:
    t = DockerTarget.from_spec("kc-test/not-built-here:1?profile=tansu")
    with pytest.raises(TargetError, match="is not on this machine and cannot be pulled"):
        t.start()


def test_sigterm_ends_the_run_and_removes_its_container(
    tansu_image, engine, tmp_path: Path, no_leftovers
) -> None:
    image, _ = tansu_image
    proc = subprocess.Popen(
        [sys.executable, "-m", "conformance", "run", "--target", f"docker:{image}",
         "--no-report", "--results-dir", str(tmp_path)],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        owner = f":{proc.pid}"
        deadline = time.monotonic() + 60
        while not any(c.labels[OWNER_LABEL].endswith(owner) for c in containers(engine)):
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr
            time.sleep(0.1)
        time.sleep(1)  # into the suite
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(60) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not [c.name for c in containers(engine) if c.labels[OWNER_LABEL].endswith(owner)]


KILLED = """
import sys, time
from conformance.targets.docker import DockerTarget
t = DockerTarget.from_spec(sys.argv[1])
t.start()
print(t.container_name, flush=True)
time.sleep(600)
"""


def test_a_killed_owners_container_is_removed_by_the_next_start(
    tansu_image, engine, no_leftovers
) -> None:
    image, _ = tansu_image
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, image], stdout=subprocess.PIPE, text=True
    )
    try:
        name = proc.stdout.readline().strip()
    finally:
        os.kill(proc.pid, signal.SIGKILL)  # no atexit, no stop: the container stays
        proc.wait()
    assert engine.containers.get(name).status == "running"
    assert remove_orphans(engine) == [name]
    assert name not in [c.name for c in containers(engine)]


def test_a_profile_that_needs_zookeeper_gets_one_on_the_loopback(
    tansu_image, engine, tmp_path: Path, no_leftovers
) -> None:
    from conformance.targets.zookeeper import srvr

    image, _ = tansu_image
    command = (
        '["broker", "--listener-url", "tcp://{host}:{client_port}", "--storage-engine", '
        '"memory://tansu/"]'
    )
    path = _profile(tmp_path, command)
    path.write_text("zookeeper = true\n" + path.read_text() + '[env]\nZK = "{zookeeper}"\n')
    t = DockerTarget.from_spec(f"{image}?profile={path}")
    with t:
        zk = t.zookeeper
        assert zk and zk.startswith("127.0.0.1:")
        env = engine.containers.get(t.container_name).attrs["Config"]["Env"]
        assert f"ZK={zk}" in env
        host, port = zk.split(":")
        assert "Mode: standalone" in srvr(host, int(port))
    assert not wait_listening(Endpoint(host, int(port)), 0.5)  # stopped with the target


@pytest.fixture
def no_exec_image(tansu_image, engine, tmp_path: Path):
    """tansu's image with an entrypoint that is not there: the container is created, and its
    start fails ("exec ... no such file or directory")."""
    (tmp_path / "Dockerfile").write_text(
        f'FROM {tansu_image[0]}\nENTRYPOINT ["/no-such-entrypoint"]\n'
    )
    image, _ = engine.images.build(
        path=str(tmp_path), tag="kc-test/no-exec:1", rm=True, forcerm=True
    )
    yield "kc-test/no-exec:1"
    engine.images.remove(image.id, force=True)


def test_a_container_that_cannot_start_is_removed_and_its_zookeeper_stopped(
    no_exec_image, tmp_path: Path, no_leftovers
) -> None:
    path = _profile(tmp_path, '["broker"]')
    path.write_text("zookeeper = true\n" + path.read_text())
    t = DockerTarget.from_spec(f"{no_exec_image}?profile={path}")
    with pytest.raises(TargetError, match=r"no-such-entrypoint.*no such file or directory") as e:
        t.start()
    assert str(e.value).startswith(f"docker: cannot start {no_exec_image}: ")
    assert t._container is None and t._zk is None and t.zookeeper
    host, port = t.zookeeper.split(":")
    assert not wait_listening(Endpoint(host, int(port)), 0.5)  # the side-car stopped too
    # (no_leftovers: the created container was removed)


def test_a_container_made_though_its_creation_raised_is_removed(
    tansu_image, engine, monkeypatch, tmp_path: Path, no_leftovers
) -> None:
    """The engine made the container, but the call timed out: the start's label finds it."""
    import requests
    from docker.models.containers import ContainerCollection

    create = ContainerCollection.create

    def made_then_timed_out(self, *args, **kwargs):
        create(self, *args, **kwargs)
        raise requests.exceptions.ReadTimeout("read timed out")

    monkeypatch.setattr(ContainerCollection, "create", made_then_timed_out)
    t = DockerTarget.from_spec(tansu_image[0])
    with pytest.raises(TargetError, match=r"cannot start .*: read timed out"):
        t.start()
    assert t._container is None and not containers(engine)
