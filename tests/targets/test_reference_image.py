"""The repository's Dockerfile: the reference cluster's image builds from an official Python image
and, started by the docker target (profile ``reference``), serves three brokers on 127.0.0.1."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.targets.base import wait_listening
from conformance.targets.docker import DockerTarget, metadata_brokers

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "kc-test/kafka-conformance:test"


def base_image() -> str:
    """The Dockerfile's default base image (its ``ARG PYTHON=...``)."""
    m = re.search(r"^ARG PYTHON=(\S+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert m, "the Dockerfile names its base image in ARG PYTHON"
    return m.group(1)


def test_the_dockerfile_builds_the_reference_image_that_serves(engine, no_leftovers) -> None:
    from docker.errors import ImageNotFound

    base = base_image()
    assert base.startswith("python:")  # an official Python image
    try:
        engine.images.get(base)
    except ImageNotFound:
        pytest.skip(f"the base image {base} is not on this machine (pull it to build the image)")
    image, _ = engine.images.build(path=str(ROOT), tag=IMAGE, rm=True)
    try:
        t = DockerTarget.from_spec(IMAGE)
        assert t.profile is not None and t.profile.name == "reference"
        with t:
            assert metadata_brokers(t.bootstrap[0], 10) == 3
            assert t.controller is not None and wait_listening(t.controller, 5)
    finally:
        engine.images.remove(image.id, force=True)
