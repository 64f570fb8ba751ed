"""A distributed report's cost on the device, shard + HPKE seal of both input shares, the Python SDK beside the
JavaScript SDK in Node, in one table (issue 25: the JavaScript SDK within 3x of the Python SDK's).

    cd sdk-js && npm ci && npm run build && cd ..
    python benchmarks/distributed_seal.py            # about a minute on the project VM
    python benchmarks/distributed_seal.py --quick    # fewer reports, for a smoke run

Both make the payload ``record()`` queues (``client_sdk.distributed.seal_report``; ``sealReport`` of sdk-js's
distributed module: Prio3 from sdk-js/src/vdaf, HPKE on WebCrypto) for the same Histogram campaigns, with fresh
randomness and a fresh ephemeral key per report. CPU milliseconds per report of the process doing the work, best of
``--repeat`` runs (``time.process_time``; ``process.cpuUsage`` in ``sdk-js/bench/seal.mjs``, which counts
WebCrypto's worker threads); the two run one after the other on the same machine. The shard alone:
``benchmarks/prio3_shard.py``.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import client_sdk  # noqa: E402
from benchmarks.prio3_shard import node_results  # noqa: E402
from client_sdk.distributed import seal_report  # noqa: E402
from client_sdk.vdaf.hpke import HpkeKeyPair  # noqa: E402

NODE_BENCH = REPO / "sdk-js" / "bench" / "seal.mjs"
CASES = [("Histogram(16)", 16, 1000), ("Histogram(1024)", 1024, 60)]  # as in sdk-js/bench/seal.mjs


def python_seal_ms(length: int, reports: int, repeat: int) -> tuple[float, int]:
    spec = client_sdk.load_spec({"name": f"h{length}", "trust": "distributed", "prio3": "histogram",
                                 "epsilon": 1.0, "delta": 1e-6, "noise": "gaussian",
                                 "domain": [f"v{i}" for i in range(length)]})
    leader, helper = HpkeKeyPair.generate(1).config, HpkeKeyPair.generate(2).config
    batch = time.strftime("%Y-%m-%d", time.gmtime())

    def once(i: int) -> dict:
        return seal_report(spec, f"v{i % length}", leader, helper, report_id=str(uuid.uuid4()), batch=batch)

    size = 0
    for i in range(min(20, reports)):
        size = len(json.dumps(once(i), separators=(",", ":")))
    runs = []
    for _ in range(repeat):
        start = time.process_time()
        for i in range(reports):
            once(i)
        runs.append((time.process_time() - start) / reports * 1000)
    return min(runs), size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer reports per configuration (smoke run).")
    parser.add_argument("--repeat", type=int, default=3, help="Runs per figure; the best is printed.")
    args = parser.parse_args()
    reports = 20 if args.quick else None
    node, problem = node_results(reports, args.repeat, NODE_BENCH, REPO / "sdk-js" / "dist" / "distributed.js")
    version = next(iter(node.values()))["node"] if node else "-"
    print(f"Distributed report (shard + seal) per report, CPU ms, best of {args.repeat}: "
          f"Python {platform.python_version()}, Node {version}")
    print()
    print("| campaign | payload B (JSON) | Python SDK ms | JavaScript SDK (Node) ms | JS / Python |")
    print("|---|--:|--:|--:|--:|")
    for name, length, count in CASES:
        python_ms, size = python_seal_ms(length, reports or count, args.repeat)
        if name in node:
            js = node[name]
            js_cell, ratio = f"{js['seal_ms']:.3f}", f"{js['seal_ms'] / python_ms:.2f}x"
        else:
            js_cell, ratio = problem or "not run", "-"
        print(f"| {name} | {size:,} | {python_ms:.3f} | {js_cell} | {ratio} |")


if __name__ == "__main__":
    main()
