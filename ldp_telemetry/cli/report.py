"""``ldp-telemetry report``: one campaign's estimate as a table, JSON, Markdown or a self-contained HTML page.

The estimate comes from the collector's database (``--db``) or from a running collector (``--url`` and
``--token``, ``GET /v1/campaigns/<name>/estimate``), both through ``collector.reporting``; rendering is
``estimators.report``.  This module only parses options, calls those and writes the output.  Data goes to stdout
or ``--out``; progress goes to stderr, and only on a terminal.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from client_sdk.errors import LDPError

# Function-level imports: the command imports the report source and renderers when it runs: its `--help` does not load
# them (+400 ms, 344 modules).

FORMATS = ("table", "json", "markdown", "html")


class ReportError(LDPError):
    "The report could not be written (a one-line message)"


class DayType(click.ParamType):
    "A UTC day, YYYY-MM-DD"

    name = "YYYY-MM-DD"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return dt.date.fromisoformat(str(value)).isoformat()
        except ValueError:
            self.fail(f"{value!r} is not a day in the form YYYY-MM-DD", param, ctx)


@click.command()
@click.argument("campaign")
@click.option("--db", "db_path", type=click.Path(dir_okay=False), envvar=["LDP_DATABASE", "LDP_DATABASE_URL"],
              help="Read the collector's database directly: a SQLite file or a postgresql:// URL (env LDP_DATABASE "
                   "or LDP_DATABASE_URL, unless --url or --aggregate is given).")
@click.option("--url", help="Ask a running collector instead, e.g. http://127.0.0.1:8000.")
@click.option("--aggregate", "aggregate_file", type=click.Path(dir_okay=False, path_type=Path),
              help="Read an aggregate file instead (as 'ldp-telemetry spark aggregate' writes).")
@click.option("--token", envvar="LDP_TOKEN", help="Admin key for --url (or the LDP_TOKEN environment variable).")
@click.option("--since", type=DayType(), help="First day of the window (UTC, inclusive).")
@click.option("--until", type=DayType(), help="Last day of the window (UTC, inclusive).")
@click.option("--confidence", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=0.95,
              show_default=True, help="Confidence level of the intervals.")
@click.option("--format", "output_format", type=click.Choice(FORMATS), default="table", show_default=True,
              help="Output format.")
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path),
              help="Write here instead of stdout (Markdown writes its PNG figures beside it).")
@click.option("--daily", is_flag=True,
              help="JSON: include every value's per-day estimates (HTML and Markdown always draw the top values).")
def report(campaign: str, db_path: str | None, url: str | None, aggregate_file: Path | None, token: str | None,
           since: str | None, until: str | None, confidence: float, output_format: str, out: Path | None,
           daily: bool) -> None:
    """Estimates of CAMPAIGN with standard errors, intervals and the price against central DP.

    A distributed campaign (its leader's --db or --url) is estimated from its releases, the window's batches
    added up, with the standard errors under local, distributed and central DP and the guarantees it rests on.

    Examples: ldp-telemetry report browser --db collector.db; ldp-telemetry report browser --aggregate
    browser.aggregate.json;
    ldp-telemetry report browser --url http://127.0.0.1:8000 --token $ADMIN_KEY --format html --out browser.html
    """
    if click.get_current_context().get_parameter_source("db_path") == ParameterSource.ENVIRONMENT and (
            url is not None or aggregate_file is not None):
        db_path = None  # the environment's database, as every command reads it, yields to a source given here
    if [db_path, url, aggregate_file].count(None) != 2:
        raise click.UsageError("give exactly one of --db PATH, --url URL or --aggregate FILE")
    if url is not None and not token:
        raise click.UsageError("--url needs --token (an admin key) or LDP_TOKEN")
    if since and until and since > until:
        raise click.UsageError("--since must not be after --until")
    from collector.reporting import report_data_from_aggregate_file, report_data_from_db, report_data_from_url
    from estimators.errors import SourceError
    from estimators.report.model import DAILY_SERIES

    figures = output_format in ("html", "markdown")
    want_daily = figures or (daily and output_format == "json")

    progress = _progress_printer()
    try:
        progress(f"reading {campaign!r}")
        if aggregate_file is not None:
            data = report_data_from_aggregate_file(aggregate_file, campaign, since=since, until=until,
                                                   confidence=confidence, daily=want_daily)
        elif db_path is not None:
            data = report_data_from_db(db_path, campaign, since=since, until=until, confidence=confidence,
                                       daily=want_daily)
        else:  # the figure needs only the top values of each day: a slim per-day answer
            data = report_data_from_url(url or "", token or "", campaign, since=since, until=until,
                                        confidence=confidence, daily=want_daily,
                                        daily_top=DAILY_SERIES if figures and not daily else None)
        if output_format in ("html", "markdown"):
            progress("drawing the figures")
        write_report(data, output_format, out)
    except (SourceError, ReportError) as exc:
        raise click.ClickException(str(exc)) from None
    if out is not None:
        progress(f"wrote {out}")


def render(data: Any, output_format: str, *, image_prefix: str | None = None) -> tuple[str, dict[str, bytes]]:
    "The report text in ``output_format`` and any image files to write beside it"
    from estimators import report as rendering

    if output_format == "table":
        return rendering.render_table(data), {}
    if output_format == "json":
        return rendering.render_json(data), {}
    if output_format == "html":
        return rendering.render_html(data), {}
    markdown = rendering.render_markdown(data, image_prefix=image_prefix)
    return markdown.text, markdown.images


def write_report(data: Any, output_format: str, out: Path | None) -> None:
    "Render and write to ``out`` (images beside it) or to stdout (Markdown then has no figures)"
    text, images = render(data, output_format, image_prefix=out.stem if out is not None else None)
    if out is None:
        click.echo(text, nl=False)
        return
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        for name, png in images.items():
            (out.parent / name).write_bytes(png)
    except OSError as exc:
        raise ReportError(f"cannot write {out}: {exc.strerror or exc}") from None


def _progress_printer() -> Callable[[str], None]:
    "Messages to stderr when it is a terminal; silent otherwise"
    if not sys.stderr.isatty():
        return lambda message: None
    return lambda message: click.echo(f"{message}...", err=True)
