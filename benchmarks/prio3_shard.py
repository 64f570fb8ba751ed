"""Prio3 shard cost per report on the device, the Python SDK beside the JavaScript SDK in Node, in one table (issue
25: the JavaScript sharder within 3x of the Python SDK's).

    cd sdk-js && npm ci && npm run build && cd ..
    python benchmarks/prio3_shard.py            # about half a minute on the project VM
    python benchmarks/prio3_shard.py --quick    # fewer reports, for a smoke run

Both shard the same campaigns (the Histogram chunk lengths are the ones a spec derives) with fresh randomness per
report and encode the public share and input shares as the wire carries them (no HPKE: seal comes on top). Times are
CPU milliseconds per report of the process that does the work (``time.process_time`` here, ``process.cpuUsage``
in ``sdk-js/bench/prio3.mjs``), best of ``--repeat`` runs; the two run one after the other on the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from client_sdk.vdaf import Prio3, prio3_count, prio3_histogram, prio3_histogram_with_coins, prio3_sum  # noqa: E402

NODE_BENCH = REPO / "sdk-js" / "bench" / "prio3.mjs"
CTX = b"ldp-telemetry/v1 00112233445566778899aabbccddeeff"
# name, instance, measurement of report i, reports per run (the same as sdk-js/bench/prio3.mjs)
CASES: list[tuple[str, Callable[[], Prio3], Callable[[int], object], int]] = [
    ("Count", prio3_count, lambda i: True, 4000),
    ("Sum(255)", lambda: prio3_sum(255), lambda i: i % 256, 2000),
    ("Histogram(16)", lambda: prio3_histogram(16, 4), lambda i: i % 16, 2000),
    ("Histogram(1024)", lambda: prio3_histogram(1024, 32), lambda i: i % 1024, 60),
    # the largest encoded measurement a spec allows (16,384 field elements)
    ("Histogram(4096), 3 coins", lambda: prio3_histogram_with_coins(4096, 3, 128), lambda i: i % 4096, 6),
]


def python_shard_ms(vdaf: Prio3, measurement: Callable[[int], object], reports: int, repeat: int) -> float:
    for i in range(min(20, reports)):
        vdaf.shard(CTX, measurement(i), os.urandom(16))
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        for i in range(reports):
            public, shares = vdaf.shard(CTX, measurement(i), os.urandom(16), os.urandom(vdaf.RAND_SIZE))
            vdaf.encode_public_share(public)
            for share in shares:
                vdaf.encode_input_share(share)
        runs.append((time.process_time() - start) / reports * 1000)
    return min(runs)


def node_results(reports: int | None, repeat: int, script: Path = NODE_BENCH,
                 built: Path = REPO / "sdk-js" / "dist" / "vdaf" / "index.js") -> tuple[dict[str, dict], str | None]:
    "The figures by name of a Node benchmark of sdk-js/bench (``script``, once ``built`` exists), or why it did not run"
    node = shutil.which("node")
    if node is None:
        return {}, "not run: no node on the PATH"
    if not built.exists():
        return {}, "not run: build sdk-js first (cd sdk-js && npm ci && npm run build)"
    args = [node, str(script), "--repeat", str(repeat)] + (["--reports", str(reports)] if reports else [])
    done = subprocess.run(args, capture_output=True, text=True, timeout=1800, cwd=REPO / "sdk-js")
    if done.returncode != 0:
        return {}, f"not run: node failed: {done.stderr.strip()[-300:]}"
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {line["name"]: line for line in lines}, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer reports per configuration (smoke run).")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per figure; the best is printed.")
    args = parser.parse_args()
    reports = 20 if args.quick else None
    node, problem = node_results(reports, args.repeat)
    version = next(iter(node.values()))["node"] if node else "-"
    print(f"Prio3 shard per report, CPU ms, best of {args.repeat}: Python {platform.python_version()}, Node {version}")
    print()
    print("| VDAF | shares B | Python SDK ms | JavaScript SDK (Node) ms | JS / Python |")
    print("|---|--:|--:|--:|--:|")
    for name, factory, measurement, count in CASES:
        vdaf = factory()
        python_ms = python_shard_ms(vdaf, measurement, reports or count, args.repeat)
        public, shares = vdaf.shard(CTX, measurement(0), os.urandom(16))
        size = len(vdaf.encode_public_share(public)) + sum(len(vdaf.encode_input_share(s)) for s in shares)
        if name in node:
            js = node[name]
            if js["bytes"] != size:
                raise SystemExit(f"{name}: Node's shares are {js['bytes']} bytes, Python's {size}")
            js_cell, ratio = f"{js['shard_ms']:.3f}", f"{js['shard_ms'] / python_ms:.2f}x"
        else:
            js_cell, ratio = problem or "not run", "-"
        print(f"| {name} | {size:,} | {python_ms:.3f} | {js_cell} | {ratio} |")


if __name__ == "__main__":
    main()
