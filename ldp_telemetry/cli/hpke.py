"""``ldp-telemetry hpke-keys``: rotate and list an aggregator's HPKE keys (``collector.distributed.hpke_keys``)."""

from __future__ import annotations

import json
from typing import Any

import click

from .collector import DB_OPTION, JSON_OPTION, _fail, _storage

# Function-level imports: each command imports the collector modules it uses when it runs, as in cli/collector.py
# (`ldp-telemetry --help` loads no server module; tests/budgets/test_cli_startup.py).

OVERLAP_OPTION = click.option("--overlap-days", default=None, type=click.IntRange(0, 3650),
                              envvar="LDP_HPKE_OVERLAP_DAYS",
                              help="Days an older key still opens reports after a rotation, as the aggregator's "
                                   "serve --hpke-overlap-days (env LDP_HPKE_OVERLAP_DAYS) [default: 7].")


@click.group("hpke-keys")
def hpke_keys() -> None:
    "Rotate and list a leader's or helper's HPKE keys (the keys devices seal reports to)."


def _store(database: str) -> Any:
    from collector.distributed.store import DistStore

    storage = _storage(database)
    store = DistStore(storage)
    store.migrate()
    return storage, store


def _states(store: Any, overlap_days: int | None) -> list[dict]:
    from collector.auth import utc_today
    from collector.distributed import hpke_keys as keys

    overlap = keys.DEFAULT_OVERLAP_DAYS if overlap_days is None else overlap_days
    return [state.to_dict() for state in keys.keys(store).key_states(utc_today(), overlap)]


@hpke_keys.command("rotate")
@DB_OPTION
@OVERLAP_OPTION
def rotate(database: str, overlap_days: int | None) -> None:
    """Make a new HPKE key the aggregator's current one and print every key's state as JSON.

    The running aggregator publishes the new key at once (newest first); devices seal to it from their next
    listing.  Older keys still open reports for --overlap-days, then are refused as outdated-config."""
    from collector.auth import utc_today
    from collector.distributed import hpke_keys as keys

    storage, store = _store(database)
    with storage:
        try:
            config_id = keys.rotate(store, utc_today())
        except keys.NoFreeConfigId as exc:
            _fail(str(exc))
        click.echo(json.dumps({"rotated_to": config_id, "keys": _states(store, overlap_days)}, indent=2))


@hpke_keys.command("list")
@DB_OPTION
@OVERLAP_OPTION
@JSON_OPTION
def list_keys(database: str, overlap_days: int | None, as_json: bool) -> None:
    "List the aggregator's HPKE keys, newest first: config id, creation day, state, first day refused."
    storage, store = _store(database)
    with storage:
        states = _states(store, overlap_days)
    if as_json:
        click.echo(json.dumps(states, indent=2))
        return
    for state in states:
        refused = f"refused from {state['retired_from']}" if state["retired_from"] else "-"
        click.echo(f"{state['config_id']}\t{state['created_day']}\t{state['state']}\t{refused}")
