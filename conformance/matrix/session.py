"""The SparkSession the matrix job runs in: local[2] unless told otherwise, loopback only, quiet."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
LOG_CONFIG = Path(__file__).with_name("log4j2.properties")


def on_loopback(master: str) -> bool:
    """``local[...]``, or a cluster master on this machine (``spark://127.0.0.1:7077``)."""
    if master.startswith("local"):
        return True
    return urlparse(master).hostname in ("127.0.0.1", "localhost", "::1")


def spark_session(
    master: str | None = None, *, app_name: str = "kafka-conformance matrix"
) -> SparkSession:
    """Start (or reuse) a SparkSession on ``master`` (default ``local[2]``).

    Local masters bind to 127.0.0.1 (``SPARK_LOCAL_IP``); the UI is off and logs are at ERROR,
    so the job's own output is what a user sees. Shuffles use few partitions: the matrices are
    small once grouped, and on two cores many tiny tasks cost more than they save.
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
            "spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile={LOG_CONFIG.as_uri()}"
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
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark
