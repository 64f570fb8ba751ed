"""The demo's distributed phase: a leader and a helper on loopback, the users' sealed reports, one collection."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from client_sdk.clock import utc_today
from collector.admin_client import AdminClient, campaign_path
from collector.errors import AdminApiError

from .devices import Progress, report_distributed
from .errors import DemoStopped
from .reports import fetch_reports
from .scenario import DemoCampaign
from .servers import create_campaigns, running_aggregators


def collect_today(url: str, admin_key: str, names: Sequence[str], day: str | None = None) -> dict[str, str]:
    """Collect the batch of ``day`` (default today: the leader must have seen that day end) of each campaign (the
    aggregators add their noise); a note for each that could not be"""
    day = day or utc_today()
    notes = {}
    with AdminClient(url, admin_key, timeout=300) as client:
        for name in names:
            try:
                client.post(campaign_path(name, "/collect"), {"batch": day})
            except AdminApiError as exc:
                if exc.status is None:  # no answer: the demo fails, as for any other request
                    raise
                notes[name] = f"no release: {exc.problem.get('detail', exc.status)}"
    return notes



def serve_distributed(folder: Path, campaigns: Sequence[DemoCampaign], population: dict[str, list],
                      update: Progress, *, stop: threading.Event | None = None,
                      uploaded: Callable[[], None] | None = None,
                      on_data: Callable[[list[Any], dict[str, str]], None] | None = None,
                      ) -> tuple[list[Any], dict[str, str]]:
    """Leader and helper on loopback, the users' sealed reports, one collection; each campaign's report data
    (as :func:`fetch_reports` returns it) and the notes of those that could not be collected.

    ``update(count)`` counts the uploaded reports; ``uploaded()`` is called once every report is in, and
    ``on_data(fetched, notes)`` with the result before the leader and helper stop (they take a second).  Once
    ``stop`` is set the phase ends at its next step (a batch, a request) with :class:`DemoStopped`, and the leader
    and helper are stopped on the way out, as on any failure (which sets ``stop`` first)."""
    def check() -> None:
        if stop is not None and stop.is_set():
            raise DemoStopped("the distributed phase was stopped")

    def counted(count: int) -> None:
        check()
        update(count)

    with running_aggregators(folder) as aggregators:
        try:
            check()
            created = create_campaigns(aggregators.url, aggregators.admin, campaigns)
            report_distributed(aggregators.url, aggregators.ingest, created, population, counted,
                               helper_url=aggregators.helper_url)
            if uploaded is not None:
                uploaded()
            check()
            day = aggregators.end_day()  # the night passes: the users' day has ended, its batch can be released
            notes = collect_today(aggregators.url, aggregators.admin, list(created), day)
            check()
            fetched = fetch_reports(aggregators.url, aggregators.admin, campaigns, population)
            if on_data is not None:
                on_data(fetched, notes)
            return fetched, notes
        except BaseException:
            if stop is not None:
                stop.set()  # the phase beside this one stops now, not once the leader and helper have
            raise
