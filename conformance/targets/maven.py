"""Released Apache Kafka jars from Maven Central, fetched with Maven into a per-version cache.

A broker release is ``org.apache.kafka:kafka_2.13:VERSION`` with its runtime dependencies, plus
``slf4j-simple`` so that the brokers' own logging reaches their log files (Kafka's artifacts
bring no logging backend). The cache lies outside the repository: ``$KC_CACHE_DIR``, else
``$XDG_CACHE_HOME/kafka-conformance``, else ``~/.cache/kafka-conformance``. A release is
``kafka/<version>/libs/*.jar`` and a ``fetched.json`` written last, so a half-done fetch is
never taken for a cached one. Once cached, a version runs offline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from conformance.targets.base import TargetError

GROUP = "org.apache.kafka"
BROKER_ARTIFACT = "kafka_2.13"
#: a release number as Maven Central spells Kafka's (3.9.1, 4.0.0, 4.1.0-rc1 is not released)
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
#: Maven's one line that says why a resolution failed
_MVN_ERROR = re.compile(r"\[ERROR\]\s*(.+)")
#: what Maven adds to its reason that says nothing about it (the repository's address, help links)
_MVN_NOISE = re.compile(r"\s*\(https?://[^)]*\)|\s*(in )?https?://\S+|\s*-> \[Help \d+\]")
FETCH_TIMEOUT = 900.0

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>kafka-conformance</groupId><artifactId>fetch</artifactId><version>1</version>
  <packaging>pom</packaging>
  <dependencies>{dependencies}</dependencies>
</project>
"""
_DEPENDENCY = (
    "<dependency><groupId>{group}</groupId><artifactId>{artifact}</artifactId>"
    "<version>{version}</version></dependency>"
)


def cache_root() -> Path:
    """Where fetched releases are kept (outside any repository)."""
    if os.environ.get("KC_CACHE_DIR"):
        return Path(os.environ["KC_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "kafka-conformance"


def check_version(version: str, what: str = "Apache Kafka") -> str:
    if not _VERSION.match(version):
        raise TargetError(f"{what} version {version!r} is not a release number such as 3.9.1")
    return version


def broker_dir(version: str) -> Path:
    return cache_root() / "kafka" / check_version(version)


def cached_broker(version: str) -> Path | None:
    """The libs folder of a fetched broker release, or None when it is not (wholly) cached."""
    folder = broker_dir(version)
    return folder / "libs" if (folder / "fetched.json").is_file() else None


def broker_classpath(version: str) -> str:
    """The classpath of a broker release, fetching it first when it is not cached."""
    libs = cached_broker(version) or fetch_broker(version)
    return str(libs / "*")


def fetch_broker(version: str) -> Path:
    """Fetch ``kafka_2.13:VERSION`` and its runtime dependencies; the libs folder."""
    folder = broker_dir(version)
    done = cached_broker(version)
    if done is not None:
        return done
    coordinates = f"{GROUP}:{BROKER_ARTIFACT}:{version}"
    libs = _resolve([(GROUP, BROKER_ARTIFACT, version)], coordinates)
    slf4j = next((p.name for p in libs.glob("slf4j-api-*.jar")), None)
    if slf4j is not None and not list(libs.glob("slf4j-simple-*.jar")):
        slf4j_version = slf4j.removeprefix("slf4j-api-").removesuffix(".jar")
        what = f"slf4j-simple {slf4j_version}"
        extra = _resolve([("org.slf4j", "slf4j-simple", slf4j_version)], what)
        for jar in extra.glob("slf4j-simple-*.jar"):
            shutil.copy2(jar, libs / jar.name)
        shutil.rmtree(extra.parent, ignore_errors=True)
    return install(libs, folder, coordinates)


def install(libs: Path, folder: Path, coordinates: str) -> Path:
    """Move resolved jars into ``folder/libs`` and write ``fetched.json`` last (what marks a
    release as wholly cached); the libs folder."""
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    libs.rename(folder / "libs")
    shutil.rmtree(libs.parent, ignore_errors=True)
    jars = sorted(p.name for p in (folder / "libs").glob("*.jar"))
    (folder / "fetched.json").write_text(
        json.dumps({"coordinates": coordinates, "jars": jars}, indent=1) + "\n"
    )
    return folder / "libs"


def _resolve(artifacts: list[tuple[str, str, str]], what: str) -> Path:
    """Copy the artifacts and their runtime dependencies into a new temporary folder's libs."""
    mvn = shutil.which("mvn")
    if mvn is None:
        raise TargetError(f"fetching {what} needs Maven (mvn): install Debian's maven package")
    cache_root().mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="fetch-", dir=cache_root()))
    deps = "".join(_DEPENDENCY.format(group=g, artifact=a, version=v) for g, a, v in artifacts)
    (work / "pom.xml").write_text(_POM.format(dependencies=deps))
    cmd = [
        mvn,
        "-B",
        "-U",
        "--no-transfer-progress",
        "-f",
        str(work / "pom.xml"),
        "dependency:copy-dependencies",
        "-DincludeScope=runtime",
        f"-DoutputDirectory={work / 'libs'}",
    ]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=FETCH_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        shutil.rmtree(work, ignore_errors=True)
        raise TargetError(
            f"fetching {what} with Maven took over {FETCH_TIMEOUT:.0f} s; try again"
        ) from None
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        errors = [m.group(1).strip() for m in map(_MVN_ERROR.search, done.stdout.splitlines()) if m]
        why = next((e for e in errors if e), done.stderr.strip()[-300:] or "no reason given")
        why = _MVN_NOISE.sub("", why).strip()
        raise TargetError(f"{what} cannot be resolved from Maven Central: {why[:300]}")
    return work / "libs"
