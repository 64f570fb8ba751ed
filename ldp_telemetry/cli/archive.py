"""``ldp-telemetry export`` (the Parquet archive) and ``ldp-telemetry spark aggregate``; thin layers over
``collector.archive`` and ``collector.spark_aggregate``."""

from __future__ import annotations

from pathlib import Path

import click

from .collector import DB_OPTION, _fail
from .report import DayType

# Function-level imports: each command imports the archive and Spark modules when it runs: `--help` of a command
# does not load them (+290 ms, 156 modules); pyarrow and pyspark are the optional archive extra.


@click.command()
@click.argument("campaign")
@click.option("--out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Archive root: files go to OUT/campaign=C/version=V/day=D/part-0.parquet.")
@click.option("--since", type=DayType(), help="First day to export (UTC, inclusive).")
@click.option("--until", type=DayType(), help="Last day to export (UTC, inclusive).")
@DB_OPTION
def export(campaign: str, out: Path, since: str | None, until: str | None, database: str) -> None:
    """Export CAMPAIGN's raw perturbed reports as Parquet, one file per version and day; rerunning is idempotent.

    Each file holds one column, payload (the stored form of each report's payload, without its report id); the
    spec and its fingerprint are in the file's metadata.  Example: ldp-telemetry export browser --out archive
    --db collector.db"""
    from client_sdk.errors import LDPError
    from collector.archive import export_campaign
    from collector.storage import open_storage

    if since and until and since > until:
        raise click.UsageError("--since must not be after --until")
    try:
        with open_storage(database) as storage:
            storage.migrate()
            result = export_campaign(storage, campaign, out, since=since, until=until)
    except LDPError as exc:
        _fail(str(exc))
    click.echo(f"{result.reports} reports: {len(result.written)} files written, "
               f"{len(result.unchanged)} unchanged, under {out}")


@click.group()
def spark() -> None:
    "Re-aggregate archived reports on Apache Spark (needs the archive extra and Java 17)."


@spark.command("aggregate")
@click.argument("archive")
@click.option("--campaign", required=True, help="Campaign to aggregate.")
@click.option("--version", "version", type=click.IntRange(1), default=None,
              help="Campaign version [default: the latest in the archive].")
@click.option("--since", type=DayType(), help="First day (UTC, inclusive).")
@click.option("--until", type=DayType(), help="Last day (UTC, inclusive).")
@click.option("--master", default="local[2]", show_default=True,
              help="Spark master URL (local mode binds to 127.0.0.1).")
@click.option("--verbose", is_flag=True, help="Show Spark's own output (log4j lines, warnings, progress).")
@click.option("--out", default=None,
              help="Aggregate file to write (path or URI) [default: CAMPAIGN.aggregate.json].")
def spark_aggregate(archive: str, campaign: str, version: int | None, since: str | None, until: str | None,
                    master: str, verbose: bool, out: str | None) -> None:
    """Compute CAMPAIGN's per-day aggregates from the Parquet ARCHIVE with PySpark and write an aggregate file.

    The same aggregation as the collector's, merged in a tree; read the result with ldp-telemetry report CAMPAIGN
    --aggregate FILE.  Example: ldp-telemetry spark aggregate archive --campaign browser --out browser.json"""
    from client_sdk.errors import LDPError
    from collector.spark_aggregate import run

    if since and until and since > until:
        raise click.UsageError("--since must not be after --until")
    target = out or f"{campaign}.aggregate.json"
    try:
        result = run(archive, campaign, target, version=version, since=since, until=until, master=master,
                     verbose=verbose)
    except LDPError as exc:
        _fail("\n".join([str(exc), *getattr(exc, "__notes__", [])]))
    click.echo(f"{result.reports()} reports of {campaign} v{result.spec.version} over {len(result.days)} days "
               f"-> {target}")
