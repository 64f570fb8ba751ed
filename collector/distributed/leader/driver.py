"""The aggregation driver: a thread in every gunicorn worker of every ``serve --role leader`` process on a database
that runs pending jobs (each job is leased to one driver at a time: ``jobs``) and, every ``refresh_interval``
seconds, reads the helper's HPKE configs again (a rotated helper key reaches the campaign listing, so devices seal
to it)."""

from __future__ import annotations

import logging
import threading
import time

from ...storage import open_storage
from ..peer import Backoff, PeerClient, PeerUnavailable
from ..store import DistStore
from .campaigns import refresh_helper_configs
from .jobs import JOB_SIZE, LEASE_SECONDS, run_pending

logger = logging.getLogger("collector")


class Driver(threading.Thread):
    "Runs pending jobs every ``interval`` seconds; after a failure waits with exponential backoff"

    def __init__(self, database: str, helper_url: str, token: str, interval: float,
                 backoff: Backoff | None = None, refresh_interval: float = 300.0,
                 lease_seconds: float = LEASE_SECONDS) -> None:
        super().__init__(name="ldp-aggregation-driver", daemon=True)
        self.database, self.helper_url, self.token, self.interval = database, helper_url, token, interval
        self.lease_seconds = lease_seconds
        self.backoff = backoff or Backoff(base=max(interval, 0.5), cap=60.0)
        self.stopping = threading.Event()
        self.failures = 0
        self.refresh_interval = refresh_interval
        self.refreshed: float | None = None  # time.monotonic() of the last read of the helper's configs

    def run(self) -> None:
        delay = self.interval
        while not self.stopping.wait(delay):
            delay = self.step()

    def step(self) -> float:
        "One round; the delay before the next"
        try:
            with open_storage(self.database) as storage:
                store = DistStore(storage)
                peer = PeerClient.for_url(self.helper_url, self.token, retries=0)
                now = time.monotonic()
                if self.refreshed is None or now - self.refreshed >= self.refresh_interval:
                    refresh_helper_configs(store, peer)
                    self.refreshed = now
                if store.pending_batches():
                    run_pending(storage, store, peer, job_size=JOB_SIZE, lease_seconds=self.lease_seconds)
            self.failures = 0
            return self.interval
        except PeerUnavailable as exc:
            self.failures += 1
            logger.warning("aggregation jobs pending, helper unavailable (attempt %d): %s", self.failures, exc)
        except Exception:  # noqa: BLE001 (the driver must survive anything and try again later)
            self.failures += 1
            logger.exception("aggregation driver round failed")
        return self.backoff.delay(self.failures - 1)

