"""The leader's distributed progress in ``/metrics`` (Prometheus), read from its database at each scrape, so every
gunicorn worker answers the same.  Bounded cardinality: one set of series per campaign (its latest version),
labelled only by the campaign, a state from ``progress.STATES`` or a report state, and a reason from
``ProtocolError`` (anything else counts as ``rejected-by-helper``); never per batch or per report."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from ..storage import StorageBase
from .leader.progress import STATES, campaign_progress, metric_reason
from .store import DistStore

REPORT_STATES = ("accepted", "pending", "aggregated")


def progress_exposition(storage: StorageBase, store: DistStore, *, now: float, grace: float) -> str:
    "Prometheus text format of every distributed campaign's progress on this leader"
    # imported here: prometheus_client picks its value class when first imported, after collector.metrics has set
    # PROMETHEUS_MULTIPROC_DIR (collector.metrics.default_directory)
    from prometheus_client import CollectorRegistry, generate_latest

    progress = [campaign_progress(store, campaign, now=now, grace=grace)
                for campaign in storage.list_campaigns()
                if getattr(campaign.spec, "trust", "local") == "distributed"
                and (known := store.campaign(campaign.name, campaign.fingerprint)) is not None
                and known.role == "leader"]
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Progress(progress))
    return generate_latest(registry).decode("utf-8")


class _Progress:
    "A prometheus_client custom collector over progress already read"

    def __init__(self, progress: list[dict]) -> None:
        self.progress = progress

    def collect(self) -> Iterator[Any]:
        # imported here: see progress_exposition
        from prometheus_client.core import GaugeMetricFamily

        reports = GaugeMetricFamily("ldp_distributed_reports", "Reports of a distributed campaign's latest version: "
                                    "accepted, pending (waiting for or in a job), aggregated.", labels=["campaign",
                                                                                                       "state"])
        rejected = GaugeMetricFamily("ldp_distributed_rejected_reports", "Reports rejected, by reason.",
                                     labels=["campaign", "reason"])
        batches = GaugeMetricFamily("ldp_distributed_batches", "Batches by state (open, ready, below_min_batch, "
                                    "collecting, collected).", labels=["campaign", "state"])
        shortfall = GaugeMetricFamily("ldp_distributed_open_batch_to_min_batch", "Reports the newest open batch "
                                      "still needs to reach min_batch (0: none open, or it has enough).",
                                      labels=["campaign"])
        for item in self.progress:
            name, totals = item["campaign"], item["totals"]
            for state in REPORT_STATES:
                reports.add_metric([name, state], totals[state])
            by_reason: dict[str, int] = {}
            for reason, count in totals["rejected"].items():
                label = metric_reason(reason)
                by_reason[label] = by_reason.get(label, 0) + count
            for reason, count in sorted(by_reason.items()):
                rejected.add_metric([name, reason], count)
            for state in STATES:
                batches.add_metric([name, state], sum(b["state"] == state for b in item["batches"]))
            open_batches = [b for b in item["batches"] if b["state"] == "open"]
            shortfall.add_metric([name], open_batches[0]["to_min_batch"] if open_batches else 0)
        yield from (reports, rejected, batches, shortfall)
