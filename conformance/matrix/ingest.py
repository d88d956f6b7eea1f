"""Reading recorded runs into Spark: validated result records joined with their manifests.

Manifests are few and small: they are read and validated in Python (a bad or missing one is a
:class:`~conformance.results.schema.RunError`: the run cannot be placed in any matrix). Result
lines are many: Spark parses them with the JSON reader (malformed lines and values of the wrong
type become corrupt records) and checks the rules of ``result.schema.json`` (enums, patterns,
ranges, nullability, derived from the schema itself) as column expressions, in the same pass that
writes the Parquet dataset. Only the files holding refused lines are then re-read in Python,
which names each bad line with its number and the schema's message; the good lines of those
files are still counted.

The bulk check is the schema minus what Spark's JSON reader cannot see without parsing every
line a second time (which would cost about a fifth more job time at 10 million records): a
missing key whose value may be null reads as null, an unknown key is ignored, a number where
text is expected reads as its text, and a line holding an array of records reads as those
records. The line-by-line reader (``load_run``, and the suite's recorder) refuses all four; when
it refuses more lines of a flagged file than Spark did, the report says so.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import reduce
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from pyspark.sql import Column, DataFrame, Observation, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from conformance.matrix.model import Ingested
from conformance.results.schema import (
    RESULTS_FILE,
    Problem,
    RunError,
    iter_results,
    read_manifest,
    schema,
)

CORRUPT = "_corrupt_record"
#: Manifest facts carried on every record of the dataset.
RUN_COLUMNS = ("implementation", "version", "started_at")
#: Columns written without a Parquet dictionary: nearly every value differs, so building one
#: costs CPU and saves nothing (see benchmarks/README.md, Matrix, 2026-11-26).
PLAIN = ("test_id", "message", "seed", "duration_ms", "observed")


def _types(prop: dict[str, Any]) -> list[str]:
    kind = prop.get("type")
    if kind is None:
        return ["string"] if "enum" in prop or "const" in prop else []
    return [kind] if isinstance(kind, str) else list(kind)


def _spark_type(prop: dict[str, Any]) -> T.DataType:
    kinds = [k for k in _types(prop) if k != "null"]
    if kinds == ["integer"]:
        return T.LongType()
    if kinds == ["number"]:
        return T.DoubleType()
    if kinds == ["boolean"]:
        return T.BooleanType()
    return T.StringType()  # strings, enums, and unions such as integer|string (read as text)


def record_struct() -> T.StructType:
    """The Spark schema of a result line, derived from ``result.schema.json``."""
    props = schema("result")["properties"]
    fields = [T.StructField(name, _spark_type(prop), True) for name, prop in props.items()]
    return T.StructType([*fields, T.StructField(CORRUPT, T.StringType(), True)])


def _property_ok(col: Column, prop: dict[str, Any]) -> Column:
    checks: list[Column] = []
    if "enum" in prop:
        checks.append(col.isin([v for v in prop["enum"] if v is not None]))
    if "const" in prop:
        checks.append(col == F.lit(prop["const"]))
    if "pattern" in prop:
        checks.append(col.rlike(prop["pattern"]))
    if "minLength" in prop:
        checks.append(F.length(col) >= prop["minLength"])
    if "minimum" in prop:
        checks.append(col >= prop["minimum"])
    if "maximum" in prop:
        checks.append(col <= prop["maximum"])
    ok = reduce(lambda a, b: a & b, checks, F.lit(True))
    nullable = "null" in _types(prop) or None in prop.get("enum", [])
    return col.isNull() | ok if nullable else col.isNotNull() & ok


def record_valid(col: Callable[[str], Column], *, skip: frozenset[str] = frozenset()) -> Column:
    """True for a parsed line that satisfies ``result.schema.json``'s value rules (and the
    reader's cross-field rule: api_name is null exactly when api_key is); never null.

    ``col(name)`` gives the parsed field; ``skip`` names properties checked another way.
    """
    props: dict[str, Any] = schema("result")["properties"]
    checks = [col(CORRUPT).isNull()]
    checks += [_property_ok(col(name), prop) for name, prop in props.items() if name not in skip]
    checks.append(col("api_key").isNull() == col("api_name").isNull())
    return F.coalesce(reduce(lambda a, b: a & b, checks), F.lit(False))


def _manifests(run_dirs: list[Path]) -> list[dict[str, Any]]:
    manifests = [read_manifest(d) for d in run_dirs]
    seen: dict[str, Path] = {}
    for folder, manifest in zip(run_dirs, manifests, strict=True):
        other = seen.setdefault(manifest["run_id"], folder)
        if other != folder:
            raise RunError(f"{folder}: run_id {manifest['run_id']!r} is also the id of {other}")
        if not (folder / RESULTS_FILE).is_file():
            raise RunError(f"{folder}: no {RESULTS_FILE}")
    return manifests


def _local_path(uri: str) -> Path:
    return Path(unquote(urlparse(uri).path)).resolve()


def checked_lines(
    spark: SparkSession, run_dirs: list[Path], manifests: list[dict[str, Any]]
) -> DataFrame:
    """Every line of the runs' results, parsed, with its run's columns, its file (``_file``) and
    whether it is a valid record (``_valid``).

    A line is matched to its run by its own run_id (a short key, cheap to look up in every one
    of millions of lines) and is valid only when it was read from that run's file.
    """
    lines = (
        spark.read.schema(record_struct())
        .option("mode", "PERMISSIVE")
        .option("columnNameOfCorruptRecord", CORRUPT)
        .json([str(d / RESULTS_FILE) for d in run_dirs])
    )
    by_dir = dict(zip(run_dirs, manifests, strict=True))
    files = []
    for uri in lines.inputFiles():  # the file names as Spark spells them
        m = by_dir[_local_path(uri).parent]
        files.append((m["run_id"], uri, m["target_name"], m["target_version"], m["started_at"]))
    runs = spark.createDataFrame(
        files, "_run_id string, _path string, implementation string, version string, _start string"
    ).withColumn("started_at", F.to_timestamp("_start"))
    lines = lines.withColumn("_file", F.input_file_name()).join(
        F.broadcast(runs), F.col("run_id") == F.col("_run_id"), "left"
    )
    # The run_id pattern holds when the run_id is its file's manifest's (validated) run_id.
    valid = record_valid(F.col, skip=frozenset({"run_id"})) & (F.col("_file") == F.col("_path"))
    return lines.withColumn("_valid", F.coalesce(valid, F.lit(False)))


def current_test_id() -> Column:
    """``schema.current_test_id`` as a column: a test id recorded before ids started with their
    feature gets the feature put in front, so old and new runs of a test meet under one id."""
    test_id, feature = F.col("test_id"), F.col("feature")
    return F.when(test_id.startswith(F.concat(feature, F.lit("/"))), test_id).otherwise(
        F.concat_ws("/", feature, test_id)
    )


def record_columns() -> list[str]:
    """The dataset's columns: the record's fields, then its run's."""
    return [f.name for f in record_struct().fields if f.name != CORRUPT] + list(RUN_COLUMNS)


def ingest(spark: SparkSession, run_dirs: list[Path], parquet: Path) -> Ingested:
    """Validate every run, write the good records (with their run's implementation, version and
    start time) as a Parquet dataset, and report the bad ones."""
    run_dirs = [Path(d).resolve() for d in run_dirs]
    manifests = _manifests(run_dirs)
    by_dir = dict(zip(run_dirs, manifests, strict=True))
    lines = checked_lines(spark, run_dirs, manifests)
    seen = Observation("ingest")
    observed = lines.observe(
        seen,
        F.count(F.lit(1)).alias("total"),
        F.count_if(~F.col("_valid")).alias("bad"),
        F.collect_set(F.when(~F.col("_valid"), F.col("_file"))).alias("bad_files"),
    )
    good = observed.where("_valid").withColumn("test_id", current_test_id())
    good = good.select(*record_columns())
    writer = good.write.mode("overwrite")
    for name in PLAIN:
        writer = writer.option(f"parquet.enable.dictionary#{name}", "false")
    writer.parquet(str(parquet))
    metrics = seen.get
    result = Ingested(parquet, manifests, run_dirs, metrics["total"], metrics["bad"])
    for uri in sorted(metrics["bad_files"]):
        folder = _local_path(uri).parent
        path = folder / RESULTS_FILE
        found = [p for _, _, p in iter_results(path, by_dir[folder]["run_id"]) if p is not None]
        result.problems.extend(found)
    extra = len(result.problems) - result.bad_lines
    if extra:
        note = (
            f"{extra} of the lines listed are counted: the bulk check lets them through"
            if extra > 0
            else f"{-extra} more lines were refused by the bulk check than listed"
        )
        result.problems.append(
            Problem("(bulk check)", 0, f"{note} (see conformance.matrix.ingest)")
        )
    return result
