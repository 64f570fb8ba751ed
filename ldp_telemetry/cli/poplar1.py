"""``ldp-telemetry poplar1``: operator commands of poplar1 campaigns (distributed heavy hitters), against a running
leader's admin API (``collector.admin_client``), as ``campaign collect --url`` does for Prio3."""

from __future__ import annotations

import json
from typing import Any

import click

# Function-level imports: the command imports the admin client and the report renderers when it runs: its `--help`
# does not load them.

HTTP_TIMEOUT_SECONDS = 600  # a walk prepares every report at every level, with the helper: minutes for a large batch


@click.group()
def poplar1() -> None:
    "Poplar1 campaigns (distributed heavy hitters): walk a batch with the leader and the helper."


@poplar1.command("walk")
@click.argument("name")
@click.option("--batch", required=True, help="The batch to walk: a UTC day YYYY-MM-DD (a poplar1 batch is a day).")
@click.option("--url", required=True, envvar="LDP_URL", help="The leader, e.g. http://127.0.0.1:8000 (env LDP_URL).")
@click.option("--token", required=True, envvar="LDP_TOKEN", help="An admin key of the leader (env LDP_TOKEN).")
@click.option("--json", "as_json", is_flag=True, help="Print the stored release as JSON instead of the summary.")
def walk(name: str, batch: str, url: str, token: str, as_json: bool) -> None:
    """Walk one batch of poplar1 campaign NAME on its leader (once; again prints the stored release) and print
    the release: the heavy hitters with their counts and intervals, every level, the noise and the guarantee.

    Example: ldp-telemetry poplar1 walk top_paths --batch 2026-12-01 --url http://127.0.0.1:8000 --token $ADMIN_KEY
    """
    from client_sdk.distributed_messages import check_batch
    from client_sdk.errors import ShareRejected

    try:
        day = check_batch(batch, "--batch")
    except ShareRejected as exc:
        raise click.BadParameter(exc.message, param_hint="'--batch'") from None
    release = _post_walk(url, token, name, day)
    if as_json:
        click.echo(json.dumps(release, indent=2))
        return
    from estimators.report import ReportData, render_table

    click.echo(render_table(ReportData(release["estimate"], None)), nl=False)


def _post_walk(url: str, token: str, name: str, batch: str) -> Any:
    "POST the walk to the leader; its refusal, an unknown campaign or no answer as one line (exit 1)"
    from collector.admin_client import AdminClient, campaign_path
    from collector.errors import AdminApiError

    try:
        with AdminClient(url, token, timeout=HTTP_TIMEOUT_SECONDS) as client:
            return client.post(campaign_path(name, "/walk"), {"batch": batch})
    except AdminApiError as exc:
        slug = str(exc.problem.get("type", "")).rsplit(":", 1)[-1] if exc.problem else ""
        if exc.status == 404:
            raise click.ClickException(f"unknown campaign {name!r} at {url}") from None
        raise click.ClickException(f"{slug}: {exc}" if slug and exc.status == 409 else str(exc)) from None
