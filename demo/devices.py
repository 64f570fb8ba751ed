"""The demo's simulated users: their true values, and their reports through the SDK (:func:`report_through_sdk`,
in worker processes), drawn in bulk by the simulator (:func:`report_in_bulk`) or sealed for a leader and a helper
(:func:`report_distributed`)."""

from __future__ import annotations

import io
import json
import logging
import os
import pickle
import queue
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from client_sdk import Client, load_spec
from client_sdk.clock import utc_today
from collector.config import DEFAULTS

from .scenario import DemoCampaign

BULK_BATCH: int = DEFAULTS["MAX_BATCH_REPORTS"]  # the collector's default
DISTRIBUTED_BATCH = 250  # sealed reports per POST to the leader
SDK_WORKERS = 8  # users reporting at the same time (as many as the collector has threads: their POSTs share commits)
Progress = Callable[[int], None]


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
    users = len(next(iter(population.values())))
    processes = max(1, min(processes or min(2, os.cpu_count() or 1), users or 1))
    if processes == 1:
        _report_users(url, ingest_key, population, list(range(users)), state_root, workers, progress)
        return
    _report_in_processes(url, ingest_key, population, users, state_root, progress, workers, processes)



def _report_users(url: str, ingest_key: str, population: dict[str, list], users: list[int], state_root: Path,
                  workers: int, progress: Progress | None) -> None:
    "``users`` report from ``workers`` threads of this process; the first failure cancels the rest and raises"
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
    state_root.mkdir(parents=True, exist_ok=True)
    level = logging.getLogger("client_sdk").level
    code = ("import json, sys; sys.path[:0] = json.loads(sys.argv[1]); from demo.devices import _sdk_worker; "
            "_sdk_worker()")
    events: queue.Queue[tuple[int, str]] = queue.Queue()
    children: list[subprocess.Popen] = []
    readers: list[threading.Thread] = []

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
            readers.append(reader)
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
        # a dead worker's pipe ends at once: its reader closes the stream itself (closed under it, its next read
        # raised in the thread); a stream no reader took is closed here
        for reader in readers:
            reader.join(timeout=10)
        for child in children[len(readers):]:
            if child.stdout is not None:
                child.stdout.close()



def _text(stream: Any) -> Any:
    return io.TextIOWrapper(stream, encoding="utf-8")



def _sdk_worker() -> None:
    """A worker process of :func:`report_through_sdk`: reads its share from standard input, runs it on threads,
    writes ``1`` per finished user, or ``error <JSON message>`` for the first failure and exits 1"""
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
    # imported here: the device workers import this module and need neither (requests +160 ms, the simulator +150 ms)
    import requests

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



def report_distributed(url: str, ingest_key: str, created: dict[str, dict], population: dict[str, list],
                       progress: Progress | None = None, *, helper_url: str) -> None:
    """Every user seals one report per distributed campaign on the device (``client_sdk.distributed``: Prio3
    shares with the proof, each sealed with HPKE to its aggregator; the listing's helper key is used only once the
    helper itself, at ``helper_url`` known to the app out of band, has published it, as ``Client`` does) and
    the reports go to the leader in batches, each posted from a second thread while the next one is sealed (the
    leader opens its shares meanwhile).  ``progress`` is called before each batch is sealed (with 0) and after
    each is posted: an exception it raises stops the sealing and the uploads."""
    # imported here: not needed by the device workers (requests +160 ms, the sealing +80 ms)
    import requests

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
