"""The demo's users through the SDK (issue 14 item 5): wall and CPU time of ``ldp-telemetry demo``, checkouts
interleaved so that each round sees about the same load.

    python benchmarks/demo_speed.py                                 # this checkout, 2,000 users, 2 rounds
    python benchmarks/demo_speed.py --root /tmp/before --root .     # another checkout against this one
    python benchmarks/demo_speed.py --rounds 1 --users 10 --split 400   # mostly the per-side split
    python benchmarks/demo_speed.py --rounds 1 --users 10 --split 400 --processes 1 --processes 2

Each run is a fresh interpreter (``PYTHONPATH`` at the checkout, so its ``client_sdk``, ``collector`` and ``demo``
are the ones measured) running ``ldp-telemetry demo --users N --seed 1`` into a temporary directory.  CPU is user
plus system time of the run and every process it waited for (the collector's processes included): on a shared
machine it is the figure to compare, since the wall time follows the load.  The demo's own line (users, seconds)
and the load average at the start of each run are printed beside it.

``--split N`` then measures each side apart, in a fresh interpreter per checkout: ``demo.devices.report_through_sdk``
for N users against ``demo.servers.running_collector``; the devices' CPU is the measuring process's own (user + sys)
during the reports plus that of the device worker processes it waited for meanwhile (the collector's child is
still running then, so it is not among them), the collector's is its processes' CPU (collected when they exit)
less that of a collector started and stopped with no users (imports, start-up).  ``--processes P``
(repeatable) runs the devices in P worker processes where the checkout's ``report_through_sdk`` takes that
parameter (``-``: its default); the workers' start (an interpreter importing
``demo.devices``) is part of the devices' CPU.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from checkouts import run_json

REPO = Path(__file__).resolve().parents[1]
RUN = "from ldp_telemetry.cli import main; main()"
SPLIT = """
import inspect, json, logging, resource, sys, tempfile, time
from pathlib import Path
import numpy as np
from demo.devices import draw_population, report_through_sdk
from demo.servers import create_campaigns, create_keys, running_collector
from demo.scenario import CAMPAIGNS

def cpu(who):
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime

users, processes = int(sys.argv[1]), int(sys.argv[2])
takes = "processes" in inspect.signature(report_through_sdk).parameters
options = {"processes": processes} if processes and takes else {}
logging.getLogger("client_sdk").setLevel(logging.ERROR)
population = draw_population(CAMPAIGNS, users, np.random.default_rng(1))
out = {}
with tempfile.TemporaryDirectory() as temp:
    for name, count in (("idle", 0), ("users", users)):
        database = Path(temp) / name / "collector.db"
        database.parent.mkdir()
        admin, ingest = create_keys(database)
        children = cpu(resource.RUSAGE_CHILDREN)
        with running_collector(database) as url:
            create_campaigns(url, admin)
            own, workers, started = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
            if count:
                report_through_sdk(url, ingest, {k: v[:count] for k, v in population.items()}, Path(temp) / "dev",
                                   **options)
            workers = cpu(resource.RUSAGE_CHILDREN) - workers  # the device worker processes, if any
            out[name] = {"devices": cpu(resource.RUSAGE_SELF) - own + workers, "workers": workers,
                         "wall": time.perf_counter() - started}
        out[name]["collector"] = cpu(resource.RUSAGE_CHILDREN) - children - out[name]["workers"]
print(json.dumps(out))
"""


def run_once(root: Path, users: int, out: Path) -> tuple[float, float, str]:
    "Wall seconds, CPU seconds (children included) and the demo's summary line"
    env = {**os.environ, "PYTHONPATH": str(root)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUN, "demo", "--users", str(users), "--out", str(out), "--seed", "1"],
                          env=env, capture_output=True, text=True, cwd=out.parent)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"demo failed in {root}:\n{done.stderr[-2000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    line = next((x for x in done.stdout.splitlines() if "simulated users" in x), "")
    return wall, cpu, line


def split_once(root: Path, users: int, processes: int = 0) -> dict:
    "Devices' and collector's CPU seconds for ``users`` users (see the module docstring)"
    return run_json(root, SPLIT, users, processes, what="split run")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="checkout to measure (repeatable)")
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--split", type=int, default=0, metavar="N",
                        help="then measure devices and collector apart on N users (0: skip)")
    parser.add_argument("--processes", type=int, action="append", metavar="P",
                        help="with --split: device processes of report_through_sdk (repeatable; default its own)")
    args = parser.parse_args()
    roots = [r.resolve() for r in (args.root or [REPO])]
    print(f"demo, {args.users:,} users through the SDK; {os.cpu_count()} CPUs")
    print(f"{'round':<6} {'checkout':<34} {'load':>5} {'wall s':>8} {'CPU s':>8} {'CPU ms/user':>12}")
    with tempfile.TemporaryDirectory(prefix="ldp-demo-speed-") as temp:
        for round_ in range(args.rounds):
            for index, root in enumerate(roots):
                load = os.getloadavg()[0]
                wall, cpu, line = run_once(root, args.users, Path(temp) / f"out-{round_}-{index}")
                print(f"{round_:<6} {str(root)[-34:]:<34} {load:>5.1f} {wall:>8.1f} {cpu:>8.1f} "
                      f"{1e3 * cpu / args.users:>12.1f}   {line.strip()}", flush=True)
    if not args.split:
        return
    print(f"each side apart, {args.split:,} users, CPU ms per user")
    print(f"{'round':<6} {'checkout':<34} {'procs':>5} {'load':>5} {'wall s':>8} {'devices':>8} {'collector':>10}")
    for round_ in range(args.rounds):
        for root in roots:
            for processes in args.processes or [0]:
                load = os.getloadavg()[0]
                out = split_once(root, args.split, processes)
                collector = out["users"]["collector"] - out["idle"]["collector"]
                print(f"{round_:<6} {str(root)[-34:]:<34} {processes or '-':>5} {load:>5.1f} "
                      f"{out['users']['wall']:>8.1f} {1e3 * out['users']['devices'] / args.split:>8.1f} "
                      f"{1e3 * collector / args.split:>10.1f}", flush=True)


if __name__ == "__main__":
    main()
