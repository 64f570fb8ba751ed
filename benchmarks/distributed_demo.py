"""The README demo's distributed phase alone: CPU time of every process, per phase, for N users.

    python benchmarks/distributed_demo.py                            # this checkout, 2,000 users, 1 round
    python benchmarks/distributed_demo.py --root /tmp/before --root . --rounds 3   # alternating checkouts

Each run is a fresh interpreter with ``PYTHONPATH`` at the checkout (``checkouts.run_json``): it draws the demo's
population for ``demo.scenario.DISTRIBUTED_CAMPAIGNS`` (fixed seed) and runs ``demo.distributed.serve_distributed`` as
the demo does: a helper and a leader (collector children), campaign creation, every user's report sealed in this process
(``client_sdk.distributed.seal_report``) and posted to the leader in batches, one collection, the report data
fetched (the estimate).  It prints, per checkout, the CPU seconds (user + sys) of

* demo     this process from the call of ``serve_distributed`` on (sealing, uploads, the fetch and estimate), and
           within it the phases: create (campaigns), seal+upload (of which seal: ``seal_report`` alone, the CPU
           time of its thread), collect (the request; the work is the leader's and the helper's), fetch
* leader   the leader's processes (gunicorn arbiter and worker), read from ``/proc`` just before they stop
* helper   the helper's processes, likewise (their start-up imports included: the demo pays them too)

and the wall time of the phase.  CPU is the figure to compare on a loaded machine; run checkouts alternately
(``--rounds``) and compare medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.checkouts import run_json  # noqa: E402

CHILD = r"""
import json, os, resource, sys, tempfile, time
from pathlib import Path
import numpy as np
import demo.devices as devices
import demo.distributed as distributed
from demo.scenario import DISTRIBUTED_CAMPAIGNS

users = int(sys.argv[1])
population = devices.draw_population(DISTRIBUTED_CAMPAIGNS, users, np.random.default_rng(7))

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

phases = {}
def timed(name, function):
    def wrapper(*args, **kwargs):
        start = cpu()
        try:
            return function(*args, **kwargs)
        finally:
            phases[name] = phases.get(name, 0.0) + cpu() - start
    return wrapper

import client_sdk.distributed as sdk_distributed

original_seal = sdk_distributed.seal_report
def seal_report(*args, **kwargs):
    start = time.thread_time()
    try:
        return original_seal(*args, **kwargs)
    finally:
        phases["seal"] = phases.get("seal", 0.0) + time.thread_time() - start
sdk_distributed.seal_report = seal_report

for name, attr in (("create", "create_campaigns"), ("seal+upload", "report_distributed"),
                   ("collect", "collect_today"), ("fetch", "fetch_reports")):
    setattr(run, attr, timed(name, getattr(run, attr)))

tick = os.sysconf("SC_CLK_TCK")
def descendants_cpu():
    parents, stats = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        stats[int(entry)] = ((int(fields[11]) + int(fields[12])) / tick, cmdline)
    mine, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier and pid not in mine}
        mine |= frontier
    roles = {"leader": 0.0, "helper": 0.0}
    for pid in mine:
        seconds, cmdline = stats[pid]
        for role in roles:
            if f"{role}.db" in cmdline:
                roles[role] += seconds
    return roles

seen = {}
def on_data(fetched, notes):
    seen.update(descendants_cpu())
    seen["notes"] = notes

with tempfile.TemporaryDirectory() as temp:
    start, wall = cpu(), time.perf_counter()
    fetched, notes = distributed.serve_distributed(Path(temp), DISTRIBUTED_CAMPAIGNS, population, lambda count: None,
                                           on_data=on_data)
    wall = time.perf_counter() - wall
    demo = cpu() - start
assert not notes, notes
assert all(getattr(data, "truth", None) is not None for data in fetched), fetched
print(json.dumps({"wall": wall, "demo": demo, "leader": seen["leader"], "helper": seen["helper"], **phases}))
"""

COLUMNS = ("wall", "total", "demo", "create", "seal+upload", "seal", "collect", "fetch", "leader", "helper")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", action="append", type=Path, help="a checkout to measure (repeatable; default .)")
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=1, help="runs per checkout, alternating")
    args = parser.parse_args()
    roots = [root.resolve() for root in (args.root or [REPO])]
    results: dict[Path, list[dict]] = {root: [] for root in roots}
    for round_ in range(args.rounds):
        for root in roots:
            figures = run_json(root, CHILD, args.users, what="the distributed phase")
            figures["total"] = figures["demo"] + figures["leader"] + figures["helper"]
            results[root].append(figures)
            print(f"round {round_ + 1} {root}: " + "  ".join(f"{k} {figures[k]:.2f}" for k in COLUMNS), flush=True)
    print(f"\nmedians over {args.rounds} round(s), {args.users} users; seconds (wall, else CPU user+sys), loaded")
    print(f"{'checkout':<32}" + "".join(f"{k:>12}" for k in COLUMNS))
    for root, runs in results.items():
        print(f"{str(root)[-32:]:<32}" + "".join(f"{statistics.median(r[k] for r in runs):>12.2f}" for k in COLUMNS))
    print(json.dumps({str(root): runs for root, runs in results.items()}))


if __name__ == "__main__":
    main()
