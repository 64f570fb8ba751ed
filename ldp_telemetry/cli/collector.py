"""Collector commands: ``serve``, ``keys``, ``campaign``, ``aggregates`` (local campaigns) and ``run-jobs`` (a
leader's aggregation jobs); thin layers over ``collector``."""

from __future__ import annotations

import json
import os
import sys
import warnings
from typing import TYPE_CHECKING, Any

import click

from client_sdk.clock import utc_today
from client_sdk.kinds import find_kind

# Function-level imports: each command imports the collector modules it uses when it runs: `keys list` does not load
# the server, the distributed modules and requests (+780 ms, 500 modules); tests/budgets/test_cli_startup.py.

if TYPE_CHECKING:
    from collector.storage import ApiKey

DB_OPTION = click.option("--db", "database", required=True, type=click.Path(dir_okay=False),
                         envvar=["LDP_DATABASE", "LDP_DATABASE_URL"],
                         help="SQLite database file of the collector, or a postgresql:// URL "
                              "(env LDP_DATABASE or LDP_DATABASE_URL).")


# campaign commands work on a local database (--db) or a running collector's admin API (--url and --token)
TARGET_DB_OPTION = click.option("--db", "database", default=None, type=click.Path(dir_okay=False),
                                envvar=["LDP_DATABASE", "LDP_DATABASE_URL"],
                                help="SQLite database file of the collector, or a postgresql:// URL "
                                     "(env LDP_DATABASE or LDP_DATABASE_URL).")
URL_OPTION = click.option("--url", default=None, envvar="LDP_URL",
                          help="A running collector instead of --db, e.g. http://127.0.0.1:8000 (env LDP_URL).")
TOKEN_OPTION = click.option("--token", default=None, envvar="LDP_TOKEN",
                            help="Admin key for --url (env LDP_TOKEN).")
JSON_OPTION = click.option("--json", "as_json", is_flag=True, help="Print a JSON list instead of tab-separated lines.")
HTTP_TIMEOUT_SECONDS = 30


def _target(database: str | None, url: str | None, token: str | None) -> str:
    "'db' or 'url': exactly one of --db and --url (with --token) must be given"
    if (database is None) == (url is None):
        raise click.UsageError("give either --db (a local database) or --url with --token (a running collector)")
    if url is not None and not token:
        raise click.UsageError("--url needs --token (an admin key; or the LDP_TOKEN environment variable)")
    return "db" if database is not None else "url"


def _api(method: str, url: str, token: str, path: str, body: Any = None) -> tuple[int, Any]:
    "One request to the collector's admin API: (status, JSON body); exits with one line if it fails"
    from collector.admin_client import AdminClient
    from collector.errors import AdminApiError

    try:
        with AdminClient(url, token, timeout=HTTP_TIMEOUT_SECONDS) as client:
            return client.request(method, path, body)
    except AdminApiError as exc:
        _fail(str(exc))
    raise AssertionError("unreachable")


def _campaign_path(name: str, suffix: str = "") -> str:
    from collector.admin_client import campaign_path

    return campaign_path(name, suffix)


def _campaign_json(storage: Any, item: Any) -> dict:
    "A campaign as the API shows it, from a local database"
    closed = storage.closed_campaigns()
    out = {**item.to_dict(), "closed": item.name in closed}
    if out["closed"]:
        out["closed_day"] = closed[item.name]
    out["expires"] = item.spec.expires
    out["expired"] = item.spec.expired_on(utc_today())
    return out



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
@click.option("--public-rate-limit", default=None, type=click.FloatRange(0),
              help="Requests per second per public key (keys create --public; 0: off) [default: 20].")
@click.option("--public-rate-burst", default=None, type=click.FloatRange(1),
              help="Token bucket size per public key [default: 100].")
@click.option("--public-max-batch", default=None, type=click.IntRange(1),
              help="Most reports per POST /v1/reports of a public key [default: 100].")
@click.option("--request-timeout", default=15.0, show_default=True, type=click.FloatRange(0.1, 3600),
              help="Seconds from a request's first byte until all of it has arrived; then 408.")
@click.option("--role", default="standalone", show_default=True, envvar="LDP_ROLE",
              type=click.Choice(["standalone", "leader", "helper", "shuffler"]),
              help="standalone: local-DP campaigns only; leader or helper: an aggregator of distributed campaigns; "
                   "shuffler: takes shuffled campaigns' reports from devices and forwards them to --upstream in "
                   "shuffled batches.")
@click.option("--upstream", default=None, envvar="LDP_UPSTREAM_URL",
              help="Shuffler: the collector it forwards to, e.g. http://127.0.0.1:8000 (env LDP_UPSTREAM_URL).")
@click.option("--upstream-token", default=None, envvar="LDP_UPSTREAM_TOKEN",
              help="Shuffler: its own key at the upstream collector, role shuffler (env LDP_UPSTREAM_TOKEN).")
@click.option("--helper-url", default=None, envvar="LDP_HELPER_URL",
              help="The leader's helper: https://..., or http:// to a loopback host only, e.g. "
                   "http://127.0.0.1:8001 (env LDP_HELPER_URL).")
@click.option("--peer-token", default=None, envvar="LDP_PEER_TOKEN",
              help="Aggregator-to-aggregator bearer token, the same on leader and helper (env LDP_PEER_TOKEN).")
@click.option("--aggregate-interval", default=None, type=click.FloatRange(0),
              help="Leader: seconds between rounds of the aggregation driver (0: only 'ldp-telemetry aggregate'; "
                   "env LDP_AGGREGATE_INTERVAL) [default: 2].")
@click.option("--job-lease", default=None, type=click.FloatRange(1),
              help="Leader: seconds an aggregation job stays with the driver that claimed it; a crashed driver's job "
                   "is taken over by another after this (env LDP_JOB_LEASE) [default: 60].")
@click.option("--collect-grace", default=None, type=click.FloatRange(0),
              help="Leader and helper: seconds after a batch has ended (its UTC day, or its spec's shorter window) "
                   "before it may be collected, for reports devices queued in it [default: 3600].")
@click.option("--hpke-overlap-days", default=None, type=click.IntRange(0, 3650), envvar="LDP_HPKE_OVERLAP_DAYS",
              help="Leader or helper: days an older HPKE key still opens reports after 'hpke-keys rotate' "
                   "(env LDP_HPKE_OVERLAP_DAYS) [default: 7].")
@click.option("--cors-origin", "cors_origins", multiple=True, metavar="ORIGIN",
              help="A web origin (scheme://host[:port]) whose pages may read specs and post reports; repeatable "
                   "[default: env LDP_CORS_ORIGINS, comma-separated, else none]. Admin routes never are.")
@click.option("--no-dashboard", "no_dashboard", is_flag=True,
              help="Do not serve the analysts' dashboard at /dashboard/ (env LDP_DASHBOARD=0) [default: served by "
                   "standalone and leader].")
def serve(database: str, host: str, port: int, workers: int | None, threads: int, rate_limit: float | None,
          rate_burst: float | None, max_body_bytes: int | None, max_batch: int | None, request_timeout: float,
          role: str, helper_url: str | None, peer_token: str | None, aggregate_interval: float | None,
          job_lease: float | None, collect_grace: float | None, hpke_overlap_days: int | None,
          cors_origins: tuple[str, ...], public_rate_limit: float | None, public_rate_burst: float | None,
          public_max_batch: int | None, upstream: str | None, upstream_token: str | None,
          no_dashboard: bool = False) -> None:
    """Run the collector under gunicorn until interrupted.

    Threaded workers that see only whole requests (slow or idle clients wait in the event loop, not in a thread);
    workers die with the master; metrics are summed over every worker (prometheus_client multiprocess mode, in a
    fresh PROMETHEUS_MULTIPROC_DIR). The log names the bound address and port (also for --port 0) and no client's."""
    config: dict[str, Any] = {"ROLE": role}
    if no_dashboard:
        config["DASHBOARD"] = 0
    if role == "shuffler":
        if not upstream or not upstream_token:
            _fail("--role shuffler needs --upstream and --upstream-token (the collector and the shuffler's own "
                  "key there, role shuffler)")
        if not str(upstream).startswith(("http://", "https://")):
            _fail("--upstream must start with http:// or https://")
        config["UPSTREAM_URL"], config["UPSTREAM_TOKEN"] = upstream, upstream_token
    elif role != "standalone":
        if not peer_token:
            _fail(f"--role {role} needs --peer-token (or LDP_PEER_TOKEN), the same on leader and helper")
        config["PEER_TOKEN"] = peer_token
        if hpke_overlap_days is not None:
            config["HPKE_OVERLAP_DAYS"] = hpke_overlap_days
        if collect_grace is not None:  # both: each aggregator checks a batch's end plus the grace on its clock
            config["COLLECT_GRACE"] = collect_grace
    if role == "leader":
        if not helper_url:
            _fail("--role leader needs --helper-url (or LDP_HELPER_URL)")
        _check_helper_url(str(helper_url))
        config["HELPER_URL"] = helper_url
        if aggregate_interval is not None:
            config["AGGREGATE_INTERVAL"] = aggregate_interval
        if job_lease is not None:
            config["JOB_LEASE"] = job_lease
    from collector.cors import parse_origins

    try:  # checked here, before gunicorn starts workers that would fail one by one
        origins = parse_origins(cors_origins or os.environ.get("LDP_CORS_ORIGINS", ""))
    except ValueError as exc:
        _fail(str(exc))
    if cors_origins:
        config["CORS_ORIGINS"] = origins
    from collector.server import serve as run  # imports gunicorn: only once the options are known to be complete

    for key, value in (("RATE_LIMIT", rate_limit), ("RATE_BURST", rate_burst), ("MAX_BODY_BYTES", max_body_bytes),
                       ("MAX_BATCH_REPORTS", max_batch), ("PUBLIC_RATE_LIMIT", public_rate_limit),
                       ("PUBLIC_RATE_BURST", public_rate_burst), ("PUBLIC_MAX_BATCH_REPORTS", public_max_batch)):
        if value is not None:
            config[key] = value
    _announce_dashboard(database, host, port, config)
    run(database, host=host, port=port, workers=workers, threads=threads, config=config,
        request_timeout=request_timeout)


def _announce_dashboard(database: str, host: str, port: int, config: dict[str, Any]) -> None:
    "The dashboard's address on stderr, when this server serves it (docs/dashboard.md)"
    from collector.config import load_config

    settings = load_config({"DATABASE": database, **config})
    if int(settings["DASHBOARD"]) and settings["ROLE"] in ("standalone", "leader") and port:
        shown = f"[{host}]" if ":" in host else host
        click.echo(f"dashboard: http://{shown}:{port}/dashboard/ (open it and enter an admin key)", err=True)


@click.group()
def keys() -> None:
    "Create, list and revoke API keys (the database keeps only their hashes)."


@keys.command("create")
@DB_OPTION
@click.option("--role", required=True, type=click.Choice(["ingest", "admin", "shuffler"]),
              help="ingest: send reports and read specs; admin: everything; shuffler: a shuffler's key at its "
                   "collector (read specs, post shuffled batches: the only role that may).")
@click.option("--label", default="", help="A note to recognise the key by.")
@click.option("--expires", "expires_day", default=None, type=click.DateTime(["%Y-%m-%d"]),
              help="Last UTC day (YYYY-MM-DD) on which the key is accepted [default: never expires].")
@click.option("--public", is_flag=True,
              help="A key to embed in web pages or apps, which anyone can copy: ingest only, scoped to --campaign, "
                   "with the stricter public rate limits.")
@click.option("--campaign", "campaigns", multiple=True, metavar="NAME",
              help="Scope an ingest key to this campaign (repeatable): it reads and reports to these only.")
def keys_create(database: str, role: str, label: str, expires_day: Any, public: bool,
                campaigns: tuple[str, ...]) -> None:
    "Create a key and print it once; it cannot be shown again."
    expires = expires_day.date().isoformat() if expires_day is not None else None
    with _storage(database) as storage:
        try:
            key, record = storage.create_key(role, utc_today(), label, expires, public=public,
                                             campaigns=campaigns or None)
        except ValueError as exc:
            _fail(str(exc))
    click.echo(key)
    until = f", valid through {expires}" if expires else ""
    scope = f", {_scope(record)}" if record.campaigns is not None else ""
    store = "embed it in the page; it is public" if public else "store the key now, it is not kept"
    click.echo(f"key id {record.key_id}, role {role}{scope}{until}: {store}", err=True)


def _scope(record: ApiKey) -> str:
    "How ``keys`` commands show a key's scope"
    kind = "public, " if record.public else ""
    return kind + ("campaigns " + ",".join(record.campaigns) if record.campaigns is not None else "all campaigns")


@keys.command("list")
@DB_OPTION
@JSON_OPTION
def keys_list(database: str, as_json: bool) -> None:
    "List key ids, roles, scopes (public, campaigns), creation, expiry and last-use days, labels (never the keys)."
    with _storage(database) as storage:
        records = storage.list_keys()
    if as_json:
        click.echo(json.dumps([{"key_id": r.key_id, "role": r.role, "public": r.public,
                                "campaigns": None if r.campaigns is None else list(r.campaigns),
                                "created_day": r.created_day, "expires_day": r.expires_day,
                                "last_used_day": r.last_used_day, "label": r.label} for r in records], indent=2))
        return
    for r in records:
        click.echo(f"{r.key_id}\t{r.role}\t{_scope(r)}\t{r.created_day}\texpires {r.expires_day or 'never'}\t"
                   f"last used {r.last_used_day or 'never'}\t{r.label}")


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
    "Create, list, show and close campaigns (local --db, or a running collector with --url and --token)."


@campaign.command("create")
@TARGET_DB_OPTION
@URL_OPTION
@TOKEN_OPTION
@click.option("--helper-url", default=None, envvar="LDP_HELPER_URL",
              help="Distributed campaigns: the leader's helper (env LDP_HELPER_URL).")
@click.option("--peer-token", default=None, envvar="LDP_PEER_TOKEN",
              help="Distributed campaigns: the aggregator-to-aggregator token (env LDP_PEER_TOKEN).")
@click.argument("spec_file", type=click.File("r"))
def campaign_create(database: str | None, url: str | None, token: str | None, helper_url: str | None,
                    peer_token: str | None, spec_file: Any) -> None:
    "Create a campaign (or its next version) from SPEC_FILE, a JSON spec ('-' for stdin)."
    from client_sdk.errors import SpecError
    from collector.kinds import Peers, ProvisionError, collector_kind
    from collector.storage import CampaignClosed, VersionConflict

    target = _target(database, url, token)
    try:
        spec = json.load(spec_file)
    except json.JSONDecodeError as exc:
        _fail(f"spec is not valid JSON ({exc.msg})")
    if target == "url":
        status, out = _api("POST", str(url), str(token), "/v1/campaigns", spec)
        for warning in out.pop("warnings", []):
            click.echo(f"warning: {warning}", err=True)
        created = status == 201
    else:  # the campaign's kind creates it (and provisions it first where its campaigns need that)
        try:
            kind = collector_kind(spec)
        except SpecError as exc:
            _fail(f"invalid spec: {exc}")
        with _storage(str(database)) as storage, warnings.catch_warnings():
            warnings.simplefilter("default")
            try:
                created_campaign, created, extra = kind.provision_campaign(storage, spec, utc_today(),
                                                                           Peers(helper_url, peer_token))
            except (SpecError, VersionConflict, CampaignClosed) as exc:
                _fail(f"invalid spec: {exc}")
            except ProvisionError as exc:
                _fail(str(exc))
            out = {**_campaign_json(storage, created_campaign), **extra}
            for note in kind.creation_notes(created_campaign):
                click.echo(f"warning: {note}", err=True)
    click.echo(json.dumps(out, indent=2))
    if not created:
        click.echo("an identical version already exists; nothing created", err=True)


def _needs_aggregators(spec: Any) -> bool:
    """Whether the spec's kind (a Spec or its JSON) seals its reports to aggregators: its campaign is provisioned
    on the helper first, and its leader shows its progress"""
    kind = find_kind(spec) if spec is not None else None
    return kind is not None and kind.wants_sealing_configs(spec)


@campaign.command("list")
@TARGET_DB_OPTION
@URL_OPTION
@TOKEN_OPTION
@JSON_OPTION
def campaign_list(database: str | None, url: str | None, token: str | None, as_json: bool) -> None:
    "List campaigns: name, latest version, mechanism, fingerprint, state (open, closed or expired)."
    if _target(database, url, token) == "url":
        items = _api("GET", str(url), str(token), "/v1/campaigns")[1]["campaigns"]
    else:
        with _storage(str(database)) as storage:
            items = [_campaign_json(storage, item) for item in storage.list_campaigns()]
    if as_json:
        click.echo(json.dumps(items, indent=2))
        return
    for item in items:
        state = "closed" if item.get("closed") else "expired" if item.get("expired") else "open"
        click.echo(f"{item['name']}\t{item['version']}\t{item['mechanism']}\t{item['fingerprint']}\t{state}")


@campaign.command("show")
@TARGET_DB_OPTION
@URL_OPTION
@TOKEN_OPTION
@click.argument("name")
@click.option("--version", "version", type=click.IntRange(1), default=None, help="Version [default: latest].")
def campaign_show(database: str | None, url: str | None, token: str | None, name: str, version: int | None) -> None:
    """Print one campaign version as JSON (with its report count when read from --db).

    It shows the release ledger's "budget": what a device has spent over the campaign's releases (tight and basic)
    and what remains of the spec's budget.  A distributed campaign on its leader also shows its "progress": per
    batch, reports accepted, rejected by reason,
    pending, aggregated, the distance to min_batch and the batch's state (open, ready, below_min_batch, ...)."""
    from collector.release_ledger import budget_view
    from collector.storage import CampaignNotFound

    if _target(database, url, token) == "url":
        query = f"?version={version}" if version else ""
        out = _api("GET", str(url), str(token), _campaign_path(name, query))[1]
        if _needs_aggregators(out.get("spec")):
            out["progress"] = _api("GET", str(url), str(token), _campaign_path(name, "/progress" + query))[1]
        out["budget"] = _api("GET", str(url), str(token), _campaign_path(name, "/budget" + query))[1]
        click.echo(json.dumps(out, indent=2))
        return
    with _storage(str(database)) as storage:
        try:
            item = storage.get_campaign(name, version)
        except CampaignNotFound as exc:
            _fail(str(exc))
        out = {**_campaign_json(storage, item), "reports": storage.count_reports(name)}
        if _needs_aggregators(item.spec):
            out["progress"] = _progress(storage, item)
        out["budget"] = budget_view(storage, item)
        click.echo(json.dumps(out, indent=2))


def _progress(storage: Any, item: Any) -> dict | None:
    "A distributed campaign's progress from a leader's database (None elsewhere), as its serve would answer it"
    from collector.auth import clock_now
    from collector.config import DEFAULTS
    from collector.distributed.leader import campaign_progress
    from collector.distributed.store import DistStore

    store = DistStore(storage)
    store.migrate()
    known = store.campaign(item.name, item.fingerprint)
    if known is None or known.role != "leader":
        return None
    grace = float(os.environ.get("LDP_COLLECT_GRACE") or DEFAULTS["COLLECT_GRACE"])  # as the leader's serve
    return campaign_progress(store, item, now=clock_now(), grace=grace)


@campaign.command("publish")
@TARGET_DB_OPTION
@URL_OPTION
@TOKEN_OPTION
@click.argument("name")
@click.option("--window", required=True, metavar="START:END", help="The UTC days published (YYYY-MM-DD:YYYY-MM-DD).")
def campaign_publish(database: str | None, url: str | None, token: str | None, name: str, window: str) -> None:
    """Record the publication of a local campaign's window in the release ledger: one report's epsilon per day no
    earlier publication covered; refused (budget-exhausted) if it would pass the spec's budget."""
    from collector.release_ledger import LedgerError, publish_window
    from collector.storage import CampaignNotFound

    if _target(database, url, token) == "url":
        out = _api("POST", str(url), str(token), _campaign_path(name, "/publish"), {"window": window})[1]
    else:
        with _storage(str(database)) as storage:
            try:
                out = publish_window(storage, storage.get_campaign(name), window, utc_today())
            except (CampaignNotFound, LedgerError) as exc:
                _fail(str(exc))
    click.echo(json.dumps(out, indent=2))


@campaign.command("close")
@TARGET_DB_OPTION
@URL_OPTION
@TOKEN_OPTION
@click.argument("name")
def campaign_close(database: str | None, url: str | None, token: str | None, name: str) -> None:
    "Close campaign NAME: devices stop recording it and its reports are rejected; estimates keep working."
    from collector.storage import CampaignNotFound

    if _target(database, url, token) == "url":
        day = _api("POST", str(url), str(token), _campaign_path(name, "/close"))[1]["closed_day"]
    else:
        with _storage(str(database)) as storage:
            try:
                day = storage.close_campaign(name, utc_today())
            except CampaignNotFound as exc:
                _fail(str(exc))
    click.echo(f"campaign {name} closed since {day}")


def _check_helper_url(url: str) -> None:
    "--helper-url must be https (plain http to a loopback host only): the peer token and verify keys travel there"
    from collector.distributed.peer import checked_helper_url

    try:
        checked_helper_url(url)
    except ValueError as exc:
        _fail(f"--helper-url: {str(exc).split(': ', 1)[-1]}")


def _leader(database: str, helper_url: str | None, peer_token: str | None) -> tuple[Any, Any, Any]:
    "(storage, distributed store, peer client) of a leader database"
    from collector.distributed.peer import PeerClient
    from collector.distributed.store import DistStore

    if not helper_url or not peer_token:
        _fail("a leader command needs --helper-url and --peer-token (or LDP_HELPER_URL and LDP_PEER_TOKEN)")
    _check_helper_url(str(helper_url))
    storage = _storage(database)
    store = DistStore(storage)
    store.migrate()
    return storage, store, PeerClient.for_url(str(helper_url), str(peer_token))


HELPER_URL_OPTION = click.option("--helper-url", default=None, envvar="LDP_HELPER_URL",
                                 help="Distributed campaigns: the leader's helper (env LDP_HELPER_URL).")
PEER_TOKEN_OPTION = click.option("--peer-token", default=None, envvar="LDP_PEER_TOKEN",
                                 help="Distributed campaigns: the aggregator-to-aggregator token (env LDP_PEER_TOKEN).")


@campaign.command("collect")
@TARGET_DB_OPTION
@URL_OPTION
@TOKEN_OPTION
@HELPER_URL_OPTION
@PEER_TOKEN_OPTION
@click.argument("name")
@click.option("--batch", required=True, help="The batch: a UTC day YYYY-MM-DD, or for a campaign of shorter batches "
                                             "(its spec's window) the batch's start YYYY-MM-DDTHH:MMZ.")
def campaign_collect(database: str | None, url: str | None, token: str | None, helper_url: str | None,
                     peer_token: str | None, name: str, batch: str) -> None:
    "Collect one batch of distributed campaign NAME (once) and print its release as JSON."
    from client_sdk.distributed_messages import check_batch
    from client_sdk.errors import ShareRejected

    try:
        day = check_batch(batch, "--batch")
    except ShareRejected as exc:
        raise click.BadParameter(exc.message, param_hint="'--batch'") from None
    if _target(database, url, token) == "url":
        click.echo(json.dumps(_api("POST", str(url), str(token), _campaign_path(name, "/collect"),
                                   {"batch": day})[1], indent=2))
        return
    from collector.config import DEFAULTS
    from collector.distributed.leader import CollectError, collect
    from collector.storage import CampaignNotFound

    grace = float(os.environ.get("LDP_COLLECT_GRACE") or DEFAULTS["COLLECT_GRACE"])  # as the leader's serve
    lease = float(os.environ.get("LDP_JOB_LEASE") or DEFAULTS["JOB_LEASE"])
    storage, store, peer = _leader(str(database), helper_url, peer_token)
    with storage:
        try:
            item = storage.get_campaign(name)
            click.echo(json.dumps(collect(storage, store, peer, item, day, grace=grace, lease_seconds=lease),
                                  indent=2))
        except CampaignNotFound as exc:
            _fail(str(exc))
        except CollectError as exc:
            _fail(f"{exc.slug}: {exc.detail}")


@click.command("run-jobs")
@DB_OPTION
@HELPER_URL_OPTION
@PEER_TOKEN_OPTION
@click.option("--job-lease", default=None, type=click.FloatRange(1), envvar="LDP_JOB_LEASE",
              help="Seconds a claimed job stays with this command (env LDP_JOB_LEASE) [default: 60].")
def run_jobs(database: str, helper_url: str | None, peer_token: str | None, job_lease: float | None) -> None:
    """Run the pending aggregation jobs of this leader once (exit 1 if the helper does not answer).

    Jobs another driver holds (a leader's worker, another run-jobs) are left to it; safe to run at any time.  Reads
    the helper's HPKE configs again first (a rotated helper key reaches the campaign listing, as the driver does)."""
    from collector.config import DEFAULTS
    from collector.distributed.leader import PendingWork, refresh_helper_configs, run_pending
    from collector.distributed.peer import PeerError

    storage, store, peer = _leader(database, helper_url, peer_token)
    with storage:
        try:
            refresh_helper_configs(store, peer)
        except PeerError as exc:  # the jobs below say what a helper that does not answer means for them
            click.echo(f"warning: the helper's HPKE configs were not read again ({exc})", err=True)
        try:
            summary = run_pending(storage, store, peer, lease_seconds=job_lease or float(DEFAULTS["JOB_LEASE"]))
        except PendingWork as exc:
            click.echo(json.dumps(exc.summary.to_dict(), indent=2))
            _fail(f"the helper did not answer; {exc.summary.pending_jobs} jobs stay pending, retry later")
    click.echo(json.dumps(summary.to_dict(), indent=2))


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
