"""Quantiles and range queries of the quantiles kind against the peer ldp-hierarchical-mechanism 0.1.3, same data.

Both sides get the same bucketed values (domain 1,024 by default), the same epsilon per report, one level per
user (the peer with ``on_all_levels=False``: with True every user reports every level, spending h times epsilon)
and the same oracle (OLH; the peer's ``local_hashing``, pure-ldp's OLH).  The peer runs in its own virtual
environment (``--peer-python``; create it with
``python3 -m venv .peer-venv && .peer-venv/bin/pip install -r benchmarks/requirements-quantiles-peer.txt``).

Figures per cell (population x epsilon x n): mean squared error of 1,000 random ranges, the quantiles' absolute
rank error and value error in buckets (p50, p90, p95, p99), and the time of randomizing, aggregating and
estimating (the peer cannot aggregate reports it did not make, so its figure holds all three; ours is split into
randomizing and the server's aggregation + estimation).  Printed as ratios ours / peer (below 1: ours is better or
faster), with our MSE against the analysis' variance of those ranges: the consistent tree's exact covariance
(``inference``) at the population's true frequencies, averaged over the ranges (``--f0-prediction``: the planner's
noise-only average at f = 0 instead).  One run's MSE over 1,000 ranges that share the tree's nodes is itself noisy
(0.6x-2.1x of its expectation at n = 1e5), so that ratio is the mean over ``--prediction-runs`` runs of ours alone
(new data, ranges and reports each), printed with its standard error.  Our peak memory is the process's resident
peak so far (ru_maxrss).

    .venv/bin/python benchmarks/quantiles.py --peer-python .peer-venv/bin/python --n 20000
"""

from __future__ import annotations

import argparse
import json
import math
import pathlib
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

from client_sdk.kinds.quantiles import parse_params  # noqa: E402
from estimators.kinds.quantiles import (  # noqa: E402
    adjoint,
    average_range_variance,
    consistent_tree,
    estimate_quantiles,
    level_covariance,
)
from estimators.kinds.quantiles.aggregate import aggregate_batches, simulate_batches  # noqa: E402

QUANTILES = (0.5, 0.9, 0.95, 0.99)

PEER = r"""
import json, sys, time
import numpy as np
from hierarchical_mechanism_LDP import Private_TreeBary
data_path, out_path, domain, branching, epsilon, seed = sys.argv[1:7]
np.random.seed(int(seed))
data = np.load(data_path)
ranges = np.load(data_path.replace(".npy", "-ranges.npy"))
start = time.perf_counter()
tree = Private_TreeBary(int(domain), int(branching), float(epsilon), protocol="local_hashing", on_all_levels=False)
tree.update_tree(data)
tree.compute_attributes()
tree.post_process()
seconds = time.perf_counter() - start
def quantile(q):
    try:
        return int(tree.get_quantile(q))
    except ValueError:  # its CDF never reaches q (min() of no index): the last leaf
        return int(domain) - 1
quantiles = [quantile(q) for q in (0.5, 0.9, 0.95, 0.99)]
# the peer's range (l, r) is the leaves l+1..r: ours [l, r) is asked as (l-1, r-1); l = 0 is cdf[r-1]
answers = [float(tree.cdf[r - 1] - (tree.cdf[l - 1] if l else 0.0)) for l, r in ranges]
json.dump({"seconds": seconds, "quantiles": quantiles, "ranges": answers}, open(out_path, "w"))
"""


def population(name: str, domain: int, n: int, rng: np.random.Generator) -> np.ndarray:
    "Bucket indices: log-normal latencies, a bimodal mixture, a point mass plus a uniform"
    if name == "lognormal":
        values = rng.lognormal(math.log(domain / 10), 0.7, n)
    elif name == "bimodal":
        values = np.where(rng.random(n) < 0.6, rng.normal(domain * 0.25, domain * 0.04, n),
                          rng.normal(domain * 0.7, domain * 0.1, n))
    else:
        values = np.where(rng.random(n) < 0.3, domain * 0.4 + 0.5, rng.uniform(0, domain, n))
    return np.clip(np.floor(values), 0, domain - 1).astype(np.int64)


def quantile_buckets(cdf_inclusive: np.ndarray, p: float) -> int:
    return int(np.searchsorted(cdf_inclusive, p - 1e-12))


def run_cell(args: argparse.Namespace, name: str, epsilon: float, n: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    d = args.domain
    data = population(name, d, n, rng)
    truth = np.cumsum(np.bincount(data, minlength=d)) / n  # inclusive: F at the top of each bucket
    lows = rng.integers(0, d, args.ranges)
    highs = rng.integers(0, d, args.ranges)
    ranges = np.stack([np.minimum(lows, highs), np.maximum(lows, highs) + 1], axis=1)
    true_ranges = np.array([truth[r - 1] - (truth[lo - 1] if lo else 0.0) for lo, r in ranges])
    true_q = [quantile_buckets(truth, p) for p in QUANTILES]

    params = parse_params({"range": [0, d], "buckets": d, "branching": args.branching}, epsilon)
    start = time.perf_counter()
    batches = simulate_batches(params, data, rng)
    randomized = time.perf_counter()
    aggregate = aggregate_batches(params, batches)
    estimate = estimate_quantiles(params, aggregate, quantiles=QUANTILES)
    ours_seconds = time.perf_counter() - randomized
    randomize_seconds = randomized - start
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # the process's peak so far (Linux: KiB)
    ours_ranges = np.array([estimate.cdf[r] - estimate.cdf[lo] for lo, r in ranges])
    ours_q = [max(math.ceil(row.estimate) - 1, 0) for row in estimate.quantiles]

    with tempfile.TemporaryDirectory() as folder:
        data_path = str(pathlib.Path(folder) / "data.npy")
        np.save(data_path, data)
        np.save(data_path.replace(".npy", "-ranges.npy"), ranges)
        out_path = str(pathlib.Path(folder) / "peer.json")
        subprocess.run([args.peer_python, "-c", PEER, data_path, out_path, str(d), str(args.branching),
                        str(epsilon), str(seed)], check=True)
        peer = json.loads(pathlib.Path(out_path).read_text())

    def figures(answers: np.ndarray, quantiles: list[int]) -> dict:
        return {"range_mse": float(np.mean((answers - true_ranges) ** 2)),
                "rank_error": float(np.mean([abs(truth[q] - p) for q, p in zip(quantiles, QUANTILES)])),
                "value_error": float(np.mean([abs(q - t) for q, t in zip(quantiles, true_q)]))}

    return {"population": name, "epsilon": epsilon, "n": n, "ours": figures(ours_ranges, ours_q),
            "peer": figures(np.array(peer["ranges"]), peer["quantiles"]), "ours_seconds": ours_seconds,
            "peer_seconds": peer["seconds"], "randomize_seconds": randomize_seconds, "peak_mib": peak_mib}


def prediction_ratio(args: argparse.Namespace, name: str, epsilon: float, n: int,
                     seed: int) -> tuple[float, float]:
    "Mean and standard error over ``args.prediction_runs`` runs of ours alone of range MSE / its exact variance"
    ratios = []
    for run in range(args.prediction_runs):
        rng = np.random.default_rng([seed, run])
        data = population(name, args.domain, n, rng)
        truth = np.cumsum(np.bincount(data, minlength=args.domain)) / n
        lows, highs = rng.integers(0, args.domain, args.ranges), rng.integers(0, args.domain, args.ranges)
        ranges = np.stack([np.minimum(lows, highs), np.maximum(lows, highs) + 1], axis=1)
        true_ranges = np.array([truth[r - 1] - (truth[lo - 1] if lo else 0.0) for lo, r in ranges])
        params = parse_params({"range": [0, args.domain], "buckets": args.domain, "branching": args.branching},
                              epsilon)
        aggregate = aggregate_batches(params, simulate_batches(params, data, rng))
        cdf = estimate_quantiles(params, aggregate, quantiles=QUANTILES).cdf
        mse = float(np.mean((np.array([cdf[r] - cdf[lo] for lo, r in ranges]) - true_ranges) ** 2))
        predicted = (average_range_variance(params, n) if args.f0_prediction
                     else exact_range_variance(params, aggregate, data, ranges))
        ratios.append(mse / predicted)
    spread = float(np.std(ratios, ddof=1)) / math.sqrt(len(ratios)) if len(ratios) > 1 else float("nan")
    return float(np.mean(ratios)), spread


def exact_range_variance(params, aggregate, data: np.ndarray, ranges: np.ndarray) -> float:  # type: ignore[no-untyped-def]
    "The average over ``ranges`` ([l, r) rows) of the consistent tree's exact variance at the true frequencies"
    padded = np.zeros(params.leaves)
    padded[: params.buckets] = np.bincount(data, minlength=params.buckets) / len(data)
    levels = [padded.reshape(params.level_size(level), -1).sum(axis=1) for level in range(1, params.height + 1)]
    _, precisions = consistent_tree(params, aggregate)
    queries = np.zeros((params.leaves, len(ranges)))
    for column, (low, high) in enumerate(ranges):
        queries[low:high, column] = 1
    weights = adjoint(queries, precisions, params.branching)
    covariance = level_covariance(params, aggregate, levels)
    total = 0.0
    for w, diagonal, f, size in zip(weights, covariance.diagonals, covariance.frequencies, covariance.sizes):
        if size:  # the diagonal of W' Sigma_l W without the k x k matrix
            total += float(np.sum(diagonal[:, None] * w * w) - np.sum((f @ w) ** 2) / size)
    return total / len(ranges)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--peer-python", required=True, help="the Python of the peer's virtual environment")
    parser.add_argument("--n", type=int, nargs="+", default=[20000])
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument("--population", nargs="+", default=["lognormal", "bimodal", "point"])
    parser.add_argument("--domain", type=int, default=1024)
    parser.add_argument("--branching", type=int, default=4)
    parser.add_argument("--ranges", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--f0-prediction", action="store_true", help="predict the MSE by the noise at f = 0")
    parser.add_argument("--prediction-runs", type=int, default=20, help="runs of ours averaged for MSE/predicted")
    args = parser.parse_args()
    print("population  eps      n | range MSE ours/peer  ours/predicted (mean+-SE) | rank err ours/peer | value err "
          "ours/peer | server time ours/peer (ours s, peer s) | randomize s, peak MiB")
    for name in args.population:
        for epsilon in args.epsilon:
            for n in args.n:
                cell = run_cell(args, name, epsilon, n, args.seed)
                predicted_mean, predicted_se = prediction_ratio(args, name, epsilon, n, args.seed)
                ours, peer = cell["ours"], cell["peer"]

                def ratio(key: str, ours: dict = ours, peer: dict = peer) -> str:
                    return f"{ours[key] / peer[key]:.3f}" if peer[key] else "n/a"

                print(f"{name:<10} {epsilon:4.1f} {n:>7} | {ratio('range_mse'):>19} "
                      f"{predicted_mean:>7.3f}+-{predicted_se:.3f} | {ratio('rank_error'):>18} | "
                      f"{ratio('value_error'):>19} | {cell['ours_seconds'] / cell['peer_seconds']:.4f} "
                      f"({cell['ours_seconds']:.2f} s, {cell['peer_seconds']:.1f} s) | "
                      f"{cell['randomize_seconds']:.2f} s, {cell['peak_mib']:.0f} MiB", flush=True)


if __name__ == "__main__":
    main()
