"""The dashboard's costs (issue 38): the first view of a campaign of 1e6 stored reports, the campaign list with 100
campaigns, and the page's weight.

A fresh SQLite file gets an OUE campaign (epsilon 1, d = 32) with ``--reports`` reports spread over 30 days,
prefilled through ``Storage.insert_reports`` in groups of 20,000, and ``--campaigns`` - 1 more campaigns with
1,000 reports each (on the last day).  A real ``ldp-telemetry serve`` (2 workers, rate limit off) then answers
over loopback:

* first view of the campaign: the page, its script, its style sheet and ``GET /v1/campaigns/<name>/panel`` (the
  estimate of the whole window from the stored per-day aggregates, its 30 per-day estimates, the planner), one
  after the other as a browser asks them; the first view of each worker process (cold: the estimators' modules
  load then) and the median of ``--repeat`` more;
* the campaign list: the same page and assets and ``GET /v1/dashboard/campaigns`` (one query over the stored sums),
  median of ``--repeat``;
* page weight: the three assets gzipped (what a browser downloads once), and the panel's JSON gzipped.

    python benchmarks/dashboard.py                 # 1e6 reports, 100 campaigns (about two minutes)
    python benchmarks/dashboard.py --reports 100000 --campaigns 20 --repeat 3   # a quick look
"""

from __future__ import annotations

import argparse
import gzip
import statistics
import sys
import tempfile
import time
import urllib.request
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

D = 32
DAYS = [f"2024-05-{day:02d}" for day in range(1, 31)]
GROUP = 20_000
ASSETS = ("/dashboard/", "/dashboard/dashboard.js", "/dashboard/dashboard.css")


def spec_of(name: str) -> dict:
    return {"name": name, "mechanism": "oue", "epsilon": 1.0, "domain": [f"value_{i}" for i in range(D)]}


def prefill(storage, campaign, total: int, days: list[str] = DAYS) -> None:
    "``total`` reports over ``days``, from a pool of perturbed payloads (the costs measured do not depend on which)"
    import client_sdk
    import estimators
    from collector.storage import ReportGroup, payload_text

    mechanism = client_sdk.mechanism_from_spec(campaign.spec, rng=client_sdk.DeterministicRandom(7))
    pool = [mechanism.perturb(campaign.spec.domain[i % D]) for i in range(2048)]
    per_day = total // len(days)
    for day in days:
        for start in range(0, per_day, GROUP):
            count = min(GROUP, per_day - start)
            ids = sorted(str(uuid.uuid4()) for _ in range(count))
            payloads = [pool[(start + i) % len(pool)] for i in range(count)]
            storage.insert_reports([ReportGroup(campaign, ids, payloads, [payload_text(p) for p in payloads],
                                                estimators.aggregate(campaign.spec, payloads))], day)


def fetch(url: str, key: str | None = None) -> bytes:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=120) as response:
        return response.read()


def view_seconds(base: str, key: str, data_path: str) -> float:
    "The page, its assets and its data route, one after the other"
    started = time.perf_counter()
    for path in ASSETS:
        fetch(base + path)
    fetch(base + data_path, key)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, default=1_000_000)
    parser.add_argument("--campaigns", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    import client_sdk
    from collector.dashboard.pages import ASSETS as FILES
    from collector.dashboard.pages import asset_bytes
    from collector.storage import open_storage
    from tests.collector.helpers import running_server

    with tempfile.TemporaryDirectory() as temp:
        db = Path(temp) / "collector.db"
        started = time.perf_counter()
        with open_storage(db) as storage:
            storage.migrate()
            admin, _ = storage.create_key("admin", "2024-01-01")
            big, _ = storage.create_campaign(client_sdk.load_spec(spec_of("big")).to_dict(derived=False), "2024-01-01")
            prefill(storage, big, args.reports)
            for index in range(args.campaigns - 1):
                small, _ = storage.create_campaign(
                    client_sdk.load_spec(spec_of(f"campaign_{index:03d}")).to_dict(derived=False), "2024-01-01")
                prefill(storage, small, 1000, DAYS[-1:])
            stored = storage.count_reports("big")
        print(f"prefill: {stored:,} reports in campaign big, {args.campaigns} campaigns, "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        with running_server(db, Path(temp) / "serve.log", workers=2) as (base, _):
            panel_path = "/v1/campaigns/big/panel"
            cold = [view_seconds(base, admin, panel_path) for _ in range(2)]  # one per worker, at most
            warm = [view_seconds(base, admin, panel_path) for _ in range(args.repeat)]
            lists = [view_seconds(base, admin, "/v1/dashboard/campaigns") for _ in range(args.repeat)]
            panel = fetch(base + panel_path, admin)
    weight = sum(len(gzip.compress(asset_bytes(name))) for name in FILES)
    print(f"first view of a campaign of {stored:,} reports (page, assets, panel): first {max(cold):.3f} s, "
          f"median {statistics.median(warm):.3f} s (goal < 1 s)")
    print(f"campaign list with {args.campaigns} campaigns (page, assets, list): median "
          f"{statistics.median(lists):.3f} s (goal < 0.5 s)")
    print(f"page weight: {weight / 1024:.1f} KB gzipped, all assets (goal < 300 KB); the panel's JSON "
          f"{len(gzip.compress(panel)) / 1024:.1f} KB gzipped")


if __name__ == "__main__":
    main()
