"""The leader's side of a distributed campaign, one module per stage:

- ``campaigns``: campaign creation with the helper (the verify key), the listing's ``aggregators`` block;
- ``upload``: uploads (each report checked with ``client_sdk.distributed_messages``, the leader's share opened);
- ``jobs``: aggregation jobs, created, leased to one driver at a time and run with the helper, crash-safe (its
  doc walks one job);
- ``collect``: the collection of a batch into its release;
- ``progress``: where each batch stands (accepted, rejected by reason, pending, aggregated, distance to min_batch);
- ``driver``: the thread that runs pending jobs in every worker of ``serve --role leader``.

The names below are this package's API (the blueprints, the CLI and the tests import them from here).
"""

from __future__ import annotations

from .campaigns import aggregators_block, campaign_vdaf, provision_campaign, refresh_helper_configs
from .collect import CollectError, collect
from .driver import Driver
from .jobs import JOB_SIZE, LEASE_SECONDS, PendingWork, RunSummary, create_jobs, run_job, run_pending
from .progress import campaign_progress
from .upload import FUTURE_BATCH_DAYS, UploadResult, accept_reports

__all__ = [
    "FUTURE_BATCH_DAYS", "JOB_SIZE", "LEASE_SECONDS", "CollectError", "Driver", "PendingWork", "RunSummary",
    "UploadResult", "accept_reports", "aggregators_block", "campaign_progress", "campaign_vdaf", "collect",
    "create_jobs", "provision_campaign", "refresh_helper_configs", "run_job", "run_pending",
]
