"""The SDK's costs on a device: import time, one device's lifecycle, and record() against the queue's depth.

    python benchmarks/sdk_device.py [--runs 15]
    python benchmarks/sdk_device.py --cpu 300 [--rounds 3] [--local] [--root /tmp/before --root .]

Prints three tables.  Import time is the minimum and median of ``python -X importtime -c 'import client_sdk'``
(cumulative microseconds of the ``client_sdk`` line) over fresh interpreters.  The lifecycle is the demo's: a
fresh state directory, ``Client``, 4 records (one per campaign), flush, close, against the real collector app
in-process (WSGI, no sockets), counting HTTP requests and SQLite statements.  ``record()`` cost is measured with
a queue pre-filled to 100 and to 10,000 reports.

``--cpu N`` measures instead the device's CPU (user + system time of the measuring process) per lifecycle over
real HTTP: the demo's four campaigns (``demo.scenario``) on the real collector (gunicorn in a child process,
``demo.servers.running_collector``), N lifecycles one after another after 20 to warm up, each exactly the demo's
(``Client`` with its own fresh state directory and ``background=False``, one record per campaign, ``flush``,
``close``).  Each checkout (``--root``, repeatable; default this one) runs in a fresh interpreter with
``PYTHONPATH`` at it, checkouts interleaved for ``--rounds`` rounds so that each sees about the same load.
``--local`` runs the same lifecycles against an in-memory collector (``MockTransport``): no HTTP, no server.
"""

from __future__ import annotations

import argparse
import inspect
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from checkouts import run_json

CAMPAIGNS = [
    {"name": "browser", "mechanism": "oue", "epsilon": 1.0, "domain": ["chrome", "firefox", "safari", "edge"]},
    {"name": "theme", "mechanism": "grr", "epsilon": 1.0, "domain": ["light", "dark"]},
    {"name": "load_ms", "mechanism": "piecewise", "epsilon": 1.0, "range": [0, 1000]},
    {"name": "lang", "mechanism": "olh", "epsilon": 1.0, "domain": ["en", "de", "fr", "es", "it"]},
]
VALUES = {"browser": "safari", "theme": "dark", "load_ms": 230.0, "lang": "fr"}


def import_time(runs: int) -> tuple[float, float]:
    "Min and median ms of importing client_sdk in a fresh interpreter"
    samples = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-X", "importtime", "-c", "import client_sdk"], capture_output=True,
                             text=True, check=True).stderr
        line = [x for x in out.splitlines() if x.rstrip().endswith("| client_sdk")][-1]
        samples.append(int(line.split("|")[1]) / 1000)
    return min(samples), statistics.median(samples)


def lifecycle(root: Path) -> tuple[int, int, float]:
    "HTTP requests, SQLite statements and ms of one fresh device: Client, 4 records, flush, close"
    import sqlite3

    from client_sdk import Client, ReportPolicy
    from client_sdk.runtime.transport import WSGITransport
    from collector import create_app
    from collector.storage import Storage

    db = root / "collector.db"
    app = create_app({"DATABASE": str(db), "RATE_LIMIT": 0})
    with Storage(db) as storage:
        key, _ = storage.create_key("ingest", "2024-01-01")
        for spec in CAMPAIGNS:
            storage.create_campaign(spec, "2024-01-01")
    wsgi = WSGITransport(app)
    requests = []

    class Counting:
        def send(self, request, timeout):
            requests.append(request.url)
            return wsgi.send(request, timeout)

    statements: list[str] = []
    connect = sqlite3.connect

    def traced(path, *args, **kwargs):
        conn = connect(path, *args, **kwargs)
        if str(root / "device") in str(path):  # the device's state file, not the collector's database
            conn.set_trace_callback(statements.append)
        return conn

    options = {"transport": Counting(), "background": False, "policy": ReportPolicy.unlimited()}
    if "campaigns" in inspect.signature(Client).parameters:
        options["campaigns"] = [c["name"] for c in CAMPAIGNS]
    Client("http://collector.test", key, root / "warm", **options).close()  # warm the collector's caches
    requests.clear()
    sqlite3.connect = traced
    try:
        started = time.perf_counter()
        client = Client("http://collector.test", key, root / "device", **options)
        for name, value in VALUES.items():
            client.record(name, value)
        result = client.flush(timeout=30)
        client.close(timeout=0)
        elapsed = (time.perf_counter() - started) * 1000
    finally:
        sqlite3.connect = connect
    assert result.remaining == 0, result
    # SQLite's trace repeats a statement for each trigger it fires: count each execution once
    executed = [s for i, s in enumerate(statements) if i == 0 or s != statements[i - 1]]
    return len(requests), len(executed), elapsed


def record_cost(root: Path, depth: int, samples: int = 200) -> tuple[float, int]:
    "Median ms per record() and SQL statements per record() with ``depth`` reports already queued"
    from client_sdk import Client, QueueLimits, ReportPolicy, load_spec
    from client_sdk.runtime.transport import MockTransport, Response

    spec = load_spec(CAMPAIGNS[0])
    item = {"name": spec.name, "version": 1, "fingerprint": spec.fingerprint, "spec": spec.to_dict()}
    transport = MockTransport(lambda r: Response.from_json(200, {"campaigns": [item]} if r.url.endswith("campaigns")
                                                           else item))
    options = {"transport": transport, "background": False, "policy": ReportPolicy.unlimited(),
               "queue_limits": QueueLimits(max_reports=100_000, max_bytes=1 << 30)}
    client = Client("http://collector.test", "k", root / f"depth-{depth}", **options)
    client.spec("browser")
    now = time.time()
    with client.state.transaction() as conn:
        conn.executemany("INSERT INTO queue (report_id, campaign, body, size, created) VALUES (?, 'browser', ?, ?, ?)",
                         [(str(uuid.uuid4()), "{}" * 100, 200, now) for _ in range(depth)])
        if conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'queue_totals'").fetchone()[0]:
            conn.execute("UPDATE queue_totals SET reports = reports, bytes = bytes")
    times, statements = [], []
    client.state.conn.set_trace_callback(statements.append)
    for _ in range(samples):
        started = time.perf_counter()
        client.record("browser", "safari")
        times.append((time.perf_counter() - started) * 1000)
    client.state.conn.set_trace_callback(None)
    client.close(timeout=0)
    executed = [s for i, s in enumerate(statements) if i == 0 or s != statements[i - 1]]
    return statistics.median(times), round(len(executed) / samples)


# The demo's lifecycles (Client, a record per campaign, flush, close) against the real collector over HTTP, or with
# "local" against an in-memory collector (no HTTP, no server process): the SDK's own costs
CPU_RUN = """
import json, logging, resource, sys, tempfile
from contextlib import nullcontext
from pathlib import Path
import numpy as np
import client_sdk
from client_sdk import Client
from client_sdk.runtime.transport import MockTransport, Response
from demo.devices import draw_population
from demo.servers import create_campaigns, create_keys, running_collector
from demo.scenario import CAMPAIGNS

lifecycles, local, warm = int(sys.argv[1]), sys.argv[2] == "local", 20
logging.getLogger("client_sdk").setLevel(logging.ERROR)
population = draw_population(CAMPAIGNS, lifecycles + warm, np.random.default_rng(1))
names = list(population)
specs = [client_sdk.load_spec(c.spec) for c in CAMPAIGNS]
listing = json.dumps({"campaigns": [{"name": s.name, "version": 1, "fingerprint": s.fingerprint,
                                     "spec": s.to_dict()} for s in specs]}).encode()

def collector(request):
    if request.method == "GET":
        return Response(200, {"content-type": "application/json"}, listing)
    count = len(request.json()["reports"])
    return Response.from_json(200, {"accepted": count, "duplicate": 0, "rejected": 0, "errors": []})

def lifecycle(url, key, user, state_dir):
    transport = {"transport": MockTransport(collector)} if local else {}
    client = Client(url, key, state_dir, background=False, campaigns=names, **transport)
    try:
        for name in names:
            client.record(name, population[name][user])
        result = client.flush(timeout=30)
    finally:
        client.close(timeout=0)
    assert result.remaining == 0 and not result.rejected, result

with tempfile.TemporaryDirectory() as temp:
    if local:
        serving, ingest = nullcontext("http://collector.test"), "key"
    else:
        database = Path(temp) / "collector.db"
        admin, ingest = create_keys(database)
        serving = running_collector(database)
    with serving as url:
        if not local:
            create_campaigns(url, admin)
        for user in range(warm):
            lifecycle(url, ingest, user, Path(temp) / f"warm-{user}")
        before = resource.getrusage(resource.RUSAGE_SELF)
        for user in range(warm, warm + lifecycles):
            lifecycle(url, ingest, user, Path(temp) / f"device-{user}")
        after = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"user": (after.ru_utime - before.ru_utime) / lifecycles,
                  "sys": (after.ru_stime - before.ru_stime) / lifecycles}))
"""


def lifecycle_cpu(root: Path, lifecycles: int, local: bool = False) -> dict[str, float]:
    "User and system CPU seconds per lifecycle of the checkout at ``root`` (see the module docstring)"
    return run_json(root, CPU_RUN, lifecycles, "local" if local else "http", what="lifecycle run")


def cpu_table(roots: list[Path], lifecycles: int, rounds: int, local: bool = False) -> None:
    import os

    where = "against an in-memory collector" if local else "over HTTP"
    print(f"device CPU per lifecycle {where} ({lifecycles} lifecycles, the demo's 4 campaigns), ms")
    print(f"{'round':<6} {'checkout':<34} {'load':>5} {'user':>7} {'sys':>7} {'CPU':>7}")
    totals: dict[Path, list[float]] = {root: [] for root in roots}
    for round_ in range(rounds):
        for root in roots:
            load = os.getloadavg()[0]
            out = lifecycle_cpu(root, lifecycles, local)
            totals[root].append(out["user"] + out["sys"])
            print(f"{round_:<6} {str(root)[-34:]:<34} {load:>5.1f} {1e3 * out['user']:>7.2f} {1e3 * out['sys']:>7.2f} "
                  f"{1e3 * (out['user'] + out['sys']):>7.2f}", flush=True)
    for root, values in totals.items():
        print(f"{'median':<6} {str(root)[-34:]:<34} {'':>5} {'':>7} {'':>7} {1e3 * statistics.median(values):>7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="fresh interpreters for the import time")
    parser.add_argument("--cpu", type=int, default=0, metavar="N",
                        help="only the device's CPU per lifecycle over HTTP, N lifecycles per run")
    parser.add_argument("--root", type=Path, action="append", help="checkout to measure with --cpu (repeatable)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of --cpu runs, checkouts interleaved")
    parser.add_argument("--local", action="store_true",
                        help="with --cpu: against an in-memory collector (the SDK's own CPU, no HTTP)")
    args = parser.parse_args()
    if args.cpu:
        cpu_table([r.resolve() for r in (args.root or [Path(__file__).resolve().parents[1]])], args.cpu, args.rounds,
                  args.local)
        return
    low, mid = import_time(args.runs)
    print(f"import client_sdk ({args.runs} runs): min {low:.1f} ms, median {mid:.1f} ms")
    with tempfile.TemporaryDirectory() as tmp:
        requests, statements, ms = lifecycle(Path(tmp))
        print(f"device lifecycle (Client, 4 records, flush, close): {requests} HTTP requests, "
              f"{statements} SQLite statements, {ms:.1f} ms")
        print(f"{'queue depth':>12} {'ms/record':>10} {'statements/record':>18}")
        rows = [(depth, *record_cost(Path(tmp), depth)) for depth in (100, 10_000)]
        for depth, ms_per, per in rows:
            print(f"{depth:>12} {ms_per:>10.3f} {per:>18}")
        print(f"{'ratio':>12} {rows[1][1] / rows[0][1]:>10.2f} {rows[1][2] / rows[0][2]:>18.2f}")


if __name__ == "__main__":
    main()
