"""The collector's CPU per request under the demo's load (issue 14 item 5): what one simulated user costs it.

Starts the demo's collector (``demo.servers.running_collector``: gunicorn, one worker of threads, as ``ldp-telemetry
demo`` runs it) over a fresh database with the demo's campaigns, then sends, from ``--threads`` client threads on
kept-alive connections, each kind of request the demo's devices send, one kind at a time:

* ``livez``: ``GET /livez``, no key, no database: the floor of gunicorn and Flask;
* ``spec GET``: ``GET /v1/campaigns``, every campaign's spec in one answer (a device's one spec request);
* ``1-report POST``: ``POST /v1/reports`` of one report (a device posts one per campaign);
* ``user``: a device's whole exchange on one new connection: the spec GET and four 1-report POSTs.

For each it prints the collector's CPU time (user + sys of its master and worker, read from ``/proc`` before and
after, and each part) per request and the wall time.  CPU is the figure to compare on a shared machine.  Payloads
come from the vectorised simulator (the SDK's distribution); every report id is fresh, so every POST stores its report.

    python benchmarks/collector_requests.py                       # this checkout
    python benchmarks/collector_requests.py --root /tmp/before --root .   # another checkout, alternating
    python benchmarks/collector_requests.py --kind user --requests 2000 --rounds 3 --root /tmp/before --root .
    python benchmarks/collector_requests.py --distributed 2000 --root /tmp/before --root .

``--distributed N`` measures instead the demo's distributed phase (``demo.servers.running_aggregators``,
``report_distributed``, ``collect_today`` with N users): the wall time and the aggregators' CPU of their start
(until the leader answers the first campaign), of the sealed reports' upload and of the collection.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from checkouts import run_json

REPO = Path(__file__).resolve().parents[1]
KINDS = ("livez", "spec GET", "1-report POST", "user")
MEASURE = r"""
import http.client, json, os, sys, tempfile, threading, time, uuid
from pathlib import Path
import numpy as np
from demo.devices import draw_population
from demo.servers import create_campaigns, create_keys, running_collector
from demo.scenario import CAMPAIGNS
from client_sdk import load_spec
from estimators.simulate import simulate

count, threads, kinds = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
TICK = os.sysconf("SC_CLK_TCK")


def descendants(root):
    "pids of every process below ``root``"
    children = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def cpu(pids):
    "(user, sys) CPU seconds of ``pids``"
    user = system = 0
    for pid in pids:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        user, system = user + int(fields[11]), system + int(fields[12])
    return user / TICK, system / TICK


def payloads(users):
    "Per campaign: (name, fingerprint, payloads) drawn by the simulator"
    rng = np.random.default_rng(1)
    population = draw_population(CAMPAIGNS, users, rng)
    out = []
    for campaign in CAMPAIGNS:
        spec = load_spec(campaign.spec)
        values = population[campaign.name]
        if spec.is_categorical:
            index = {value: i for i, value in enumerate(spec.domain or ())}
            values = np.array([index[v] for v in values])
        out.append((spec.name, spec.fingerprint, simulate(spec, values, rng).to_payloads()))
    return out


def report_body(campaign, i):
    name, fingerprint, drawn = campaign
    return json.dumps({"reports": [{"report_id": str(uuid.uuid4()), "campaign": name, "fingerprint": fingerprint,
                                    "payload": drawn[i % len(drawn)]}]}).encode()


def call(connection, method, path, body, headers):
    connection.request(method, path, body, headers)
    response = connection.getresponse()
    data = response.read()
    if response.status != 200:
        raise SystemExit(f"{method} {path}: {response.status} {data[:300]!r}")


def run(kind, port, ingest, campaigns):
    headers = {"Authorization": f"Bearer {ingest}", "Content-Type": "application/json"}
    per_thread = count // threads
    bodies = [[report_body(campaigns[(t + i) % len(campaigns)], i) for i in range(per_thread * 4)]
              for t in range(threads)]

    def worker(t):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        for i in range(per_thread):
            if kind == "livez":
                call(connection, "GET", "/livez", None, {})
            elif kind == "spec GET":
                call(connection, "GET", "/v1/campaigns", None, headers)
            elif kind == "1-report POST":
                call(connection, "POST", "/v1/reports", bodies[t][i], headers)
            else:  # a device: a new connection, its spec GET, then one POST per campaign
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                call(connection, "GET", "/v1/campaigns", None, headers)
                for j in range(4):
                    call(connection, "POST", "/v1/reports", bodies[t][4 * i + j], headers)
        connection.close()

    workers = [threading.Thread(target=worker, args=(t,)) for t in range(threads)]
    return workers, per_thread * threads


with tempfile.TemporaryDirectory() as temp:
    database = Path(temp) / "collector.db"
    admin, ingest = create_keys(database)
    campaigns = payloads(max(count, 64))
    with running_collector(database) as url:
        port = int(url.rsplit(":", 1)[1])
        create_campaigns(url, admin)
        collector = descendants(os.getpid())
        results = {}
        for kind in kinds:
            workers, requests = run(kind, port, ingest, campaigns)
            before, started = cpu(collector), time.perf_counter()
            for w in workers:
                w.start()
            for w in workers:
                w.join()
            after = cpu(collector)
            results[kind] = {"requests": requests, "user": after[0] - before[0], "sys": after[1] - before[1],
                             "wall": time.perf_counter() - started}
print(json.dumps(results))
"""

DISTRIBUTED = r"""
import json, os, sys, tempfile, time
from pathlib import Path
import numpy as np
from demo.devices import draw_population, report_distributed
from demo.distributed import collect_today
from demo.servers import create_campaigns, running_aggregators
from demo.scenario import DISTRIBUTED_CAMPAIGNS

users = int(sys.argv[1])
TICK = os.sysconf("SC_CLK_TCK")


def tree_cpu():
    "CPU seconds of every process below this one (the aggregators' masters and workers)"
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = open(f"/proc/{entry}/stat").read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / TICK)
    total, todo = 0.0, [os.getpid()]
    while todo:
        parent = todo.pop()
        for pid, (ppid, cpu) in stats.items():
            if ppid == parent:
                total += cpu
                todo.append(pid)
    return total


population = draw_population(DISTRIBUTED_CAMPAIGNS, users, np.random.default_rng(1))
out = {}
with tempfile.TemporaryDirectory() as temp:
    with running_aggregators(Path(temp)) as aggs:
        started, cpu = time.perf_counter(), tree_cpu()
        created = create_campaigns(aggs.url, aggs.admin, DISTRIBUTED_CAMPAIGNS)  # waits for the leader's worker
        out["start"] = {"wall": time.perf_counter() - started, "cpu": tree_cpu() - cpu}
        days = []
        for phase, run in (("upload", lambda: report_distributed(aggs.url, aggs.ingest, created, population,
                                                                 helper_url=aggs.helper_url)),
                           ("collect", lambda: collect_today(aggs.url, aggs.admin, list(created), days[0]))):
            if phase == "collect":
                days.append(aggs.end_day())  # the leader restarted a day later (not measured)
            started, cpu = time.perf_counter(), tree_cpu()
            notes = run()
            out[phase] = {"wall": time.perf_counter() - started, "cpu": tree_cpu() - cpu}
            if notes:
                raise SystemExit(f"collection failed: {notes}")
print(json.dumps(out))
"""


def measure(root: Path, count: int, threads: int, kinds: list[str]) -> dict:
    "User and system CPU and wall seconds of the collector per kind of request, for one checkout"
    return run_json(root, MEASURE, count, threads, json.dumps(kinds), what="measuring")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="checkout to measure (repeatable)")
    parser.add_argument("--requests", type=int, default=800, help="requests (users for 'user') per kind")
    parser.add_argument("--threads", type=int, default=8, help="client threads (the demo's SDK_WORKERS)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--kind", choices=KINDS, action="append", help="kinds of request to measure (repeatable; "
                        "default: all)")
    parser.add_argument("--distributed", type=int, default=0, metavar="N",
                        help="instead: the demo's distributed phase for N users (aggregators' start, upload, "
                             "collection)")
    args = parser.parse_args()
    roots = [r.resolve() for r in (args.root or [REPO])]
    if args.distributed:
        distributed(roots, args.distributed, args.rounds)
        return
    print(f"collector CPU per request, {args.requests} requests per kind, {args.threads} client threads, "
          f"load {os.getloadavg()[0]:.1f}")
    kinds = [kind for kind in KINDS if kind in (args.kind or KINDS)]
    print(f"{'round':<6} {'checkout':<30} {'kind':<14} {'CPU ms each':>12} {'user':>6} {'sys':>6} {'wall ms each':>13}")
    for round_ in range(args.rounds):
        for root in roots:
            results = measure(root, args.requests, args.threads, kinds)
            for kind in kinds:
                r = results[kind]
                each = {part: 1e3 * r[part] / r["requests"] for part in ("user", "sys", "wall")}
                print(f"{round_:<6} {str(root)[-30:]:<30} {kind:<14} {each['user'] + each['sys']:>12.2f} "
                      f"{each['user']:>6.2f} {each['sys']:>6.2f} {each['wall']:>13.2f}", flush=True)


def distributed(roots: list[Path], users: int, rounds: int) -> None:
    "The demo's distributed phase per checkout: wall and the aggregators' CPU (masters and workers)"
    print(f"distributed phase, {users:,} users, load {os.getloadavg()[0]:.1f}; the aggregators' CPU in s")
    print(f"{'round':<6} {'checkout':<30} {'phase':<9} {'wall s':>7} {'CPU s':>7}")
    for round_ in range(rounds):
        for root in roots:
            done = subprocess.run([sys.executable, "-c", DISTRIBUTED, str(users)], capture_output=True, text=True,
                                  env={**os.environ, "PYTHONPATH": str(root)}, cwd=tempfile.gettempdir())
            if done.returncode != 0:
                raise SystemExit(f"measuring {root} failed:\n{done.stderr[-3000:]}")
            for phase, figures in json.loads(done.stdout.splitlines()[-1]).items():
                print(f"{round_:<6} {str(root)[-30:]:<30} {phase:<9} {figures['wall']:>7.2f} {figures['cpu']:>7.2f}",
                      flush=True)


if __name__ == "__main__":
    main()
