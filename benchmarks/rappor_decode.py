"""Decode time and peak memory of the RAPPOR decoder for 10^6 and 10^7 reports and 1,000 to 10,000 candidates.

The decoder works on aggregate counts, so the counts are simulated directly with their exact distribution
(``simulate_rappor_counts``).  True values: 100 strings with an exponential distribution (the reference's
``gen_sim_input.py``); the remaining candidates are decoys.  Parameters: k = 128, h = 2, m = 64, p = 0.5,
q = 0.75, f = 0.5 (the issue's example).  Peak memory is Python's tracemalloc peak during decoding (numpy and
scipy allocations included) and the process's maximum resident set size.

Run:  python benchmarks/rappor_decode.py [--reports 1000000 10000000] [--candidates 1000 2000 5000 10000]
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np

from client_sdk.rappor import RapporParams
from estimators.rappor import CandidateMap, decode_rappor, position_table, simulate_rappor_counts

PARAMS = RapporParams(k=128, h=2, m=64, f=0.5, p=0.5, q=0.75)
TRUE_VALUES = 100


def exponential_probabilities(count: int) -> np.ndarray:
    "The reference simulation's truncated exponential over v1..v<count> (rate count/5 on [0, 1])"
    edges = 1 - np.exp(-(count / 5) * np.arange(count + 1) / count)
    return np.diff(edges) / edges[-1]


def run_case(reports: int, candidates: int, rng: np.random.Generator) -> dict:
    "Simulate counts, build the candidate map, decode; time and measure each step"
    values = [f"v{i}" for i in range(1, TRUE_VALUES + 1)]
    strings = values + [f"decoy{i}" for i in range(candidates - TRUE_VALUES)]
    probabilities = exponential_probabilities(TRUE_VALUES)
    counts = simulate_rappor_counts(
        PARAMS, values, probabilities, reports, rng, table=position_table(PARAMS, values)
    )
    tracemalloc.start()
    started = time.perf_counter()
    candidate_map = CandidateMap.from_candidates(PARAMS, strings)
    hashed = time.perf_counter()
    result = decode_rappor(PARAMS, counts, candidate_map)
    finished = time.perf_counter()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    detected = result.proportions()
    truth = dict(zip(values, probabilities))
    false_positives = sum(1 for s in detected if s not in truth)
    total_variation = 0.5 * sum(
        abs(detected.get(s, 0.0) - truth.get(s, 0.0)) for s in set(truth) | set(detected)
    )
    return {
        "reports": reports,
        "candidates": candidates,
        "hash_s": hashed - started,
        "decode_s": finished - hashed,
        "peak_mib": peak / 2**20,
        "detected": len(detected),
        "false_pos": false_positives,
        "tv": total_variation,
        "lasso": result.lasso_used,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reports", type=int, nargs="+", default=[1_000_000, 10_000_000])
    parser.add_argument("--candidates", type=int, nargs="+", default=[1000, 2000, 5000, 10000])
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    print(
        f"params k={PARAMS.k} h={PARAMS.h} m={PARAMS.m} p={PARAMS.p} q={PARAMS.q} f={PARAMS.f}; "
        f"{TRUE_VALUES} true values (exponential), the other candidates decoys"
    )
    header = (
        f"{'reports':>10} {'candidates':>10} {'hash s':>7} {'decode s':>8} {'peak MiB':>8} "
        f"{'detected':>8} {'false+':>6} {'TV':>6} {'lasso':>5}"
    )
    print(header)
    print("-" * len(header))
    for reports in args.reports:
        for candidates in args.candidates:
            row = run_case(reports, candidates, rng)
            print(
                f"{row['reports']:>10,} {row['candidates']:>10,} {row['hash_s']:>7.2f} {row['decode_s']:>8.2f} "
                f"{row['peak_mib']:>8.1f} {row['detected']:>8} {row['false_pos']:>6} {row['tv']:>6.3f} "
                f"{row['lasso']!s:>5}",
                flush=True,
            )
    max_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"process max RSS: {max_rss:.0f} MiB")


if __name__ == "__main__":
    main()
