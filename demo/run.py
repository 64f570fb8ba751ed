"""Run the whole system once: a collector on loopback, simulated users reporting through the SDK, reports.

Steps (each a function below, so the demo can be read top to bottom and reused piece by piece):

1. :func:`running_collector` starts the real collector (gunicorn, as ``ldp-telemetry serve``) on a free loopback
   port over a temporary SQLite file;
2. :func:`create_keys` and :func:`create_campaigns` make an admin and an ingest key and POST the specs of
   ``demo.scenario.CAMPAIGNS``;
3. :func:`report_through_sdk` has every simulated user record one value per campaign with ``client_sdk.Client``
   (its own state directory, so RAPPOR gets a per-device secret and cohort) and flush over HTTP; or, for large
   populations, :func:`report_in_bulk` draws the reports with the vectorised simulator and posts them in batches;
4. :func:`write_reports` fetches every estimate over HTTP and writes HTML, Markdown (with PNGs) and JSON reports,
   each with the ground truth beside the estimates, plus ``summary.json``; :func:`run_demo` shares the drawing
   between this process and a worker process (:func:`report_workers`);
5. :func:`serve_distributed` serves ``demo.scenario.DISTRIBUTED_CAMPAIGNS`` with a leader and a helper (two more
   collector children, each with its own database), has every user seal a report with the SDK's distributed module
   and, the leader restarted a day later as if the night had passed, collects that day's batch; its reports'
   summary shows the three error bars side by side.  :func:`run_demo`
   runs it in a thread from the start, beside steps 1 to 3 (:func:`run_distributed` runs it alone).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Executor, Future
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from client_sdk.clock import day_start, utc_day, utc_today
from client_sdk.errors import LDPError

from .scenario import CAMPAIGNS, DISTRIBUTED_CAMPAIGNS, DemoCampaign

DEFAULT_USERS = 2000
DEFAULT_OUT = Path("ldp-demo-output")
RATIO_EXPLANATION = ("LDP/central ratio: how many times larger the privacy noise's standard error is with local DP "
                     "than with a trusted curator (central DP), same epsilon and n; it grows as sqrt(n).")
BULK_BATCH = 5000  # the collector's default MAX_BATCH_REPORTS
DISTRIBUTED_BATCH = 250  # sealed reports per POST to the leader
# Worker processes of the local collector: its one-report requests (5 per user) were the devices phase's bottleneck
# with one worker (one interpreter: ~10 ms of CPU per user on one core while the other had room).  Two, as the
# devices run in at most two processes; `ldp-telemetry serve` starts one per CPU.
LOCAL_COLLECTOR_WORKERS = 2
SDK_WORKERS = 8  # users reporting at the same time (as many as the collector has threads: their POSTs share commits)
RAM_FOLDER = Path("/dev/shm")  # where the demo's throwaway workspace goes by default (RAM-backed on Linux)
RAM_FOLDER_MIN_FREE = 512 * 1024 * 1024  # bytes free needed there (the demo peaks at ~130 MB with 2,000 users)
Progress = Callable[[int], None]


@dataclass
class ValueSummary:
    "One value (or the mean) of one campaign: the estimate, its interval and the truth"

    value: str
    estimate: float
    ci_low: float | None
    ci_high: float | None
    truth: float


@dataclass
class CampaignSummary:
    "What the demo learned about one campaign"

    name: str
    mechanism: str
    epsilon: float | None
    n: int | None
    ldp_to_central_ratio: float | None
    values: list[ValueSummary] = field(default_factory=list)
    note: str = ""
    files: list[str] = field(default_factory=list)
    error_bars: dict[str, float] | None = None  # distributed: CI half-width under local, distributed, central DP
    error_bar_labels: dict[str, str] | None = None


@dataclass
class DemoResult:
    "The outcome of one run"

    users: int
    mode: str
    url: str
    out_dir: Path
    seconds: float
    campaigns: list[CampaignSummary]
    phases: dict[str, float] = field(default_factory=dict)  # seconds from the start to the end of each step


# -- 1. the collector ---------------------------------------------------------------------------------------------
@contextmanager
def running_collector(database: Path, config: dict | None = None, *, workers: int = 1,
                      env: dict[str, str] | None = None) -> Iterator[str]:
    """The collector as ``ldp-telemetry serve`` runs it (gunicorn, ``workers`` worker processes of threads,
    kept-alive connections) on 127.0.0.1 (a free port) in a child process; yields its base URL.

    The devices and the collector do not share an interpreter (or its lock).  The child is a fresh interpreter
    (``python -c``, the parent's ``sys.path``), so a caller's script is never re-imported; it serves until its
    standard input closes.  Its log goes to ``collector.log`` beside the database.  Rate limiting is off: every
    simulated user shares one ingest key.  ``env`` adds environment variables to the child's."""
    import os
    import subprocess
    import sys

    code = ("import json, sys; sys.path[:0] = json.loads(sys.argv[3]); from demo.run import serve_until_stdin_closes; "
            "serve_until_stdin_closes(sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[4]))")
    log_path = database.parent / "collector.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            [sys.executable, "-c", code, str(database), json.dumps(config or {}), json.dumps(sys.path), str(workers)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            env={**os.environ, **env} if env else None)
    assert process.stdin is not None and process.stdout is not None
    try:
        port = process.stdout.readline().strip()
        if not port.isdigit():
            tail = log_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the demo collector did not start:\n{tail}")
        yield f"http://127.0.0.1:{port}"
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        process.stdout.close()


def serve_until_stdin_closes(database: str, config: dict, workers: int = 1) -> None:
    """The child of :func:`running_collector`: ``collector.server.serve`` (gunicorn) on a free port; prints the
    port once the collector answers, stops when standard input closes.

    It stops at once (gunicorn's quick shutdown, SIGQUIT): by then the demo has its answers and every report the
    collector acknowledged is committed, and the database is thrown away.  A graceful stop (SIGTERM) waited for
    the worker's idle kept-alive connections: 1 to 2.5 s at the end of every run, on its critical path."""
    import os
    import signal
    import socket
    import sys

    from collector.server import serve

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]

    def announce_then_wait() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        print(port, flush=True)
        sys.stdin.read()  # returns when the parent closes the pipe (or exits)
        os.kill(os.getpid(), signal.SIGQUIT)

    threading.Thread(target=announce_then_wait, name="ldp-demo-stdin", daemon=True).start()
    serve(database, port=port, workers=workers, config={"RATE_LIMIT": 0, **config})


def default_workdir(ram_folder: Path = RAM_FOLDER, min_free: int = RAM_FOLDER_MIN_FREE) -> Path | None:
    """Where the demo's throwaway workspace goes unless ``--workdir`` says: ``ram_folder`` (``/dev/shm``) when it is
    a writable folder with at least ``min_free`` bytes free, else None (the system's temporary folder).

    The workspace holds the collectors' databases and the simulated devices' state folders, every one deleted at
    the end of the run; in RAM their per-commit fsyncs cost nothing (on disk they cost a few seconds of CPU)."""
    import os

    try:
        if not ram_folder.is_dir() or not os.access(ram_folder, os.W_OK | os.X_OK):
            return None
        if shutil.disk_usage(ram_folder).free < min_free:
            return None
    except OSError:
        return None
    return ram_folder


def demo_workspace(workdir: Path | None = None) -> tempfile.TemporaryDirectory:
    """The demo's own temporary folder (``ldp-demo-*``), removed with everything in it at the end of the run: inside
    ``workdir`` when given (created if missing, and left in place), else inside :func:`default_workdir`'s choice"""
    if workdir is not None:
        workdir.mkdir(parents=True, exist_ok=True)
    parent = workdir if workdir is not None else default_workdir()
    return tempfile.TemporaryDirectory(prefix="ldp-demo-", dir=parent)


# -- 2. keys and campaigns ----------------------------------------------------------------------------------------
def create_keys(database: Path) -> tuple[str, str]:
    "An admin and an ingest key, as ``ldp-telemetry keys create`` makes them"
    from collector.storage import Storage

    today = utc_today()
    with Storage(database) as storage:
        storage.migrate()
        admin, _ = storage.create_key("admin", today, "demo analyst")
        ingest, _ = storage.create_key("ingest", today, "demo devices")
    return admin, ingest


def create_campaigns(url: str, admin_key: str, campaigns: Sequence[DemoCampaign] = CAMPAIGNS) -> dict[str, dict]:
    "POST every spec to /v1/campaigns; the stored campaigns by name (AdminApiError if the collector refuses one)"
    from collector.admin_client import AdminClient

    with AdminClient(url, admin_key) as client:
        return {campaign.name: client.post("/v1/campaigns", campaign.spec) for campaign in campaigns}


# -- 3. users report ------------------------------------------------------------------------------------------------
def draw_population(campaigns: Sequence[DemoCampaign], users: int, rng: np.random.Generator) -> dict[str, list]:
    "Every user's true value for every campaign"
    return {campaign.name: campaign.draw(rng, users) for campaign in campaigns}


def report_through_sdk(url: str, ingest_key: str, population: dict[str, list], state_root: Path,
                       progress: Progress | None = None, workers: int = SDK_WORKERS,
                       processes: int | None = None) -> None:
    """Each user is a device: its own Client and state directory; it records one value per campaign and flushes.

    A few users report at the same time (``workers`` threads in all), as devices do.  The devices run in
    ``processes`` worker processes (default: one per CPU, at most 2; each a fresh interpreter, ``python -c``)
    so that their CPU work is not held to one core by one interpreter lock; user ``i`` goes to process
    ``i % processes``.  Each worker reports every finished user to this process, which advances ``progress``;
    the first user that fails stops the others and raises its message.  ``processes=1`` runs the threads here."""
    import os

    users = len(next(iter(population.values())))
    processes = max(1, min(processes or min(2, os.cpu_count() or 1), users or 1))
    if processes == 1:
        _report_users(url, ingest_key, population, list(range(users)), state_root, workers, progress)
        return
    _report_in_processes(url, ingest_key, population, users, state_root, progress, workers, processes)


def _report_users(url: str, ingest_key: str, population: dict[str, list], users: list[int], state_root: Path,
                  workers: int, progress: Progress | None) -> None:
    "``users`` report from ``workers`` threads of this process; the first failure cancels the rest and raises"
    from concurrent.futures import ThreadPoolExecutor, as_completed

    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ldp-demo-user") as pool:
        futures = [pool.submit(_one_user, url, ingest_key, population, user, state_root / f"device-{user}")
                   for user in users]
        try:
            for future in as_completed(futures):
                future.result()
                if progress is not None:
                    progress(1)
        except BaseException:
            for future in futures:
                future.cancel()
            raise


def _report_in_processes(url: str, ingest_key: str, population: dict[str, list], users: int, state_root: Path,
                         progress: Progress | None, workers: int, processes: int) -> None:
    """The worker processes of :func:`report_through_sdk`: each gets its share of users (and the whole
    population, pickled on its standard input) and writes a line per finished user, or the failure's message"""
    import pickle
    import queue
    import subprocess
    import sys

    state_root.mkdir(parents=True, exist_ok=True)
    level = logging.getLogger("client_sdk").level
    code = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); from demo.run import _sdk_worker; "
            "_sdk_worker()")
    events: queue.Queue[tuple[int, str]] = queue.Queue()
    children: list[subprocess.Popen] = []

    def relay(index: int, stream: Any) -> None:
        with stream:
            for line in stream:
                events.put((index, line.rstrip("\n")))
        events.put((index, ""))  # the worker has exited (or closed its output)

    try:
        for index in range(processes):
            with open(state_root / f"worker-{index}.log", "ab") as log:
                child = subprocess.Popen([sys.executable, "-c", code, json.dumps(sys.path)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=log)
            children.append(child)
            assert child.stdin is not None and child.stdout is not None
            share = list(range(index, users, processes))
            threads = max(1, workers // processes + (index < workers % processes))
            try:
                pickle.dump((url, ingest_key, population, share, state_root, threads, level), child.stdin)
                child.stdin.close()
            except BrokenPipeError:  # it died at once: its exit status and log say why (below)
                pass
            reader = threading.Thread(target=relay, args=(index, _text(child.stdout)), daemon=True,
                                      name=f"ldp-demo-worker-{index}")
            reader.start()
        running = processes
        while running:
            index, line = events.get()
            if line == "1":
                if progress is not None:
                    progress(1)
            elif line.startswith("error "):
                raise RuntimeError(json.loads(line[len("error "):]))
            elif line == "":
                if children[index].wait() != 0:
                    tail = (state_root / f"worker-{index}.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"a demo device process failed (exit {children[index].returncode}):\n{tail}")
                running -= 1
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
            child.wait()
            if child.stdout is not None:
                child.stdout.close()


def _text(stream: Any) -> Any:
    import io

    return io.TextIOWrapper(stream, encoding="utf-8")


def _sdk_worker() -> None:
    """A worker process of :func:`report_through_sdk`: reads its share from standard input, runs it on threads,
    writes ``1`` per finished user, or ``error <JSON message>`` for the first failure and exits 1"""
    import pickle
    import sys

    url, ingest_key, population, users, state_root, workers, level = pickle.load(sys.stdin.buffer)
    logging.getLogger("client_sdk").setLevel(level)
    lock = threading.Lock()

    def finished(count: int) -> None:
        with lock:
            sys.stdout.write("1\n" * count)
            sys.stdout.flush()

    try:
        _report_users(url, ingest_key, population, users, state_root, workers, finished)
    except Exception as exc:  # noqa: BLE001 (the message goes to the parent, which raises it)
        message = str(exc) if isinstance(exc, RuntimeError) else f"{type(exc).__name__}: {exc}"
        with lock:
            sys.stdout.write("error " + json.dumps(message) + "\n")
            sys.stdout.flush()
        sys.exit(1)


def _one_user(url: str, ingest_key: str, population: dict[str, list], user: int, state_dir: Path) -> None:
    from client_sdk import Client

    client = Client(url, ingest_key, state_dir, background=False, campaigns=list(population))
    try:
        for name, values in population.items():
            client.record(name, values[user])
        result = client.flush(timeout=30)
    finally:
        client.close(timeout=0)
    if result.remaining or result.rejected or result.dropped:
        raise RuntimeError(f"user {user}: the collector did not take every report ({result})")


def report_in_bulk(url: str, ingest_key: str, campaigns: Sequence[DemoCampaign], population: dict[str, list],
                   rng: np.random.Generator, progress: Progress | None = None) -> None:
    "Draw every report with the vectorised simulator (the SDK's distribution) and POST them in batches"
    import uuid

    import requests

    from client_sdk import load_spec
    from estimators.simulate import simulate

    with requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {ingest_key}"
        for campaign in campaigns:
            spec = load_spec(campaign.spec)
            values: Any = population[campaign.name]
            if spec.is_categorical:  # the simulator takes domain indices
                index = {value: i for i, value in enumerate(spec.domain or ())}
                values = np.array([index[v] for v in values])
            payloads = simulate(spec, values, rng).to_payloads()
            for start in range(0, len(payloads), BULK_BATCH):
                batch = [{"report_id": str(uuid.uuid4()), "campaign": spec.name, "fingerprint": spec.fingerprint,
                          "payload": payload} for payload in payloads[start:start + BULK_BATCH]]
                post_batch(session, url, spec.name, batch, progress)


def post_batch(session: Any, url: str, campaign: str, batch: list[dict], progress: Progress | None) -> None:
    "POST one batch of reports; every one must be accepted"
    response = session.post(f"{url}/v1/reports", json={"reports": batch}, timeout=120)
    response.raise_for_status()
    if response.json().get("accepted") != len(batch):
        raise RuntimeError(f"campaign {campaign}: the collector did not take every report")
    if progress is not None:
        progress(len(batch))


# -- 4. reports -----------------------------------------------------------------------------------------------------
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
    from dataclasses import replace

    from collector.reporting import report_data_from_url
    from estimators.report.source import SourceError

    fetched: list[Any] = []
    for campaign in campaigns:
        truth = campaign.truth(population[campaign.name])
        try:
            fetched.append(replace(report_data_from_url(url, admin_key, campaign.name), truth=truth))
        except SourceError as exc:
            fetched.append(CampaignSummary(campaign.name, str(campaign.spec.get("mechanism", "prio3")), None, None,
                                           None, note=str(exc)))
        if each is not None:
            each(fetched[-1])
    return fetched


def render_report(data: Any, out_dir: Path) -> CampaignSummary:
    """One campaign's HTML, Markdown (+ PNGs) and JSON files, each figure drawn once for both; its summary.

    It needs no collector, so a worker process can run it (``data`` is a ``ReportData`` with its truth)."""
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
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    context = multiprocessing.get_context(worker_start_method())
    with ProcessPoolExecutor(max_workers=1, mp_context=context, initializer=start_report_worker) as pool:
        pool.submit(int)  # the worker starts now
        threading.Thread(target=import_renderers, name="ldp-demo-import-renderers", daemon=True).start()
        yield pool


def worker_start_method() -> str:
    """``fork`` where it is safe and quiet: Python before 3.12 (which warns of any fork from a process with
    threads, numpy's own included) and no other thread of ours running; else ``spawn``"""
    import multiprocessing
    import sys
    import threading

    if sys.version_info < (3, 12) and threading.active_count() == 1 and "fork" in \
            multiprocessing.get_all_start_methods():
        return "fork"
    return "spawn"


def import_renderers() -> None:
    "Load the HTML and Markdown renderers and matplotlib"
    import estimators.report.html
    import estimators.report.markdown  # noqa: F401


def start_report_worker() -> None:
    "A report worker's initializer: the renderers loaded; Ctrl-C is left to the demo's process, which ends the pool"
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    import_renderers()


def write_summary(summaries: Sequence[CampaignSummary], out_dir: Path) -> None:
    "summary.json: every campaign's summary, in order; index.html: a link to each report and its one-line summary"
    from estimators.report import IndexEntry, render_index

    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "summary.json").write_text(json.dumps([asdict(s) for s in summaries], indent=2) + "\n",
                                          encoding="utf-8")
    entries = [IndexEntry(s.name, s.files, summary_line(s)) for s in summaries]
    notes = [RATIO_EXPLANATION] if any(s.ldp_to_central_ratio for s in summaries) else []
    notes.append("The estimates come from simulated users; each report compares them with the truth it was drawn "
                 "from. summary.json holds these summaries as data.")
    (out_dir / "index.html").write_text(render_index("ldp-telemetry demo: the reports", entries, notes),
                                        encoding="utf-8")


def headline(summary: CampaignSummary) -> str:
    "Mechanism, epsilon, n and the LDP/central ratio of a campaign, as the terminal and the index page state them"
    from estimators.report.model import ratio_text

    epsilon = f"{summary.epsilon:.3g}" if summary.epsilon is not None else "?"
    ratio = (f", LDP/central ratio {ratio_text(summary.ldp_to_central_ratio)}"
             if summary.ldp_to_central_ratio else "")
    n = f"{summary.n:,}" if summary.n is not None else "?"
    return f"{summary.mechanism}, epsilon {epsilon}, n {n}{ratio}"


def summary_line(summary: CampaignSummary) -> str:
    "One line on a campaign: its headline and its most frequent value's (or the mean's) estimate against the truth"
    parts = [headline(summary)]
    if summary.values:
        top = summary.values[0]
        interval = (f", 95% CI [{_number(top.ci_low)}, {_number(top.ci_high)}]"
                    if top.ci_low is not None and top.ci_high is not None else " (not detected)")
        parts.append(f"{top.value}: estimate {_number(top.estimate)}{interval}, truth {_number(top.truth)}")
    if summary.error_bars:
        parts.append("95% CI half-width " + ", ".join(f"{model} ±{summary.error_bars[model]:.4f}"
                                                      for model in ("local", "distributed", "central")))
    if summary.note:
        parts.append(f"note: {summary.note}")
    return "; ".join(parts)


def summarize(data: Any, truth: dict[str, float] | float, files: list[str]) -> CampaignSummary:
    "The estimate against the truth, value by value (or for the mean)"
    from estimators.report.model import epsilon_text, is_distributed, ldp_to_central_ratio, value_rows

    result = data.result
    epsilon = epsilon_text(result)
    summary = CampaignSummary(data.campaign, str(result.get("mechanism", "")),
                              float(epsilon) if epsilon != "?" else None, data.n, ldp_to_central_ratio(result),
                              files=files)
    if is_distributed(result):
        summary.mechanism = f"distributed: Prio3 {result.get('prio3')}, {result['noise']['mode']} noise"
        summary.ldp_to_central_ratio = None
        summary.error_bars, summary.error_bar_labels = error_bars(result)
    if isinstance(truth, float):
        summary.values.append(ValueSummary("mean", result["mean"], result["ci_low"], result["ci_high"], truth))
        return summary
    rows = {row.value: row for row in value_rows(result)}
    for value, share in sorted(truth.items(), key=lambda item: -item[1]):
        row = rows.get(value)
        if row is not None:
            summary.values.append(ValueSummary(value, row.estimate, row.ci_low, row.ci_high, share))
        else:  # e.g. a RAPPOR candidate the decoder did not detect: its estimate is 0
            summary.values.append(ValueSummary(value, 0.0, None, None, share))
    if result.get("status") not in (None, "ok"):
        summary.note = str(result.get("message", ""))
    return summary


# -- 5. a distributed campaign: leader and helper ----------------------------------------------------------------
PEER_TOKEN = "demo-peer-token"  # aggregator-to-aggregator key of the demo's two children


@dataclass
class DemoAggregators:
    "The running leader and helper of :func:`running_aggregators`"

    url: str  # the leader's
    admin: str
    ingest: str
    helper_url: str
    end_day: Callable[[], str]  # restart the leader one day later; the day that ended (its batch can be collected)


@contextmanager
def running_aggregators(folder: Path) -> Iterator[DemoAggregators]:
    """A helper and a leader, each a collector child of :func:`running_collector` with its own database.  The
    leader runs no aggregation driver: collection runs the pending aggregation jobs itself.

    A batch (a UTC day) is collected once its day has ended and a grace period after it (``COLLECT_GRACE``);
    rather than wait, ``end_day()`` stops the leader and starts it again on the same database with its clock moved
    past that (``LDP_CLOCK_OFFSET``), as if the night had passed: the users' reports are then in yesterday's
    batch, which it releases."""
    with running_collector(folder / "helper.db", {"ROLE": "helper", "PEER_TOKEN": PEER_TOKEN}) as helper_url, \
            ExitStack() as leaders:
        leader_db = folder / "leader.db"
        admin_key, ingest_key = create_keys(leader_db)
        config = {"ROLE": "leader", "HELPER_URL": helper_url, "PEER_TOKEN": PEER_TOKEN, "AGGREGATE_INTERVAL": 0}
        offset = [0.0]  # the leader's LDP_CLOCK_OFFSET, seconds

        def start_leader() -> str:
            leaders.close()
            return leaders.enter_context(running_collector(
                leader_db, config, env={"LDP_CLOCK_OFFSET": repr(offset[0])}))

        def end_day() -> str:
            from collector.app import DEFAULTS

            now = time.time()
            ended = utc_day(now + offset[0])
            # a minute past the ended day's collection grace (COLLECT_GRACE): its batch can be collected
            offset[0] = day_start(ended) + 86400 + DEFAULTS["COLLECT_GRACE"] + 60 - now
            running.url = start_leader()
            return ended

        running = DemoAggregators(start_leader(), admin_key, ingest_key, helper_url, end_day)
        yield running


def report_distributed(url: str, ingest_key: str, created: dict[str, dict], population: dict[str, list],
                       progress: Progress | None = None, *, helper_url: str) -> None:
    """Every user seals one report per distributed campaign on the device (``client_sdk.distributed``: Prio3
    shares with the proof, each sealed with HPKE to its aggregator; the listing's helper key is used only once the
    helper itself, at ``helper_url`` known to the app out of band, has published it, as ``Client`` does) and
    the reports go to the leader in batches, each posted from a second thread while the next one is sealed (the
    leader opens its shares meanwhile).  ``progress`` is called before each batch is sealed (with 0) and after
    each is posted: an exception it raises stops the sealing and the uploads."""
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    import requests

    from client_sdk import load_spec
    from client_sdk.distributed import aggregator_configs, configured_aggregators, parse_hpke_configs, seal_report

    update = progress or (lambda count: None)
    trusted = configured_aggregators({"helper": helper_url}, url)
    posted: list[Future] = []
    with requests.Session() as session, requests.Session() as uploads, \
            ThreadPoolExecutor(max_workers=1, thread_name_prefix="ldp-demo-upload") as poster:
        session.headers["Authorization"] = uploads.headers["Authorization"] = f"Bearer {ingest_key}"
        try:
            for name, campaign in created.items():
                spec = load_spec(campaign["spec"])
                listed = session.get(f"{url}/v1/campaigns/{name}", timeout=30).json()["aggregators"]
                published = parse_hpke_configs(requests.get(f"{helper_url}/v1/hpke_config", timeout=30).json())
                leader, helper = aggregator_configs(listed, trusted, published)  # AggregatorMismatch: not sealed
                values = population[name]
                for start in range(0, len(values), DISTRIBUTED_BATCH):
                    update(0)  # a stop asked for meanwhile ends the sealing here
                    batch: list[dict[str, Any]] = []
                    for value in values[start:start + DISTRIBUTED_BATCH]:
                        report_id = str(uuid.uuid4())
                        batch.append({"report_id": report_id, "campaign": name, "fingerprint": spec.fingerprint,
                                      "payload": seal_report(spec, value, leader, helper, report_id=report_id,
                                                             batch=utc_today())})
                    for done in [f for f in posted if f.done()]:
                        done.result()  # a failed upload stops the sealing at once
                    posted.append(poster.submit(post_batch, uploads, url, name, batch, update))
            for future in posted:
                future.result()
        except BaseException:
            for future in posted:
                future.cancel()
            raise


def collect_today(url: str, admin_key: str, names: Sequence[str], day: str | None = None) -> dict[str, str]:
    """Collect the batch of ``day`` (default today: the leader must have seen that day end) of each campaign (the
    aggregators add their noise); a note for each that could not be"""
    from collector.admin_client import AdminClient, campaign_path
    from collector.errors import AdminApiError

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


class DemoStopped(LDPError, RuntimeError):
    "A phase of the demo stops where it is: the other phase failed, or the user pressed Ctrl-C"


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


def with_notes(summaries: Sequence[CampaignSummary], notes: dict[str, str]) -> list[CampaignSummary]:
    "Each summary with the note of its campaign's collection, where it has none of its own"
    for summary in summaries:
        if summary.name in notes and not summary.note:
            summary.note = notes[summary.name]
    return list(summaries)


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


def error_bars(result: dict) -> tuple[dict[str, float], dict[str, str]]:
    "The CI half-width of one value's fraction (or the mean) under local, distributed and central DP"
    from statistics import NormalDist

    z = NormalDist().inv_cdf(0.5 + float(result.get("confidence", 0.95)) / 2)
    models = result["trust_models"]
    bars = {name: z * float(models[name]["std_error"]) for name in ("local", "distributed", "central")}
    labels = {"local": f"best local oracle, {models['local'].get('mechanism')}",
              "distributed": f"this campaign, {result['noise']['mode']} noise",
              "central": str(models["central"].get("mechanism", ""))}
    return bars, labels


# -- the whole run -------------------------------------------------------------------------------------------------
def run_demo(users: int = DEFAULT_USERS, out_dir: Path = DEFAULT_OUT, *, bulk: bool = False, seed: int | None = None,
             campaigns: Sequence[DemoCampaign] = CAMPAIGNS,
             distributed: Sequence[DemoCampaign] = DISTRIBUTED_CAMPAIGNS,
             progress: Callable[[int, str], Any] | None = None, workdir: Path | None = None) -> DemoResult:
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
    ``workdir``, else in RAM where there is room, else in the system's temporary folder), deleted at the end."""
    started = time.perf_counter()
    rng = np.random.default_rng(seed)
    distributed = () if bulk else distributed
    population = draw_population([*campaigns, *distributed], users, rng)
    logging.getLogger("client_sdk").setLevel(logging.ERROR)
    phases: dict[str, float] = {}
    stop = threading.Event()
    with report_workers() as workers, demo_workspace(workdir) as temp:
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
                    closing = Background(collector.pop_all().close, stop, "ldp-demo-collector-stop")
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
    return DemoResult(users, "bulk" if bulk else "sdk", url, out_dir, seconds, summaries, phases)


@contextmanager
def _progress(factory: Callable[[int, str], Any] | None, total: int, label: str) -> Iterator[Progress]:
    if factory is None:
        yield lambda count: None
        return
    with factory(total, label) as bar:
        yield bar.update


def format_summary(result: DemoResult, top: int = 4) -> str:
    "The per-campaign summary the command prints: estimate against truth, interval, LDP/central ratio"
    path = "the simulator and the batch API" if result.mode == "bulk" else "the SDK over HTTP"
    lines = [f"{result.users:,} simulated users reported through {path} in {result.seconds:.1f} s."]
    if any(campaign.ldp_to_central_ratio for campaign in result.campaigns):
        lines.append(RATIO_EXPLANATION)
    lines.append("")
    for campaign in result.campaigns:
        lines.append(f"{campaign.name} ({headline(campaign)})")
        if campaign.note:
            lines.append(f"  note: {campaign.note}")
        if campaign.error_bars and campaign.error_bar_labels:
            lines.append("  error bar of one value's fraction (95% CI half-width), same question, n, epsilon, delta:")
            for model in ("local", "distributed", "central"):
                lines.append(f"    {model:<12} ±{campaign.error_bars[model]:.4f}  "
                             f"({campaign.error_bar_labels[model]})")
        for value in campaign.values[:top]:
            interval = (f"[{_number(value.ci_low)}, {_number(value.ci_high)}]"
                        if value.ci_low is not None and value.ci_high is not None else "(not detected)")
            lines.append(f"  {value.value:<12} estimate {_number(value.estimate):>8}  95% CI {interval:<22}"
                         f"  truth {_number(value.truth)}")
        lines.append("")
    lines.append(f"Reports (HTML, Markdown, JSON) in {result.out_dir.resolve()}; open index.html there first")
    return "\n".join(lines)


def _number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.3f}"
