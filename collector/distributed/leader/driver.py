"""The aggregation driver: a thread in every gunicorn worker of every ``serve --role leader`` process on a database
that runs pending jobs (each job is leased to one driver at a time: ``jobs``) and, every ``refresh_interval``
seconds, reads the helper's HPKE configs again (a rotated helper key reaches the campaign listing, so devices seal
to it)."""

from __future__ import annotations

import logging
import threading
import time

from ...config import DEFAULTS
from ...storage import open_storage
from ..peer import Backoff, PeerClient, PeerUnavailable
from ..store import DistStore
from .campaigns import refresh_helper_configs
from .jobs import JOB_SIZE, LEASE_SECONDS, lease_owner, run_pending

logger = logging.getLogger("collector")
# Seconds ``Driver.stop`` waits for a round to end before it gives the leases back: well below gunicorn's
# graceful_timeout (10 s, collector.server), after which the master SIGKILLs the worker.
STOP_SECONDS = 3.0


class Driver(threading.Thread):
    "Runs pending jobs every ``interval`` seconds; after a failure waits with exponential backoff"

    def __init__(self, database: str, helper_url: str, token: str, interval: float,
                 backoff: Backoff | None = None, refresh_interval: float = DEFAULTS["HPKE_REFRESH_INTERVAL"],
                 lease_seconds: float = LEASE_SECONDS) -> None:
        super().__init__(name="ldp-aggregation-driver", daemon=True)
        self.database, self.helper_url, self.token, self.interval = database, helper_url, token, interval
        self.lease_seconds = lease_seconds
        self.backoff = backoff or Backoff(base=max(interval, 0.5), cap=60.0)
        self.stopping = threading.Event()
        self.failures = 0
        self.refresh_interval = refresh_interval
        self.refreshed: float | None = None  # time.monotonic() of the last read of the helper's configs
        self.owner = lease_owner()  # one name for all its leases, so that ``stop`` can give them back

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
                    run_pending(storage, store, peer, job_size=JOB_SIZE, lease_seconds=self.lease_seconds,
                                owner=self.owner, stopping=self.stopping)
            self.failures = 0
            return self.interval
        except PeerUnavailable as exc:
            self.failures += 1
            logger.warning("aggregation jobs pending, helper unavailable (attempt %d): %s", self.failures, exc)
        except Exception:  # noqa: BLE001 (the driver must survive anything and try again later)
            self.failures += 1
            logger.exception("aggregation driver round failed")
        return self.backoff.delay(self.failures - 1)


    def stop(self, timeout: float = STOP_SECONDS) -> int:
        """Stop (the worker exits): no further round or job; wait up to ``timeout`` seconds for the round in progress,
        then give back the leases this driver still holds (a job waiting for the helper's answer is free at once for
        another driver or a collection, instead of after ``lease_seconds``); how many were given back.  Should the
        round still finish its job, the job counts once (``DistStore.finish_job``)."""
        self.stopping.set()
        if self.is_alive():
            self.join(timeout)
        try:
            with open_storage(self.database) as storage:
                released = DistStore(storage).release_leases(self.owner)
        except Exception:  # noqa: BLE001 (the worker is exiting; its leases expire anyway)
            logger.exception("aggregation driver: could not give its job leases back")
            return 0
        if released:
            logger.info("aggregation driver stopped: gave back the leases of %d pending jobs", released)
        return released
