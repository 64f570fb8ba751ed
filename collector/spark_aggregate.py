"""Re-aggregate a campaign from the Parquet archive on Spark: the same per-day aggregates the collector keeps.

Run it with ``ldp-telemetry spark aggregate ARCHIVE --campaign NAME`` (a local Spark, ``local[2]`` by default), or
hand this file to ``spark-submit`` on a cluster (``python -m collector.spark_aggregate --help`` lists the same
options; docs/operations.md shows both).  The job:

1. on the driver, lists the version's day partitions (``pyarrow.fs``: a local path, ``s3://``, ``hdfs://``,
   ``gs://``), reads each file's footer, and checks that every file carries the version's spec fingerprint;
2. reads the files with Spark's Parquet reader and, in each task, aggregates every Arrow batch as the campaign's
   kind says (its ``ArchiveForm``, ``collector.archive_forms``): local campaigns' payloads are decoded
   (``collector.report_codec``) and aggregated with ``estimators.aggregate``, the function the collector's
   ingestion and ``aggregates rebuild`` call, so the statistic is the same integers;
3. merges the tasks' per-day aggregates in a tree (``RDD.treeReduce``), so no node ever holds more than a few
   per-day aggregates (O(days * d)) whatever the number of reports;
4. writes the per-day aggregates and the spec as an aggregate file (``collector.archive``), which
   ``ldp-telemetry report --aggregate FILE`` and ``estimators.estimate_aggregate`` read.

The executors need this package installed (``pip install 'ldp-telemetry[archive]'``); pyspark is imported only here.
"""

from __future__ import annotations

import argparse
import os
import pickle
import posixpath
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from client_sdk.spec import Spec, load_spec

# absolute imports: spark-submit may run this file as __main__
from collector.archive import (
    PART_FILE,
    AggregateFile,
    ArchiveError,
    archive_form,
    read_file_metadata,
    write_aggregate_file,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

DEFAULT_MASTER = "local[2]"
LOOPBACK = "127.0.0.1"  # where a local-mode driver listens
TREE_DEPTH = 2
ARROW_BATCH_ROWS = 20_000  # rows per Arrow batch handed to a task's aggregation


def archive_files(archive: str, campaign: str, version: int | None = None, since: str | None = None,
                  until: str | None = None) -> tuple[Spec, list[str]]:
    "The spec of the campaign's version (the latest in the archive by default) and its day files in [since, until]"
    # pyarrow and pyspark: the optional archive extra, imported where used
    import pyarrow.fs
    import pyarrow.parquet as pq

    filesystem, root = _filesystem(archive)
    relative = f"campaign={campaign}"
    base = posixpath.join(root, relative)
    versions = sorted(int(name.split("=", 1)[1]) for name in _children(filesystem, base, "version="))
    if not versions:
        raise ArchiveError(f"no campaign {campaign!r} in the archive {archive}")
    if version is None:
        version = versions[-1]
    elif version not in versions:
        raise ArchiveError(f"no version {version} of {campaign!r} in the archive (versions: {versions})")
    version_dir = posixpath.join(base, f"version={version}")
    days = sorted(name.split("=", 1)[1] for name in _children(filesystem, version_dir, "day="))
    days = [day for day in days if (since or "") <= day <= (until or "9999-12-31")]
    spec: Spec | None = None
    files = []
    for day in days:
        part = f"{relative}/version={version}/day={day}/{PART_FILE}"
        path = posixpath.join(root, part)
        if filesystem.get_file_info(path).type != pyarrow.fs.FileType.File:
            continue
        with filesystem.open_input_file(path) as handle:
            meta = read_file_metadata(pq.ParquetFile(handle).metadata.metadata)
        if spec is None:
            spec = load_spec(meta["spec"])
        if meta.get("fingerprint") != spec.fingerprint or meta.get("day") != day:
            raise ArchiveError(f"{path}: fingerprint or day differs from the version's other files")
        files.append(f"{archive_uri(archive)}/{part}")
    if spec is None:
        raise ArchiveError(f"no reports of {campaign!r} version {version} in the archive for this window")
    return spec, files


def aggregate_archive(spark: SparkSession, archive: str, campaign: str, *, version: int | None = None,
                      since: str | None = None, until: str | None = None) -> AggregateFile:
    "The per-day aggregates of one campaign version, computed from the archive on ``spark``"
    spec, files = archive_files(archive, campaign, version, since, until)
    spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(ARROW_BATCH_ROWS))
    columns = archive_form(spec).columns
    frame = spark.read.option("basePath", archive_uri(archive)).parquet(*files).select("day", *columns)
    partials = frame.mapInArrow(_aggregate_batches(spec.to_json()), "day string, aggregate binary")
    merged = partials.rdd.mapPartitions(_to_days).treeReduce(merge_days, depth=TREE_DEPTH)
    return AggregateFile(spec, sorted(merged.items()), source=f"spark: {archive}")


def merge_days(a: dict[str, Any], b: dict[str, Any]) -> dict:
    "Two maps of day to aggregate, merged (the aggregates' ``merge`` where both have a day)"
    out = dict(a)
    for day, aggregate in b.items():
        out[day] = out[day].merge(aggregate) if day in out else aggregate
    return out


def _aggregate_batches(spec_json: str) -> Callable[[Iterable[Any]], Iterator[Any]]:
    "The function each task runs over its Arrow batches: one (day, pickled aggregate) row per day it saw"

    def run(batches: Iterable[Any]) -> Iterator[Any]:
        # pyarrow and pyspark: the optional archive extra, imported where used
        import pyarrow as pa

        spec = load_spec(spec_json)
        form = archive_form(spec)
        totals: dict[str, Any] = {}
        for batch in batches:
            days = batch.column("day").cast(pa.string()).to_pylist()  # a date or a string, by partition inference
            parts = form.aggregate_batch(spec, days, {name: batch.column(name).to_pylist() for name in form.columns})
            totals = merge_days(totals, parts)
        if totals:
            yield pa.RecordBatch.from_pydict({"day": list(totals),
                                              "aggregate": [pickle.dumps(a) for a in totals.values()]})

    return run


def _to_days(rows: Iterable[Any]) -> Iterator[dict]:
    out: dict = {}
    for row in rows:
        out = merge_days(out, {row["day"]: pickle.loads(row["aggregate"])})  # noqa: S301 (our own tasks' output)
    yield out


def _filesystem(archive: str) -> tuple[Any, str]:
    "pyarrow's filesystem and path for the archive (Hadoop's s3a:// is pyarrow's s3://)"
    # pyarrow and pyspark: the optional archive extra, imported where used
    import pyarrow.fs

    if "://" in archive:
        scheme, rest = archive.split("://", 1)
        return pyarrow.fs.FileSystem.from_uri(("s3" if scheme == "s3a" else scheme) + "://" + rest)
    return pyarrow.fs.LocalFileSystem(), str(Path(archive).resolve())


def archive_uri(archive: str) -> str:
    "The archive root as Spark should read it: its own URI, or a local path as file:// (never the default FS)"
    return archive.rstrip("/") if "://" in archive else Path(archive).resolve().as_uri()


def _children(filesystem: Any, directory: str, prefix: str) -> list[str]:
    # pyarrow and pyspark: the optional archive extra, imported where used
    import pyarrow.fs

    try:
        infos = filesystem.get_file_info(pyarrow.fs.FileSelector(directory, allow_not_found=True))
    except OSError:
        return []
    return [posixpath.basename(info.path) for info in infos
            if info.type == pyarrow.fs.FileType.Directory and posixpath.basename(info.path).startswith(prefix)]


def is_local(master: str | None) -> bool:
    "Whether ``master`` runs Spark inside this machine's driver JVM (``local``, ``local[4]``, ``local[*, 2]``)"
    return master is not None and (master == "local" or master.startswith("local["))


def spark_session(master: str | None = DEFAULT_MASTER, app_name: str = "ldp-telemetry aggregate", *,
                  log: IO[bytes] | None = None) -> SparkSession:
    """A SparkSession: ``master`` for a local run, None under spark-submit (which sets it and starts the JVM).

    Local mode binds the driver to 127.0.0.1 (``SPARK_LOCAL_IP``, ``spark.driver.bindAddress``/``host``: Spark would
    otherwise pick the first non-loopback interface) and runs its Python workers with this interpreter (where this
    package is installed), unless the environment sets ``SPARK_LOCAL_IP`` or ``PYSPARK_PYTHON``.  With ``log``, the
    JVM's output (log4j's lines, warnings, progress) goes there instead of this process's stderr; it applies only
    when this call starts the JVM."""
    # pyarrow and pyspark: the optional archive extra, imported where used
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    conf = SparkConf().setAppName(app_name).set("spark.ui.enabled", "false")
    if master is not None:
        conf.setMaster(master)
    local = is_local(master)
    if local:
        conf.set("spark.driver.bindAddress", LOOPBACK).set("spark.driver.host", LOOPBACK)
    if log is not None:
        conf.set("spark.ui.showConsoleProgress", "false")
    if SparkContext._gateway is None and master is not None:  # this call starts the JVM
        # read by the JVM at its start, and by SparkContext for the workers' interpreter (not from the conf)
        local_environment = {"SPARK_LOCAL_IP": LOOPBACK, "PYSPARK_PYTHON": sys.executable} if local else {}
        with _environment(local_environment):
            gateway = launch_gateway(conf, None if log is None else {"stdout": log, "stderr": log})
            SparkContext(conf=conf, gateway=gateway)
        return SparkSession.builder.getOrCreate()  # over that context
    # a JVM left by a stopped session: the new context still runs its Python workers with this interpreter
    with _environment({"PYSPARK_PYTHON": sys.executable} if local else {}):
        return SparkSession.builder.config(conf=conf).getOrCreate()


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    "``os.environ`` with ``values`` for the block, where a variable is not set already (the operator's wins)"
    added = [name for name in values if name not in os.environ]
    os.environ.update({name: values[name] for name in added})
    try:
        yield
    finally:
        for name in added:
            os.environ.pop(name, None)


def run(archive: str, campaign: str, out: str, *, version: int | None = None, since: str | None = None,
        until: str | None = None, master: str | None = DEFAULT_MASTER, verbose: bool = False) -> AggregateFile:
    """Aggregate in the active Spark session, or in a new one stopped at the end; write ``out``; what was written.

    A new session's JVM output goes to a temporary log file unless ``verbose``: removed after a success, kept and
    named in a note on the exception after a failure."""
    # pyarrow and pyspark: the optional archive extra, imported where used
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()  # a session of the caller's (a notebook, a test) is left running
    log = None
    if active is None and not verbose:
        log = tempfile.NamedTemporaryFile(prefix="ldp-spark-", suffix=".log", delete=False)  # noqa: SIM115
    try:
        spark = active or spark_session(master, log=log)
        try:
            result = aggregate_archive(spark, archive, campaign, version=version, since=since, until=until)
        finally:
            if active is None:
                spark.stop()
    except BaseException as exc:
        if log is not None:
            log.close()
            exc.add_note(f"Spark's log: {log.name}")
        raise
    if log is not None:
        log.close()
        os.unlink(log.name)
    write_aggregate_file(out, result)
    return result


def main(argv: Sequence[str] | None = None) -> None:
    "Entry point for spark-submit: the master comes from spark-submit's --master unless --master is given"
    parser = argparse.ArgumentParser(prog="spark_aggregate.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("archive", help="Archive root written by 'ldp-telemetry export' (path, s3://, hdfs://).")
    parser.add_argument("--campaign", required=True, help="Campaign name.")
    parser.add_argument("--version", type=int, default=None, help="Campaign version [default: latest archived].")
    parser.add_argument("--since", default=None, help="First day (YYYY-MM-DD, inclusive).")
    parser.add_argument("--until", default=None, help="Last day (YYYY-MM-DD, inclusive).")
    parser.add_argument("--out", required=True, help="Aggregate file to write (path or URI).")
    parser.add_argument("--master", default=None, help="Spark master [default: spark-submit's].")
    parser.add_argument("--verbose", action="store_true",
                        help="Show Spark's own output (log4j, progress) when this script starts the JVM.")
    args = parser.parse_args(argv)
    result = run(args.archive, args.campaign, args.out, version=args.version, since=args.since, until=args.until,
                 master=args.master, verbose=args.verbose)
    print(f"{result.reports()} reports of {result.spec.name} v{result.spec.version} over {len(result.days)} days "
          f"-> {args.out}")


if __name__ == "__main__":  # run the importable module's main, so the tasks' functions pickle by reference
    from collector.spark_aggregate import main as module_main

    module_main()
