"""The demo's reports: each campaign's estimates fetched over HTTP with its truth, drawn as HTML, Markdown (+ PNGs)
and JSON, by this process and a worker process beside it (:func:`report_workers`)."""

from __future__ import annotations

import json
import multiprocessing
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from collector import reporting
from estimators.errors import SourceError

from .scenario import DemoCampaign
from .summary import CampaignSummary, summarize, write_summary


def write_reports(url: str, admin_key: str, campaigns: Sequence[DemoCampaign], population: dict[str, list],
                  out_dir: Path, *, earlier: Sequence[CampaignSummary] = (),
                  workers: Executor | None = None) -> list[CampaignSummary]:
    """HTML, Markdown (+ PNGs) and JSON per campaign, with the truth beside the estimates; and summary.json.

    With ``workers`` (a pool of processes, see :func:`report_workers`) the pool draws some campaigns while this
    process draws the others."""
    fetched = fetch_reports(url, admin_key, campaigns, population)
    summaries = [*earlier, *render_reports(fetched, out_dir, workers)]
    write_summary(summaries, out_dir)
    return summaries



def fetch_reports(url: str, admin_key: str, campaigns: Sequence[DemoCampaign],
                  population: dict[str, list], each: Callable[[Any], None] | None = None) -> list[Any]:
    """Each campaign's report data over HTTP with its truth (a ``ReportData``), in order, while the collector
    runs; for a campaign without one, its summary with the reason as a note.  ``each(item)`` is called with each
    as soon as it is in (so that its drawing can start while the next is fetched)."""
    fetched: list[Any] = []
    for campaign in campaigns:
        truth = campaign.truth(population[campaign.name])
        try:
            fetched.append(replace(reporting.report_data_from_url(url, admin_key, campaign.name), truth=truth))
        except SourceError as exc:
            fetched.append(CampaignSummary(campaign.name, str(campaign.spec.get("mechanism", "prio3")), None, None,
                                           None, note=str(exc)))
        if each is not None:
            each(fetched[-1])
    return fetched



def render_report(data: Any, out_dir: Path) -> CampaignSummary:
    """One campaign's HTML, Markdown (+ PNGs) and JSON files, each figure drawn once for both; its summary.

    It needs no collector, so a worker process can run it (``data`` is a ``ReportData`` with its truth)."""
    # imported here: the renderers load matplotlib (+750 ms), imported in a thread beside the devices (import_renderers)
    from estimators.report import json_report, render_html, render_markdown, report_plots

    name = data.campaign
    plots = report_plots(data)
    files = {f"{name}.html": render_html(data, plots=plots)}
    markdown = render_markdown(data, image_prefix=name, plots=plots)
    files[f"{name}.md"] = markdown.text
    files[f"{name}.json"] = json.dumps({**json_report(data), "truth": data.truth}, indent=2) + "\n"
    out_dir.mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (out_dir / file_name).write_text(text, encoding="utf-8")
    for file_name, png in markdown.images.items():
        (out_dir / file_name).write_bytes(png)
    return summarize(data, data.truth, sorted([*files, *markdown.images]))



def render_reports(fetched: Sequence[Any], out_dir: Path, workers: Executor | None = None) -> list[CampaignSummary]:
    """Every campaign's files (:func:`render_report`) and summaries, in order.

    With ``workers`` the pool takes campaigns from the front, one at a time, while this process takes them from
    the back: the two share the work whatever each campaign costs."""
    summaries: dict[int, CampaignSummary] = {}
    todo = [index for index, item in enumerate(fetched) if not isinstance(item, CampaignSummary)]
    summaries.update({index: item for index, item in enumerate(fetched) if isinstance(item, CampaignSummary)})
    running: tuple[int, Future] | None = None
    while todo or running is not None:
        if running is not None and (running[1].done() or not todo):
            summaries[running[0]] = running[1].result()
            running = None
        if workers is not None and running is None and len(todo) > 1:
            running = (todo[0], workers.submit(render_report, fetched[todo[0]], out_dir))
            del todo[0]
        elif todo:
            index = todo.pop()
            summaries[index] = render_report(fetched[index], out_dir)
    return [summaries[index] for index in range(len(fetched))]



def finish_reports(fetched: Sequence[Any], drawing: Sequence[Future | None], out_dir: Path) -> list[CampaignSummary]:
    """The summaries of reports handed to a pool (``drawing``: the futures, None where ``fetched`` holds a summary
    already): this process draws those the pool has not started yet, from the back, and waits for the others"""
    summaries = list(fetched)
    for index in reversed(range(len(fetched))):
        future = drawing[index]
        if future is not None and future.cancel():
            summaries[index] = render_report(fetched[index], out_dir)
    for index, future in enumerate(drawing):
        if future is not None and not future.cancelled():
            summaries[index] = future.result()
    return summaries



@contextmanager
def report_workers() -> Iterator[Executor]:
    """A pool of one worker process that draws reports beside this one, started now; it imports the renderers
    itself (:func:`start_report_worker`), and this process imports them in a thread meanwhile (it draws the
    reports the worker has not started at the end: :func:`finish_reports`), so neither waits for matplotlib.

    The worker is a fork of this process (:func:`worker_start_method`) where that is safe: run early (before the
    devices' threads) it is a copy of a quiet process.  Else it is spawned (about a second more of its own CPU,
    while the devices report)."""
    context = multiprocessing.get_context(worker_start_method())
    with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=start_report_worker) as pool:
        pool.submit(int)  # the worker starts now
        threading.Thread(target=import_renderers, name="ldp-demo-import-renderers", daemon=True).start()
        yield pool



def worker_start_method() -> str:
    """``fork`` where it is safe and quiet: Python before 3.12 (which warns of any fork from a process with
    threads, numpy's own included) and no other thread of ours running; else ``spawn``"""
    if sys.version_info < (3, 12) and threading.active_count() == 1 and "fork" in \
            multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"



def import_renderers() -> None:
    "Load the HTML and Markdown renderers and matplotlib"
    # the point of this function: matplotlib (+750 ms) loaded where it costs no wait
    import estimators.report.html
    import estimators.report.markdown  # noqa: F401



def start_report_worker() -> None:
    "A report worker's initializer: the renderers loaded; Ctrl-C is left to the demo's process, which ends the pool"
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import_renderers()
