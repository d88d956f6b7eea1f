"""Container images built on this machine when none can be pulled: the reference and Apache Kafka.

With an image registry in reach, use the official images (``python:3.11-slim-bookworm`` under the
repository's ``Dockerfile``, ``apache/kafka:VERSION``). Without one, this module makes them from
what is reachable offline-ish: Debian's package mirror (the one this machine's apt sources name,
or ``$KC_DEBIAN_MIRROR``) and the Kafka jars already fetched from Maven Central
(``kafka-conformance fetch kafka:VERSION``)::

    python -m conformance.targets.images reference kafka:3.9.1

- ``kc-local/debian:bookworm``: a minimal Debian root filesystem (``debootstrap --variant=minbase``)
  imported with ``docker import``; it trusts the host's CA bundle, so that a proxy the host
  trusts is trusted inside too.
- ``kc-local/python:3.11-bookworm``: Debian's Python 3.11 in a virtual environment on the PATH,
  the ``Dockerfile``'s base (its ``PYTHON`` build argument) when the official one is absent.
- ``kafka-conformance:<project version>``: the ``Dockerfile`` built on that base.
- ``kc-local/jre:17-bookworm`` and ``kc-local/kafka:VERSION``: Debian's headless JRE 17, the
  release's cached jars and an entrypoint that turns ``KAFKA_*`` settings into the broker's
  properties as the apache/kafka image does (``KAFKA_FOO_BAR`` is ``foo.bar``; ``__`` is ``_``,
  ``___`` is ``-``) and formats the KRaft storage with ``CLUSTER_ID``.

Each image carries a content key (a label); an image whose key matches is kept, so set-up and the
tests that need the images pay for a build once per machine and change. The reference image is
left to the engine's layer cache: its dependencies' layer depends on ``pyproject.toml`` only.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from conformance.targets.base import TargetError
from conformance.targets.maven import cached_broker, check_version, fetch_broker

ROOT = Path(__file__).resolve().parents[2]
#: the label an image's content key is kept in
KEY_LABEL = "kafka-conformance.key"
#: bumped when what the images hold changes in a way the keys below do not see
RECIPE = "1"
SUITE = "bookworm"
#: the Debian mirror to build from, instead of the one the machine's apt sources name
MIRROR_ENV = "KC_DEBIAN_MIRROR"
#: where apt reads its sources: one-line entries in ``*.list``, deb822 stanzas in ``*.sources``
APT_SOURCES = Path("/etc/apt/sources.list")
APT_SOURCES_D = Path("/etc/apt/sources.list.d")
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")

BASE = "kc-local/debian:bookworm"
PYTHON = "kc-local/python:3.11-bookworm"
JRE = "kc-local/jre:17-bookworm"
KAFKA = "kc-local/kafka"
#: the Dockerfile's own default base (an official Python image)
OFFICIAL_PYTHON = "python:3.11-slim-bookworm"
BUILD_TIMEOUT = 1800

PYTHON_DOCKERFILE = """\
FROM {base}
RUN apt-get update -qq \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
        python3 python3-venv && rm -rf /var/lib/apt/lists/* \\
    && python3 -m venv /opt/python
ENV PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \\
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1
LABEL {label}="{key}"
"""

JRE_DOCKERFILE = """\
FROM {base}
RUN apt-get update -qq \\
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \\
        openjdk-17-jre-headless && rm -rf /var/lib/apt/lists/*
LABEL {label}="{key}"
"""

KAFKA_DOCKERFILE = """\
FROM {base}
COPY libs /opt/kafka/libs
COPY entrypoint.sh /opt/kafka/entrypoint.sh
LABEL org.opencontainers.image.version="{version}" {label}="{key}"
ENTRYPOINT ["/bin/sh", "/opt/kafka/entrypoint.sh"]
"""

#: KAFKA_* settings to broker properties, KRaft storage formatted, then the broker in the
#: foreground (PID 1, so `docker stop` reaches it). Settings named *_OPTS are JVM options.
KAFKA_ENTRYPOINT = r"""#!/bin/sh
set -eu
conf=/opt/kafka/server.properties
: > "$conf"
env | while IFS= read -r line; do
    name=${line%%=*}
    value=${line#*=}
    case "$name" in
        KAFKA_*_OPTS|KAFKA_OPTS|KAFKA_DEBUG|KAFKA_VERSION) continue ;;
        KAFKA_*) ;;
        *) continue ;;
    esac
    key=$(printf '%s' "${name#KAFKA_}" | tr 'A-Z' 'a-z' |
          sed -e 's/___/-/g' -e 's/__/@/g' -e 's/_/./g' -e 's/@/_/g')
    printf '%s=%s\n' "$key" "$value" >> "$conf"
done
grep -q '^log\.dirs=' "$conf" || echo 'log.dirs=/var/lib/kafka/data' >> "$conf"
cp="/opt/kafka/libs/*"
heap=${KAFKA_HEAP_OPTS:--Xmx1G -Xms1G}
jvm="$heap ${KAFKA_JVM_PERFORMANCE_OPTS:--XX:+UseG1GC -Djava.awt.headless=true} ${KAFKA_OPTS:-}"
if grep -q '^process\.roles=' "$conf"; then
    id=${CLUSTER_ID:-$(java -cp "$cp" kafka.tools.StorageTool random-uuid)}
    # shellcheck disable=SC2086
    java -XX:TieredStopAtLevel=1 -cp "$cp" kafka.tools.StorageTool format -t "$id" -c "$conf" \
        --ignore-formatted >/dev/null
fi
# shellcheck disable=SC2086
exec java $jvm -Dorg.slf4j.simpleLogger.defaultLogLevel="${KAFKA_LOG_LEVEL:-warn}" \
    -cp "$cp" kafka.Kafka "$conf"
"""


def apt_sources(
    sources: Path = APT_SOURCES, parts: Path = APT_SOURCES_D
) -> list[tuple[str, list[str], list[str]]]:
    """The enabled ``deb`` entries of apt's configuration, in apt's order (``sources.list``,
    then the folder's files by name; apt ignores other names, so does this): (URI, suites,
    components) each."""
    files = [sources] if sources.is_file() else []
    if parts.is_dir():
        files += sorted(p for p in parts.iterdir() if p.suffix in (".list", ".sources"))
    out: list[tuple[str, list[str], list[str]]] = []
    for path in files:
        text = path.read_text(errors="replace")
        out += _deb822(text) if path.suffix == ".sources" else _one_line(text)
    return out


def _one_line(text: str) -> list[tuple[str, list[str], list[str]]]:
    """``deb [options] URI suite [component ...]`` lines (``deb-src`` and comments skipped)."""
    out = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):  # [arch=amd64 signed-by=...], maybe spaced
            while words and not words[0].endswith("]"):
                words.pop(0)
            words = words[1:]
        if len(words) >= 2:
            out.append((words[0], [words[1]], words[2:]))
    return out


def _deb822(text: str) -> list[tuple[str, list[str], list[str]]]:
    """Stanzas of ``Types``, ``URIs``, ``Suites``, ``Components`` (``Enabled: no`` skipped)."""
    out = []
    for stanza in re.split(r"\n[ \t]*\n", text):
        fields: dict[str, str] = {}
        name = None
        for line in stanza.splitlines():
            if line.startswith("#"):
                continue
            if line[:1] in (" ", "\t") and name:  # a folded value goes on
                fields[name] += " " + line.strip()
            elif ":" in line:
                name, _, value = line.partition(":")
                name = name.strip().lower()
                fields[name] = value.strip()
        if "deb" not in fields.get("types", "").split():
            continue
        if fields.get("enabled", "yes").lower() in ("no", "false", "0"):
            continue
        suites, components = fields.get("suites", "").split(), fields.get("components", "").split()
        out += [(uri, suites, components) for uri in fields.get("uris", "").split()]
    return out


def mirror(environ: dict[str, str] | None = None, **where: Path) -> str:
    """The Debian mirror the images are built from: ``$KC_DEBIAN_MIRROR``, else the first of
    the machine's apt sources that serves the suite's ``main`` component."""
    environ = os.environ if environ is None else environ
    if environ.get(MIRROR_ENV):
        return environ[MIRROR_ENV].rstrip("/")
    for uri, suites, components in apt_sources(**where):
        if SUITE in suites and "main" in components:
            return uri.rstrip("/")
    raise TargetError(
        f"images: no apt source of this machine serves Debian {SUITE} main (read "
        f"{APT_SOURCES} and {APT_SOURCES_D}/*.list, *.sources); name a mirror in {MIRROR_ENV}"
    )


def engine() -> Any:
    """The local Docker engine (docker SDK)."""
    import docker

    client = docker.from_env(timeout=BUILD_TIMEOUT)
    client.ping()
    return client


def _key(*parts: str | bytes) -> str:
    h = hashlib.sha256(RECIPE.encode())
    for p in parts:
        h.update(p if isinstance(p, bytes) else p.encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _has(client: Any, tag: str, key: str | None = None) -> bool:
    """The image is here (and, when a key is given, carries that key)."""
    from docker.errors import ImageNotFound

    try:
        image = client.images.get(tag)
    except ImageNotFound:
        return False
    return key is None or (image.labels or {}).get(KEY_LABEL) == key


def _say(what: str) -> None:
    print(f"images: {what}", file=sys.stderr, flush=True)


def base_image(client: Any) -> str:
    """``kc-local/debian:bookworm``: debootstrap's minbase variant, imported (root needed)."""
    ca = HOST_CA.read_bytes() if HOST_CA.is_file() else b""
    source = mirror()
    key = _key("base", SUITE, source, ca)
    if _has(client, BASE, key):
        return BASE
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None:
        raise TargetError(
            "building a Debian base image needs debootstrap (Debian package; ./dev.sh setup "
            "installs it)"
        )
    started = time.monotonic()
    _say(f"debootstrap {SUITE} (minbase) from {source} ...")
    with tempfile.TemporaryDirectory(prefix="kc-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        minbase = ["--variant=minbase", "--include=ca-certificates"]
        subprocess.run(
            [debootstrap, *minbase, SUITE, str(rootfs), source],
            check=True,
            stdout=subprocess.DEVNULL,
            timeout=BUILD_TIMEOUT,
        )
        if ca:
            (rootfs / "etc/ssl/certs/ca-certificates.crt").write_bytes(ca)
        shutil.rmtree(rootfs / "var/cache/apt/archives", ignore_errors=True)
        (rootfs / "var/cache/apt/archives/partial").mkdir(parents=True, exist_ok=True)
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            tar.add(rootfs, arcname=".")
        repository, tag = BASE.split(":")
        client.api.import_image_from_file(
            str(archive),
            repository=repository,
            tag=tag,
            changes=[f'LABEL {KEY_LABEL}="{key}"', 'CMD ["/bin/bash"]'],
        )
    _say(f"{BASE} built in {time.monotonic() - started:.0f} s")
    return BASE


def _build(client: Any, tag: str, dockerfile: str, files: dict[str, Path | str]) -> None:
    """Build ``tag`` from a Dockerfile text and a context of those files (host network, so
    Debian's mirror and the package index the host reaches are reached)."""
    with tempfile.TemporaryDirectory(prefix="kc-image-") as tmp:
        ctx = Path(tmp)
        (ctx / "Dockerfile").write_text(dockerfile)
        for name, src in files.items():
            if isinstance(src, str):
                (ctx / name).write_text(src)
            elif src.is_dir():
                shutil.copytree(src, ctx / name)
            else:
                shutil.copy2(src, ctx / name)
        _run_build(client, path=str(ctx), tag=tag)


def _run_build(client: Any, **kwargs: Any) -> Any:
    from docker.errors import BuildError

    started = time.monotonic()
    try:
        image, _ = client.images.build(
            rm=True, forcerm=True, network_mode="host", timeout=BUILD_TIMEOUT, **kwargs
        )
    except BuildError as e:
        tail = "".join(str(c.get("stream") or c.get("error") or "") for c in e.build_log)
        raise TargetError(f"building {kwargs.get('tag')} failed: {e} ...{tail[-800:]}") from None
    _say(f"{kwargs.get('tag')} built in {time.monotonic() - started:.0f} s")
    return image


def python_base(client: Any) -> str:
    """The Dockerfile's base: the official image when it is here, else one made from Debian."""
    if _has(client, OFFICIAL_PYTHON):
        return OFFICIAL_PYTHON
    base = base_image(client)
    key = _key("python", client.images.get(base).id)
    if not _has(client, PYTHON, key):
        text = PYTHON_DOCKERFILE.format(base=base, label=KEY_LABEL, key=key)
        _build(client, PYTHON, text, {})
    return PYTHON


def project_version() -> str:
    import tomllib

    with (ROOT / "pyproject.toml").open("rb") as f:
        return str(tomllib.load(f)["project"]["version"])


def reference_image(client: Any, tag: str | None = None) -> str:
    """The repository's ``Dockerfile`` built on :func:`python_base` (layer cache does the rest)."""
    tag = tag or f"kafka-conformance:{project_version()}"
    base = python_base(client)
    _run_build(client, path=str(ROOT), tag=tag, buildargs={"PYTHON": base})
    return tag


def kafka_image(client: Any, version: str) -> str:
    """``kc-local/kafka:VERSION``: the cached release's jars on Debian's JRE 17."""
    version = check_version(version)
    libs = cached_broker(version) or fetch_broker(version)
    base = base_image(client)
    key = _key("jre", client.images.get(base).id)
    if not _has(client, JRE, key):
        _build(client, JRE, JRE_DOCKERFILE.format(base=base, label=KEY_LABEL, key=key), {})
    jars = sorted(libs.glob("*.jar"))
    digest = _key(*(f"{p.name}:{p.stat().st_size}" for p in jars))
    key = _key("kafka", version, client.images.get(JRE).id, digest, KAFKA_ENTRYPOINT)
    tag = f"{KAFKA}:{version}"
    if not _has(client, tag, key):
        text = KAFKA_DOCKERFILE.format(base=JRE, version=version, label=KEY_LABEL, key=key)
        _build(client, tag, text, {"libs": libs, "entrypoint.sh": KAFKA_ENTRYPOINT})
    return tag


def build(what: list[str], client: Any | None = None) -> list[str]:
    """Build each of ``reference`` / ``kafka:VERSION``; the images' tags."""
    client = client or engine()
    out = []
    for item in what:
        if item == "reference":
            out.append(reference_image(client))
        elif item.startswith("kafka:"):
            out.append(kafka_image(client, item.removeprefix("kafka:")))
        else:
            raise TargetError(f"images: unknown image {item!r} (reference, kafka:VERSION)")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.targets.images", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("images", nargs="+", help="reference | kafka:VERSION")
    args = parser.parse_args(argv)
    try:
        for tag in build(args.images):
            print(tag)
    except (TargetError, subprocess.SubprocessError) as e:
        print(f"images: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
