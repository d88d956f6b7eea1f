"""Java kafka-clients releases as KIP-42 subjects: fetch, compile our harness, run it.

A client release is ``org.apache.kafka:kafka-clients:VERSION`` with its runtime dependencies,
fetched with Maven into the same cache as the broker releases (``clients/java/<version>/libs``,
``fetched.json`` written last). The harness (``java/Kip42Harness.java``, our code, shipped in
the wheel) is compiled with javac against that release into a folder named after the source's
digest, so an edited harness is compiled again and an unchanged one never is. Running it against
a broker's bootstrap gives the JSON-lines events that ``conformance.suite.kip42.java_events``
judges.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from conformance.targets.base import TargetError
from conformance.targets.maven import GROUP, _resolve, cache_root, check_version, install

CLIENT_ARTIFACT = "kafka-clients"
SOURCE = Path(__file__).with_name("java") / "Kip42Harness.java"
MAIN_CLASS = "Kip42Harness"
#: the faults a project test may ask the harness for (wrong chains standing for a broken client)
FAULTS = ("reorder", "drop-failed-acks")
COMPILE_TIMEOUT = 120.0
RUN_TIMEOUT = 120.0


@dataclass(frozen=True)
class Client:
    """A client under test: ``python`` (the suite's own) or ``java`` with a release."""

    implementation: str
    version: str | None = None

    def __str__(self) -> str:
        return (
            self.implementation if self.version is None else f"{self.implementation}:{self.version}"
        )


def parse_client(text: str) -> Client:
    """``python`` or ``java:VERSION``; anything else is a usage error (TargetError)."""
    kind, _, version = text.strip().partition(":")
    if kind == "python" and not version:
        return Client("python")
    if kind == "java" and version:
        return Client("java", check_version(version, "kafka-clients"))
    raise TargetError(f"--client {text!r}: expected python or java:VERSION (java:3.9.1)")


def client_dir(version: str) -> Path:
    return cache_root() / "clients" / "java" / check_version(version, "kafka-clients")


def cached_client(version: str) -> Path | None:
    folder = client_dir(version)
    return folder / "libs" if (folder / "fetched.json").is_file() else None


def fetch_client(version: str) -> Path:
    """Fetch ``kafka-clients:VERSION`` and its runtime dependencies; the libs folder."""
    done = cached_client(version)
    if done is not None:
        return done
    coordinates = f"{GROUP}:{CLIENT_ARTIFACT}:{version}"
    libs = _resolve([(GROUP, CLIENT_ARTIFACT, version)], coordinates)
    return install(libs, client_dir(version), coordinates)


def harness_classes(version: str, source: Path = SOURCE) -> Path:
    """The harness compiled against the release (fetched first when needed). ``source``: another
    one-class harness (a project test's), compiled into a folder named after its class."""
    libs = fetch_client(version)
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
    prefix = "harness-" if source == SOURCE else f"{source.stem}-"
    classes = client_dir(version) / f"{prefix}{digest}"
    if (classes / f"{source.stem}.class").is_file():
        return classes
    javac = shutil.which("javac")
    if javac is None:
        raise TargetError(
            "the Java client harness needs a JDK (javac): install default-jdk-headless"
        )
    work = classes.with_name(classes.name + ".tmp")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    cmd = [javac, "-nowarn", "-d", str(work), "-cp", str(libs / "*"), str(source)]
    try:
        done = subprocess.run(
            cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT, stdin=subprocess.DEVNULL
        )
    except subprocess.TimeoutExpired:
        raise TargetError(f"javac took over {COMPILE_TIMEOUT:.0f} s on the harness") from None
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise TargetError(
            f"the harness does not compile against kafka-clients {version}: "
            f"{(done.stderr or done.stdout).strip()[:400]}"
        )
    shutil.rmtree(classes, ignore_errors=True)
    work.rename(classes)
    for old in client_dir(version).glob(f"{prefix}*"):  # builds of earlier harness sources
        if old != classes:
            shutil.rmtree(old, ignore_errors=True)
    return classes


def run_harness(
    version: str, bootstrap: str, topic: str, group: str, out: Path, *, fault: str = ""
) -> list[dict]:
    """Run the harness once; its events, in order. A harness that breaks is a TargetError
    carrying the end of its output (the events written so far stay in ``out``)."""
    if fault and fault not in FAULTS:
        raise ValueError(f"unknown harness fault {fault!r}")
    classes = harness_classes(version)
    java = shutil.which("java")
    if java is None:
        raise TargetError("the Java client harness needs a Java runtime (java)")
    classpath = f"{classes}:{fetch_client(version) / '*'}"
    cmd = [java, "-cp", classpath, MAIN_CLASS, bootstrap, topic, group, str(out)]
    if fault:
        cmd.append(fault)
    log = out.with_suffix(".log")
    try:
        with log.open("w") as sink:
            done = subprocess.run(
                cmd,
                stdout=sink,
                stderr=subprocess.STDOUT,
                timeout=RUN_TIMEOUT,
                stdin=subprocess.DEVNULL,
            )
    except subprocess.TimeoutExpired:
        raise TargetError(
            f"the kafka-clients {version} harness ran over {RUN_TIMEOUT:.0f} s"
        ) from None
    events = read_events(out)
    if done.returncode != 0:
        lines = log.read_text(errors="replace").splitlines()
        tail = "\n".join(x for x in lines if not x.startswith("SLF4J:")).strip()[-400:]
        raise TargetError(
            f"the kafka-clients {version} harness exited {done.returncode}: {tail or 'no output'}"
        )
    return events


def read_events(path: Path) -> list[dict]:
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
