"""The demo's reports (issue 14 item 5): wall and CPU time of ``demo.reports.write_reports`` for the 4 local campaigns
and the distributed one, checkouts interleaved so that each round sees about the same load.

    python benchmarks/demo_reports.py                               # this checkout, 2,000 users, 2 rounds
    python benchmarks/demo_reports.py --root /tmp/before --root .   # another checkout against this one
    python benchmarks/demo_reports.py --rounds 1 --profile          # and a cProfile of each call (top 25)
    python benchmarks/demo_reports.py --demo --root /tmp/before --root .   # run_demo after the users' reports

Each run is a fresh interpreter (``PYTHONPATH`` at the checkout, so its ``demo``, ``collector`` and
``estimators`` are the ones measured).  It fills the demo's collector with N users' reports drawn by the
vectorised simulator (``report_in_bulk``, seed 1: the data every checkout sees is the same) and the leader and
helper with N sealed reports of the distributed campaign, collects today's batch, then times
``write_reports`` for each phase, the collectors still running: the local campaigns in this process alone, then
(where the checkout has ``report_workers``) shared with a worker process started for the call, then the
distributed campaign; "render CPU" is the 4 local reports drawn and written again from data fetched beforehand
(``render_reports`` in this process alone: no collector, no HTTP), the figure that the plotting changes move.

``--demo`` runs ``run_demo`` itself instead (seed 1), with the users' reports drawn by the simulator rather than
sent through the SDK (``report_through_sdk`` replaced by ``report_in_bulk``: the devices are not what is measured
here), and times the whole call and the part after those reports: the local campaigns' reports, the whole
distributed phase (leader and helper, N sealed reports, collection) and its report, as they overlap.

CPU is user plus system time of the measuring process and of every process below it (collector children, report
workers; read from ``/proc`` for the live ones, from ``RUSAGE_CHILDREN`` for those that ended): on a shared
machine it is the figure to compare, since the wall time follows the load.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from checkouts import run_json

REPO = Path(__file__).resolve().parents[1]
CHILD = r"""
import cProfile, io, json, logging, os, pstats, resource, sys, tempfile, time
from pathlib import Path
import numpy as np
from demo import reports, run, servers
from demo.devices import draw_population, report_distributed, report_in_bulk
from demo.distributed import collect_today
from demo.scenario import CAMPAIGNS, DISTRIBUTED_CAMPAIGNS

TICK = os.sysconf("SC_CLK_TCK")

def descendants(pid):
    "CPU seconds (own and waited-for children) of every live process below pid"
    total, children = 0.0, []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as handle:
                children += [int(c) for c in handle.read().split()]
    except OSError:
        return 0.0
    for child in children:
        try:
            with open(f"/proc/{child}/stat") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
            total += sum(int(x) for x in fields[11:15]) / TICK
        except OSError:
            continue
        total += descendants(child)
    return total

def cpu():
    own, ended = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + ended.ru_utime + ended.ru_stime + descendants(os.getpid())

def measure(label, call):
    profile = cProfile.Profile() if PROFILE else None
    before, started = cpu(), time.perf_counter()
    if profile:
        profile.enable()
    result = call()
    if profile:
        profile.disable()
    out[label] = {"wall": time.perf_counter() - started, "cpu": cpu() - before}
    if profile:
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(25)
        out[label]["profile"] = text.getvalue()
    return result

users, PROFILE, MODE = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3]
logging.getLogger("client_sdk").setLevel(logging.ERROR)
rng = np.random.default_rng(1)
population = draw_population([*CAMPAIGNS, *DISTRIBUTED_CAMPAIGNS], users, rng)
out = {}
if MODE == "demo":
    marks = {}

    def devices(url, ingest_key, local, state_root, progress=None, **_):
        "The users' reports drawn by the simulator, then the mark from which run_demo's reports are timed"
        report_in_bulk(url, ingest_key, [c for c in CAMPAIGNS if c.name in local], local, rng, progress)
        marks.update(wall=time.perf_counter(), cpu=cpu())

    run.report_through_sdk = devices
    with tempfile.TemporaryDirectory() as temp:
        before, started = cpu(), time.perf_counter()
        run.run_demo(users, Path(temp) / "reports", seed=1)
        out["demo"] = {"wall": time.perf_counter() - started, "cpu": cpu() - before,
                       "after_wall": time.perf_counter() - marks["wall"], "after_cpu": cpu() - marks["cpu"],
                       "files": len(list((Path(temp) / "reports").iterdir()))}
    print(json.dumps(out))
    sys.exit(0)
with tempfile.TemporaryDirectory() as temp:
    folder, reports = Path(temp), Path(temp) / "reports"
    admin, ingest = servers.create_keys(folder / "collector.db")
    with servers.running_collector(folder / "collector.db") as url:
        servers.create_campaigns(url, admin, CAMPAIGNS)
        report_in_bulk(url, ingest, CAMPAIGNS, population, rng)
        earlier = measure("local", lambda: reports.write_reports(url, admin, CAMPAIGNS, population, reports))
        if hasattr(reports, "render_reports"):  # the drawing alone: the 4 local reports, fetched once more, here
            fetched = reports.fetch_reports(url, admin, CAMPAIGNS, population)
            measure("render", lambda: reports.render_reports(fetched, Path(temp) / "render"))
        if hasattr(reports, "report_workers"):  # the same, shared with a worker process (spawned here: counted)
            def shared():
                with reports.report_workers() as workers:
                    return reports.write_reports(url, admin, CAMPAIGNS, population, Path(temp) / "shared",
                                             workers=workers)
            measure("shared", shared)
    with servers.running_aggregators(folder) as aggregators:
        created = servers.create_campaigns(aggregators.url, aggregators.admin, DISTRIBUTED_CAMPAIGNS)
        report_distributed(aggregators.url, aggregators.ingest, created, population,
                               helper_url=aggregators.helper_url)
        day = aggregators.end_day()
        url, admin = aggregators.url, aggregators.admin
        collect_today(url, admin, list(created), day)
        measure("distributed", lambda: reports.write_reports(url, admin, DISTRIBUTED_CAMPAIGNS, population, reports,
                                                         earlier=earlier))
    out["files"] = len(list(reports.iterdir()))
print(json.dumps(out))
"""


def run_once(root: Path, users: int, profile: bool, mode: str) -> dict:
    return run_json(root, CHILD, users, "1" if profile else "0", mode)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, action="append", help="checkout to measure (repeatable)")
    parser.add_argument("--users", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of each call (the measuring "
                                                                "process only; it slows the calls down)")
    parser.add_argument("--demo", action="store_true", help="time run_demo from the end of the users' reports "
                                                             "instead (see the module docstring)")
    args = parser.parse_args()
    roots = [r.resolve() for r in (args.root or [REPO])]
    if args.demo:
        demo_rounds(roots, args.users, args.rounds)
        return
    print(f"write_reports of the demo's campaigns, {args.users:,} users; {os.cpu_count()} CPUs")
    print(f"{'round':<6} {'checkout':<24} {'load':>5} {'local wall':>11} {'local CPU':>10} "
          f"{'shared wall':>12} {'shared CPU':>11} {'dist. wall':>11} {'dist. CPU':>10} {'render CPU':>11} "
          f"{'files':>6}")
    for round_ in range(args.rounds):
        for root in roots:
            load = os.getloadavg()[0]
            out = run_once(root, args.users, args.profile, "calls")
            local, distributed = out["local"], out["distributed"]
            shared = out.get("shared", {"wall": float("nan"), "cpu": float("nan")})
            render = out.get("render", {"wall": float("nan"), "cpu": float("nan")})
            print(f"{round_:<6} {str(root)[-24:]:<24} {load:>5.1f} {local['wall']:>11.2f} {local['cpu']:>10.2f} "
                  f"{shared['wall']:>12.2f} {shared['cpu']:>11.2f} {distributed['wall']:>11.2f} "
                  f"{distributed['cpu']:>10.2f} {render['cpu']:>11.2f} {out['files']:>6}", flush=True)
            for phase in ("local", "shared", "distributed", "render"):
                if "profile" in out.get(phase, {}):
                    print(f"--- {phase}\n{out[phase]['profile']}")


def demo_rounds(roots: list[Path], users: int, rounds: int) -> None:
    print(f"run_demo with the users' reports drawn by the simulator, {users:,} users; {os.cpu_count()} CPUs")
    print(f"{'':<36} {'whole run_demo':>17} {'after the reports':>19}")
    print(f"{'round':<6} {'checkout':<24} {'load':>5} {'wall s':>8} {'CPU s':>8} {'wall s':>9} {'CPU s':>9} "
          f"{'files':>6}")
    for round_ in range(rounds):
        for root in roots:
            load = os.getloadavg()[0]
            out = run_once(root, users, False, "demo")["demo"]
            print(f"{round_:<6} {str(root)[-24:]:<24} {load:>5.1f} {out['wall']:>8.2f} {out['cpu']:>8.2f} "
                  f"{out['after_wall']:>9.2f} {out['after_cpu']:>9.2f} {out['files']:>6}", flush=True)


if __name__ == "__main__":
    main()
