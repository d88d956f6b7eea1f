"""The SparkSession the matrix job runs in: local[2] unless told otherwise, loopback only, quiet."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DEFAULT_MASTER = "local[2]"
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def on_loopback(master: str) -> bool:
    """``local[...]``, or a cluster master on this machine (``spark://127.0.0.1:7077``)."""
    if master.startswith("local"):
        return True
    return urlparse(master).hostname in ("127.0.0.1", "localhost", "::1")


@contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """This process's stdout and stderr (file descriptors 1 and 2) go to ``log`` meanwhile: the
    JVM that PySpark starts inherits them, so what it prints, at start-up and after, lands there
    and not among the run's own lines."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    try:
        with log.open("ab") as f:
            os.dup2(f.fileno(), 1)
            os.dup2(f.fileno(), 2)
            yield
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])


def spark_session(
    master: str | None = None,
    *,
    app_name: str = "kafka-conformance matrix",
    log_file: Path | None = None,
) -> SparkSession:
    """Start (or reuse) a SparkSession on ``master`` (default ``local[2]``).

    Local masters bind to 127.0.0.1 (``SPARK_LOCAL_IP``); the UI is off and logs are at ERROR,
    so the job's own output is what a user sees. With ``log_file``, what the JVM prints (its
    start-up banner, later errors) goes to that file, and one line says where. Shuffles use few
    partitions: the matrices are small once grouped, and on two cores many tiny tasks cost more
    than they save.
    """
    from pyspark.sql import SparkSession

    master = master or DEFAULT_MASTER
    loopback = on_loopback(master)
    if loopback:
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = (
        SparkSession.builder.master(master)
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", os.environ.get("KC_SHUFFLE_PARTITIONS", "8"))
        .config("spark.driver.memory", os.environ.get("KC_DRIVER_MEMORY", "4g"))
        .config("spark.sql.session.timeZone", "UTC")
        .config(
            "spark.driver.extraJavaOptions",
            # the parallel collector: less CPU than G1 for the same ingest (benchmarks/README.md)
            f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()} -XX:+UseParallelGC",
        )
    )
    if loopback:
        # the driver, and executors of a cluster on this machine, talk over loopback only;
        # executors there run this interpreter (a remote cluster brings its own, PYSPARK_PYTHON)
        builder = builder.config("spark.driver.host", "127.0.0.1").config(
            "spark.driver.bindAddress", "127.0.0.1"
        )
        if not master.startswith("local"):
            builder = builder.config(
                "spark.pyspark.python", os.environ.get("PYSPARK_PYTHON", sys.executable)
            )
            # an RDD's Python tasks (publication's runs) take their interpreter from the driver's
            # PYSPARK_PYTHON, else python3 on the worker's PATH, which lacks the project
            os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if log_file is None:
        spark = builder.getOrCreate()
    else:
        with _output_to(log_file):
            spark = builder.getOrCreate()
        print(f"spark: {master}; its log: {log_file}", flush=True)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def rows(frame: DataFrame) -> list[dict[str, Any]]:
    """``frame``'s rows as plain dicts (nested structs as dicts), through Arrow: far cheaper
    than ``collect()``'s Row objects for the tens of thousands of rows of a big matrix (the
    flaky tests of 10 million records; benchmarks/README.md, Matrix)."""
    return frame.toArrow().to_pylist()
