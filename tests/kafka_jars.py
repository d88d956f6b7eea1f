"""The released kafka-clients jars in the project's Kafka cache, as test reference data.

``./dev.sh setup`` (and ``kafka-conformance fetch kafka:VERSION``) puts released Kafka brokers
into the cache of :mod:`conformance.targets.maven`; their ``kafka-clients`` jar holds both the
message specs of that release (``common/message/*.json``) and the generated Java classes, which
the facts test and the Java codec oracle use for the versions Kafka added after 3.9.
"""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from conformance.targets.maven import cached_broker

#: The newest release whose facts the project's specs carry (beside 3.9.0's).
LATEST = "4.4.0"
SPEC_PREFIX = "common/message/"


def clients_jar(version: str) -> Path | None:
    """The cached ``kafka-clients-VERSION.jar``, or None when that release is not fetched."""
    libs = cached_broker(version)
    jar = libs / f"kafka-clients-{version}.jar" if libs else None
    return jar if jar is not None and jar.is_file() else None


def missing_jar_reason(version: str) -> str:
    return (
        f"kafka-clients {version} is not in the Kafka cache: run "
        f"`kafka-conformance fetch kafka:{version}` (./dev.sh setup does)"
    )


def require_clients_jar(version: str) -> Path:
    """The jar, or skip the test naming the command that fetches it."""
    jar = clients_jar(version)
    if jar is None:
        pytest.skip(missing_jar_reason(version))
    return jar


def extract_specs(jar: Path, out: Path) -> Path:
    """Write the jar's ``common/message/*.json`` into ``out``; returns ``out``."""
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if name.startswith(SPEC_PREFIX) and name.endswith(".json"):
                (out / name.removeprefix(SPEC_PREFIX)).write_bytes(z.read(name))
    return out
