"""Publication's runs as the tasks of one Spark job (issue 41): the runs of a report are
independent (each is a target and the suite), so a team with a Spark standalone cluster publishes
in about the time of its slowest run.

    python -m conformance.matrix.publish reports/runs --spark-master spark://127.0.0.1:7077 ...

Each rerun the plan asks for (``conformance.matrix.publish``) is one task, in a partition of its
own: the executor runs ``kafka-conformance run`` into a temporary folder, as a local publication
does, and sends the run back to the driver as a gzipped tar, so the workers need the project
installed (the same interpreter, ``spark.pyspark.python``) but no folder shared with the driver.
A worker runs as many at once as it has cores: a run starts a whole cluster (three reference
nodes, or three Kafka brokers and their controllers), so give each worker the cores it can take
runs on (``spark-class ... Worker --cores N``). The driver unpacks each run into the staging folder
and the publication goes on as after local runs: merged where partial, moved into the runs
folder, the same lines logged (tests/matrix/test_publish_spark.py compares a cluster's runs with
local ones).
"""

from __future__ import annotations

import io
import tarfile
import tempfile
from pathlib import Path

from conformance.matrix.publish import Batch, suite_runner

#: one task: (target, clients, select)
Task = tuple[str, tuple[str, ...], str | None]


def run_task(task: Task) -> tuple[str, bytes] | None:
    """On an executor: one run; its folder's name and its files as a gzipped tar (None when the
    run recorded nothing)."""
    target, clients, select = task
    with tempfile.TemporaryDirectory(prefix="kc-publish-") as tmp:
        made = suite_runner(echo=False)(target, clients, select, Path(tmp))
        return None if made is None else pack(made)


def pack(run_dir: Path) -> tuple[str, bytes]:
    """A run folder as what a task sends back: its name and its files as a gzipped tar."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(run_dir, arcname=run_dir.name)
    return run_dir.name, buf.getvalue()


def unpack(got: tuple[str, bytes] | None, into: Path) -> Path | None:
    """A task's run, unpacked under ``into``: the run folder (None for a run that made none)."""
    if got is None:
        return None
    name, data = got
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(into, filter="data")
    return into / name


def spark_batch(master: str) -> Batch:
    """Every rerun as a task of one job on ``master``, each in its own partition; each run
    unpacked in a folder of its own under the staging folder (two runs may have the same name
    prefix, never the same folder)."""

    def run_all(tasks: list[Task], staging: Path) -> list[Path | None]:
        from conformance.matrix.session import spark_session

        session = spark_session(master, app_name="kafka-conformance publication")
        try:
            got = session.sparkContext.parallelize(tasks, len(tasks)).map(run_task).collect()
        finally:
            session.stop()
        return [unpack(g, staging / f"task-{i}") for i, g in enumerate(got)]

    return run_all
