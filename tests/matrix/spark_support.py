"""One SparkSession and one run of the matrix job over the fixture runs, shared by the matrix
and report tests (Spark takes seconds to start: start it once per test session). The conftest of
each test folder imports the fixtures; the state here makes both share one session and one job."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from conformance.matrix.job import MatrixOutput, run_matrix
from conformance.matrix.session import spark_session

ROOT = Path(__file__).resolve().parents[2]
FIXTURE_RUNS = ROOT / "fixtures" / "runs"

_state: dict[str, object] = {}


def shared_spark():
    if "spark" not in _state:
        _state["spark"] = spark_session("local[2]")
    return _state["spark"]


def fixture_output_once() -> MatrixOutput:
    """The job over every fixture run, with the project's requirement texts (computed once)."""
    if "output" not in _state:
        out = Path(tempfile.mkdtemp(prefix="kc-matrix-"))
        _state["out"] = out
        _state["output"] = run_matrix([FIXTURE_RUNS], out / "report", spark=shared_spark())
    return _state["output"]  # type: ignore[return-value]


def stop() -> None:
    """Stop the session, then its JVM (the gateway process PySpark started), by pid."""
    from pyspark import SparkContext

    spark = _state.pop("spark", None)
    if spark is not None:
        gateway = SparkContext._gateway
        spark.stop()
        proc = getattr(gateway, "proc", None)
        if gateway is not None:
            gateway.shutdown()
            SparkContext._gateway = None
            SparkContext._jvm = None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    _state.pop("output", None)
    out = _state.pop("out", None)
    if out is not None:
        shutil.rmtree(out, ignore_errors=True)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def spark():
    yield shared_spark()
    stop()


@pytest.fixture(scope="session")
def fixture_output(spark):
    return fixture_output_once()


@pytest.fixture(scope="session")
def model(fixture_output):
    return fixture_output.model
