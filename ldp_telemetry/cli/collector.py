"""Collector commands: ``serve``, ``keys``, ``campaign`` and ``aggregates``; thin layers over ``collector``."""

from __future__ import annotations

import datetime as dt
import json
import sys
import warnings
from typing import Any

import click

DB_OPTION = click.option("--db", "database", required=True, type=click.Path(dir_okay=False),
                         envvar=["LDP_DATABASE", "LDP_DATABASE_URL"],
                         help="SQLite database file of the collector, or a postgresql:// URL "
                              "(env LDP_DATABASE or LDP_DATABASE_URL).")


def _today() -> str:
    return dt.datetime.now(dt.timezone.utc).date().isoformat()


def _storage(database: str) -> Any:
    from collector.storage import open_storage

    storage = open_storage(database)
    storage.migrate()
    return storage


def _fail(message: str) -> None:
    click.echo(f"Error: {message}", err=True)
    sys.exit(1)


@click.command()
@DB_OPTION
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", default=8000, show_default=True, type=click.IntRange(0, 65535), help="TCP port.")
@click.option("--workers", default=None, type=click.IntRange(1, 64),
              help="gunicorn worker processes [default: number of CPUs].")
@click.option("--threads", default=8, show_default=True, type=click.IntRange(1, 256),
              help="Threads per worker process (each keeps its own SQLite connection).")
@click.option("--rate-limit", default=None, type=click.FloatRange(0), help="Requests per second per key (0: off).")
@click.option("--rate-burst", default=None, type=click.FloatRange(1), help="Token bucket size per key.")
@click.option("--max-body-bytes", default=None, type=click.IntRange(1024), help="Body limit after decompression.")
@click.option("--max-batch", default=None, type=click.IntRange(1), help="Most reports per POST /v1/reports.")
def serve(database: str, host: str, port: int, workers: int | None, threads: int, rate_limit: float | None,
          rate_burst: float | None, max_body_bytes: int | None, max_batch: int | None) -> None:
    """Run the collector under gunicorn until interrupted.

    Threaded workers that idle or half-open connections cannot starve; workers die with the master; metrics are
    summed over every worker (prometheus_client multiprocess mode, in a fresh PROMETHEUS_MULTIPROC_DIR)."""
    from collector.server import serve as run

    config: dict[str, Any] = {}
    for key, value in (("RATE_LIMIT", rate_limit), ("RATE_BURST", rate_burst), ("MAX_BODY_BYTES", max_body_bytes),
                       ("MAX_BATCH_REPORTS", max_batch)):
        if value is not None:
            config[key] = value
    run(database, host=host, port=port, workers=workers, threads=threads, config=config)


@click.group()
def keys() -> None:
    "Create, list and revoke API keys (the database keeps only their hashes)."


@keys.command("create")
@DB_OPTION
@click.option("--role", required=True, type=click.Choice(["ingest", "admin"]),
              help="ingest: send reports and read specs; admin: everything.")
@click.option("--label", default="", help="A note to recognise the key by.")
def keys_create(database: str, role: str, label: str) -> None:
    "Create a key and print it once; it cannot be shown again."
    with _storage(database) as storage:
        key, record = storage.create_key(role, _today(), label)
    click.echo(key)
    click.echo(f"key id {record.key_id}, role {role}: store the key now, it is not kept", err=True)


@keys.command("list")
@DB_OPTION
def keys_list(database: str) -> None:
    "List key ids, roles and labels (never the keys)."
    with _storage(database) as storage:
        for record in storage.list_keys():
            click.echo(f"{record.key_id}\t{record.role}\t{record.created_day}\t{record.label}")


@keys.command("revoke")
@DB_OPTION
@click.argument("key_id")
def keys_revoke(database: str, key_id: str) -> None:
    "Revoke the key with KEY_ID (as shown by 'keys list')."
    with _storage(database) as storage:
        if not storage.revoke_key(key_id):
            _fail(f"no key with id {key_id!r}")
    click.echo(f"revoked {key_id}")


@click.group()
def campaign() -> None:
    "Create, list and show campaigns."


@campaign.command("create")
@DB_OPTION
@click.argument("spec_file", type=click.File("r"))
def campaign_create(database: str, spec_file: Any) -> None:
    "Create a campaign (or its next version) from SPEC_FILE, a JSON spec ('-' for stdin)."
    from client_sdk.errors import SpecError
    from collector.storage import VersionConflict

    try:
        spec = json.load(spec_file)
    except json.JSONDecodeError as exc:
        _fail(f"spec is not valid JSON ({exc.msg})")
    with _storage(database) as storage, warnings.catch_warnings():
        warnings.simplefilter("default")
        try:
            created_campaign, created = storage.create_campaign(spec, _today())
        except (SpecError, VersionConflict) as exc:
            _fail(f"invalid spec: {exc}")
    click.echo(json.dumps(created_campaign.to_dict(), indent=2))
    if not created:
        click.echo("an identical version already exists; nothing created", err=True)


@campaign.command("list")
@DB_OPTION
def campaign_list(database: str) -> None:
    "List campaigns: name, latest version, mechanism, fingerprint."
    with _storage(database) as storage:
        for item in storage.list_campaigns():
            click.echo(f"{item.name}\t{item.version}\t{item.spec.mechanism}\t{item.fingerprint}")


@campaign.command("show")
@DB_OPTION
@click.argument("name")
@click.option("--version", "version", type=click.IntRange(1), default=None, help="Version [default: latest].")
def campaign_show(database: str, name: str, version: int | None) -> None:
    "Print one campaign version as JSON."
    from collector.storage import CampaignNotFound

    with _storage(database) as storage:
        try:
            item = storage.get_campaign(name, version)
        except CampaignNotFound as exc:
            _fail(str(exc))
        click.echo(json.dumps({**item.to_dict(), "reports": storage.count_reports(name)}, indent=2))


@click.group()
def aggregates() -> None:
    "Maintain the per-day aggregates."


@aggregates.command("rebuild")
@DB_OPTION
@click.option("--campaign", "name", default=None, help="Only this campaign [default: all].")
def aggregates_rebuild(database: str, name: str | None) -> None:
    "Recompute aggregates from the raw reports (one transaction)."
    from collector.storage import CampaignNotFound

    with _storage(database) as storage:
        if name is not None:
            try:
                storage.get_campaign(name)
            except CampaignNotFound as exc:
                _fail(str(exc))
        rows = storage.rebuild_aggregates(name)
    click.echo(f"rebuilt {rows} aggregate rows")
