"""Run the whole system once: a collector on loopback, simulated users reporting through the SDK, reports.

The steps, each a function of its own module, so the demo can be read top to bottom and reused piece by piece:

1. ``demo.servers.running_collector`` starts the real collector (gunicorn, as ``ldp-telemetry serve``) on a free
   loopback port over a temporary SQLite file;
2. ``demo.servers.create_keys`` and ``create_campaigns`` make an admin and an ingest key and POST the specs of
   ``demo.scenario.CAMPAIGNS``;
3. ``demo.devices.report_through_sdk`` has every simulated user record one value per campaign with
   ``client_sdk.Client`` (its own state directory, so RAPPOR gets a per-device secret and cohort) and flush over
   HTTP; or, for large populations, ``report_in_bulk`` draws the reports with the vectorised simulator and posts
   them in batches;
4. ``demo.reports.write_reports`` fetches every estimate over HTTP and writes HTML, Markdown (with PNGs) and JSON
   reports, each with the ground truth beside the estimates, plus ``summary.json`` and ``index.html``
   (``demo.summary``); :func:`run_demo` shares the drawing between this process and a worker process
   (``demo.reports.report_workers``);
5. ``demo.distributed.serve_distributed`` serves ``demo.scenario.DISTRIBUTED_CAMPAIGNS`` with a leader and a helper
   (two more collector children, each with its own database), has every user seal a report with the SDK's
   distributed module and, the leader restarted a day later as if the night had passed, collects that day's batch;
   its reports' summary shows the three error bars side by side.  :func:`run_demo` runs it in a thread from the
   start, beside steps 1 to 3 (:func:`run_distributed` runs it alone).
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import ExitStack, contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from .devices import Progress, draw_population, report_in_bulk, report_through_sdk
from .distributed import serve_distributed
from .errors import DemoStopped
from .reports import fetch_reports, finish_reports, render_report, render_reports, report_workers
from .scenario import CAMPAIGNS, DISTRIBUTED_CAMPAIGNS, DemoCampaign
from .servers import create_campaigns, create_keys, demo_workspace, running_collector
from .summary import CampaignSummary, DemoResult, with_notes, write_summary

DEFAULT_USERS = 2000
DEFAULT_OUT = Path("ldp-demo-output")
# Worker processes of the local collector: its one-report requests (5 per user) were the devices phase's bottleneck
# with one worker (one interpreter: ~10 ms of CPU per user on one core while the other had room).  Two, as the
# devices run in at most two processes; `ldp-telemetry serve` starts one per CPU.
LOCAL_COLLECTOR_WORKERS = 2


def run_distributed(folder: Path, campaigns: Sequence[DemoCampaign], population: dict[str, list], out_dir: Path,
                    earlier: Sequence[CampaignSummary], progress: Callable[[int, str], Any] | None = None,
                    ) -> list[CampaignSummary]:
    """Leader and helper on loopback, users' sealed reports, one collection, the reports and summary.json; every
    summary so far (the demo itself runs :func:`serve_distributed` beside its local devices)"""
    users = len(next(iter(population.values())))
    with _progress(progress, users * len(campaigns), "distributed reports") as update:
        fetched, notes = serve_distributed(folder, campaigns, population, update)
    summaries = [*earlier, *with_notes(render_reports(fetched, out_dir), notes)]
    write_summary(summaries, out_dir)
    return summaries



class Background:
    """A function run in a daemon thread of this process; its result or exception.  A failure sets ``stop``
    (so that the phase beside it ends too); ``done`` is set once it has returned or raised."""

    def __init__(self, target: Callable[[], Any], stop: threading.Event, name: str) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self.done = threading.Event()
        self._target, self._stop = target, stop
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self.result = self._target()
        except BaseException as exc:  # noqa: BLE001 (handed to the demo's thread, which raises it)
            self.error = exc
            self._stop.set()
        finally:
            self.done.set()

    def wait(self, until: threading.Event | None = None) -> None:
        "Until it has ended (or ``until`` is set); in short waits, so that Ctrl-C is not held up"
        while not self.done.is_set() and not (until is not None and until.is_set()):
            self.done.wait(0.1)

    def failure(self) -> BaseException | None:
        "Its exception, unless it only stopped because it was asked to"
        return None if isinstance(self.error, DemoStopped) else self.error



def run_demo(users: int = DEFAULT_USERS, out_dir: Path = DEFAULT_OUT, *, bulk: bool = False, seed: int | None = None,
             campaigns: Sequence[DemoCampaign] = CAMPAIGNS,
             distributed: Sequence[DemoCampaign] = DISTRIBUTED_CAMPAIGNS,
             progress: Callable[[int, str], Any] | None = None, workdir: Path | None = None,
             hold: Callable[[DemoResult, str], Any] | None = None) -> DemoResult:
    """Start a collector, let ``users`` simulated users report, write the reports into ``out_dir``; meanwhile the
    same for the ``distributed`` campaigns on a leader and a helper (not in ``bulk`` mode: their reports are
    sealed on the devices, one by one).

    The distributed phase (:func:`serve_distributed`) runs in a thread of this process from the start, beside
    the local collector's start and its devices (which run in worker processes): its leader and helper start
    while the local collector does, its reports are sealed and uploaded while the devices report, and its
    report is drawn as soon as it is collected.  A failure of either phase (or Ctrl-C) stops the other and
    every collector child, and the demo raises that phase's error.

    ``progress(total, label)`` is entered as a context manager that returns an ``update(count)`` callable
    (``click.progressbar`` fits); one bar counts the users' local reports (a user each) and their sealed ones
    (a report each); None runs silently.

    The collectors' databases and the devices' state live in a temporary folder (:func:`demo_workspace`: inside
    ``workdir``, else in RAM where there is room, else in the system's temporary folder), deleted at the end.

    ``hold(result, admin_key)``, when given, is called once the reports are written while the local collector
    still serves (``result.url``; its dashboard at ``/dashboard/``): the collector and its database last until it
    returns (``ldp-telemetry demo --serve`` waits there for Ctrl-C or SIGTERM), then both are gone."""
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    distributed = () if bulk else distributed
    population = draw_population([*campaigns, *distributed], users, rng)
    logging.getLogger("client_sdk").setLevel(logging.ERROR)
    phases: dict[str, float] = {}
    stop = threading.Event()
    with report_workers() as workers, demo_workspace(workdir) as temp, ExitStack() as kept:
        lock = threading.Lock()
        bar_updates: list[Progress] = []

        def update(count: int) -> None:  # both phases count on the one bar, from their own threads
            with lock:
                if count and bar_updates:
                    bar_updates[0](count)

        uploaded, data_in = threading.Event(), threading.Event()
        published: dict[str, Any] = {}
        beside: Background | None = None
        closing: Background | None = None
        removing: Background | None = None
        if distributed:  # first, so that the helper starts while the local collector does
            def drawn(fetched: list[Any], notes: dict[str, str]) -> None:  # the pool draws it at once
                phases["distributed collected"] = time.perf_counter() - started
                published.update(fetched=fetched, notes=notes, drawing=[
                    workers.submit(render_report, item, out_dir) if not isinstance(item, CampaignSummary) else None
                    for item in fetched])
                data_in.set()

            def distributed_phase() -> None:
                try:
                    serve_distributed(Path(temp), distributed, population, update, stop=stop, uploaded=uploaded.set,
                                      on_data=drawn)
                finally:
                    uploaded.set()

            beside = Background(distributed_phase, stop, "ldp-demo-distributed")
        try:
            database = Path(temp) / "collector.db"
            admin_key, ingest_key = create_keys(database)
            with ExitStack() as collector:  # stopped here on a failure, else in a thread once its data is in
                url = collector.enter_context(running_collector(database, workers=LOCAL_COLLECTOR_WORKERS))
                create_campaigns(url, admin_key, campaigns)
                phases["local collector ready"] = time.perf_counter() - started

                def local_update(count: int) -> None:
                    if stop.is_set():
                        raise DemoStopped("the local devices were stopped")
                    update(count)

                total = users * (len(campaigns) if bulk else 1 + len(distributed))
                label = ("reports (bulk)" if bulk else
                         "users reporting (local + distributed)" if distributed else "users reporting")
                with _progress(progress, total, label) as bar:
                    bar_updates.append(bar)
                    if bulk:
                        report_in_bulk(url, ingest_key, campaigns, population, rng, local_update)
                    else:
                        local = {campaign.name: population[campaign.name] for campaign in campaigns}
                        report_through_sdk(url, ingest_key, local, Path(temp) / "devices", local_update)
                        removing = Background(partial(shutil.rmtree, Path(temp) / "devices", ignore_errors=True),
                                              stop, "ldp-demo-remove-devices")  # 2,000 folders take seconds
                    phases["local devices reported"] = time.perf_counter() - started
                    drawing: list[Future | None] = []

                    def hand_over(item: Any) -> None:  # the worker starts on the first while the next is fetched
                        drawing.append(workers.submit(render_report, item, out_dir)
                                       if beside is not None and not isinstance(item, CampaignSummary) else None)

                    fetched = fetch_reports(url, admin_key, campaigns, population, hand_over)
                    phases["local fetched"] = time.perf_counter() - started
                    if hold is None:
                        closing = Background(collector.pop_all().close, stop, "ldp-demo-collector-stop")
                    else:  # it serves until hold returns; stopped before the workspace is removed
                        kept.enter_context(collector.pop_all())
                    if beside is not None:  # the bar ends once the sealed reports are in too
                        beside.wait(until=uploaded)
                    with lock:
                        bar_updates.clear()
            if beside is None:
                summaries = render_reports(fetched, out_dir, workers)
            else:
                beside.wait(until=data_in)
                if not data_in.is_set():
                    raise beside.error or RuntimeError("the distributed phase ended without its reports")
                summaries = finish_reports([*fetched, *published["fetched"]], [*drawing, *published["drawing"]],
                                           out_dir)
                summaries[len(fetched):] = with_notes(summaries[len(fetched):], published["notes"])
            for background in (closing, beside, removing):  # the collectors have stopped, the devices' state is gone
                if background is not None:
                    background.wait()
                    if background.error is not None:
                        raise background.error
            phases["reports written"] = time.perf_counter() - started
        except BaseException as exc:
            stop.set()  # the other phase ends at its next step and stops its collectors
            for background in (closing, beside, removing):
                if background is not None:
                    background.wait()
            failure = beside.failure() if beside is not None else None
            if isinstance(exc, DemoStopped) and failure is not None:
                raise failure from None  # the distributed phase failed first: its message
            raise
        write_summary(summaries, out_dir)
        seconds = time.perf_counter() - started
        phases["total"] = seconds
        result = DemoResult(users, "bulk" if bulk else "sdk", url, out_dir, seconds, summaries, phases)
        if hold is not None:
            hold(result, admin_key)
    return result



@contextmanager
def _progress(factory: Callable[[int, str], Any] | None, total: int, label: str) -> Iterator[Progress]:
    if factory is None:
        yield lambda count: None
        return
    with factory(total, label) as bar:
        yield bar.update
