"""The reference cluster in a container: the repository's Dockerfile builds (on the official
Python image when it is here, else on the Debian-made one of ``conformance.targets.images``) and,
started by the docker target (profile ``reference``), serves three brokers on 127.0.0.1; the
reference profile itself runs for real with the host's Python mounted."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

from conformance.targets import images
from conformance.targets.base import metadata_brokers, wait_listening
from conformance.targets.docker import DockerTarget
from conformance.targets.profiles import PROFILES

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "kc-test/kafka-conformance:test"


def base_image() -> str:
    """The Dockerfile's default base image (its ``ARG PYTHON=...``)."""
    m = re.search(r"^ARG PYTHON=(\S+)$", (ROOT / "Dockerfile").read_text(), re.M)
    assert m, "the Dockerfile names its base image in ARG PYTHON"
    return m.group(1)


def test_the_dockerfile_builds_the_reference_image_that_serves(engine, no_leftovers) -> None:
    """Built as set-up builds it: on the official base if pulled, else on one made from Debian
    (a cold machine pays about 1.5 min for that base once; warm, the layers are cached)."""
    assert base_image() == images.OFFICIAL_PYTHON  # the Dockerfile's default: an official image
    base = images.python_base(engine)
    assert base in (images.OFFICIAL_PYTHON, images.PYTHON)
    image = engine.images.get(images.reference_image(engine, IMAGE))
    assert image.attrs["Config"]["Entrypoint"] == ["kafka-conformance"]
    try:
        t = DockerTarget.from_spec(IMAGE)
        assert t.profile is not None and t.profile.name == "reference"
        with t:
            assert metadata_brokers(t.bootstrap[0], 10) == 3
            assert t.controller is not None and wait_listening(t.controller, 5)
            # the controller's listener for client principals (KIP-590.R2 is judged on it)
            assert t.controller_client is not None and wait_listening(t.controller_client, 5)
    finally:
        engine.images.remove(IMAGE)  # the tag only: set-up's image and the layer cache stay


HOST_PYTHON_DOCKERFILE = """\
FROM scratch
COPY marker /marker
ENTRYPOINT ["{entrypoint}"]
"""


def interpreter_paths() -> list[str]:
    """The folders this interpreter runs from, wherever they are (a virtual environment under
    /tmp too, which the profile's tmpfs on /tmp would hide if it were not mounted over it): its
    prefixes, its executable's real folder, every folder on sys.path, and where the project's
    packages are imported from (an editable install's checkout); a folder inside another listed
    one is left out."""
    import conformance
    import reference_impl

    found = {sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix}
    found.update(str(Path(m.__file__).parents[1]) for m in (conformance, reference_impl))
    found.add(str(Path(sys.executable).resolve().parent))
    found.update(p for p in sys.path if p and Path(p).is_dir())
    paths = sorted({os.path.realpath(p) for p in found} | {os.path.abspath(p) for p in found})
    return [p for p in paths if not any(Path(p).is_relative_to(q) and p != q for q in paths)]


def host_python_image(engine, tmp_path: Path) -> tuple[Any, Path]:
    """(image, profile): an empty image whose entrypoint is this checkout's kafka-conformance,
    and the reference profile with the host's Python mounted read-only (no build of the
    project: a few seconds); the caller removes the image."""
    entrypoint = Path(sys.executable).parent / "kafka-conformance"
    (tmp_path / "marker").write_text("the host's Python is mounted, not installed\n")
    (tmp_path / "Dockerfile").write_text(HOST_PYTHON_DOCKERFILE.format(entrypoint=entrypoint))
    image, _ = engine.images.build(
        path=str(tmp_path), tag="kc-test/kafka-conformance:host", rm=True, forcerm=True
    )
    mounts = [p for p in ("/usr", "/lib", "/lib64", "/bin", "/etc") if Path(p).exists()]
    mounts += interpreter_paths()
    profile = tmp_path / "reference-host.toml"
    volumes = ", ".join(f'"{p}" = "{p}"' for p in sorted(set(mounts)))
    profile.write_text(
        f'tmpfs = ["/tmp"]\nvolumes = {{ {volumes} }}\n' + (PROFILES / "reference.toml").read_text()
    )
    return image, profile


def test_the_reference_profile_serves_with_the_hosts_python(
    engine, tmp_path: Path, no_leftovers
) -> None:
    """The reference profile's command line, port block and readiness check against a real
    container: an empty image whose entrypoint is this checkout's kafka-conformance, with the
    host's Python mounted read-only instead of one installed in the image."""
    image, profile = host_python_image(engine, tmp_path)
    try:
        t = DockerTarget.from_spec(f"kc-test/kafka-conformance:host?profile={profile}")
        with t:  # ready: Metadata lists the three brokers
            assert metadata_brokers(t.bootstrap[0], 10) == 3
            assert t.controller is not None and wait_listening(t.controller, 5)
            assert t.bootstrap[0].port == t.controller.port + 101
    finally:
        engine.images.remove(image.id, force=True)
