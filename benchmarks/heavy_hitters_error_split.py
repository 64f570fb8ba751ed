"""The found strings' errors in one coverage case, split against the exact expected table of the estimation group.

A found string's error (estimate - its frequency among all n devices) is the sum of

- **group sampling**: its frequency in the estimation group minus its frequency among all n devices;
- **collisions**: the decoder's estimate from the group's *expected* table (given the group's devices and the fixed
  public hash family: every report's distribution, no randomness) minus its frequency in the group;
- **randomizer noise**: the estimate from the actual table minus the one from the expected table.

Each is printed as a mean (bias) and a root mean square, beside the SE parts that should match them: the
sampling term, the measured collision variance (null keys) and the oracle's variance.  Also: the misses above and
below (bias shows on one side), and for PEM the correlation of a string's collision error in the estimation group
with the one at the last discovery level, which reports the same key of the whole string through the same family
(a string found for a lucky collision keeps it).  The datasets are ``heavy_hitters_coverage.py``'s.

    .venv/bin/python benchmarks/heavy_hitters_error_split.py --shape zipf0.8 --epsilon 1 --top 10 --datasets 800
"""

from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2_000_000)
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--shape", default="zipf0.8")
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--algorithm", default="auto", choices=["auto", "pem", "sfp"])
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from benchmarks.heavy_hitters_coverage import ALPHABET, DISTINCT, shapes
    from client_sdk.kinds.heavy_hitters import cell_count, encode_value, params_from_dict
    from client_sdk.kinds.heavy_hitters.encoding import olh_seeds, sketch_seeds
    from client_sdk.kinds.heavy_hitters.planning import oracle
    from estimators.kinds.heavy_hitters import estimate_heavy_hitters
    from estimators.kinds.heavy_hitters.aggregate import PemAggregate, SfpAggregate
    from estimators.kinds.heavy_hitters.pem import INTERFERERS, olh_estimates
    from estimators.kinds.heavy_hitters.result import null_keys, sketch_corrected
    from estimators.kinds.heavy_hitters.sfp import sketch_estimates
    from estimators.kinds.heavy_hitters.simulate import group_keys, olh_hash_into, prefix_keys, simulate_reports

    if args.shape not in shapes():
        parser.error(f"--shape must be one of {', '.join(shapes())}")
    rng = np.random.default_rng(args.seed)
    letters = rng.integers(0, len(ALPHABET), size=(int(DISTINCT * 1.2), 6))
    words = sorted({"".join(ALPHABET[i] for i in row) for row in letters})[:DISTINCT]
    weights = shapes()[args.shape]
    params = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "expected_reports": args.n,
                               "algorithm": args.algorithm}, args.epsilon)
    constants, pem = oracle(params), params.algorithm == "pem"
    symbols = [encode_value(params, word) for word in words]
    keys = group_keys(params, symbols)
    index = {word: i for i, word in enumerate(words)}
    last, estimation = params.estimation_group - 1, params.estimation_group
    if pem:
        family, g = np.array(olh_seeds(params.hash_count), dtype=np.uint64), constants.g
        cells = {group: olh_hash_into(family, keys[:, group].copy(), g) for group in (last, estimation)}
    else:
        family = np.array(sketch_seeds(params.sketch_depth), dtype=np.uint64)
        cells = {estimation: olh_hash_into(family, keys[:, estimation].copy(), params.sketch_width)}

    def expected_estimates(group: int, members: np.ndarray, reports: int, query: np.ndarray,
                           interferers: int, probes: np.ndarray | None = None) -> np.ndarray:
        "The decoder's estimates of ``query`` from the expected table of ``group`` given its devices ``members``"
        hashed = cells[group]
        rows = hashed.shape[0]
        if pem:  # E table[j, y] = N/H (1-p)/(g-1) + (p - (1-p)/(g-1)) sum_v m_v/H [h_j(v) = y]
            off = (1 - constants.p_star) / (g - 1)
            flat = (hashed + (np.arange(rows, dtype=np.uint64) * np.uint64(g))[:, None]).astype(np.int64)
            table = np.bincount(flat.ravel(), np.broadcast_to(members / rows, hashed.shape).ravel(), rows * g)
            table = off * reports / rows + (constants.p_star - off) * table
            return olh_estimates(table.reshape(rows, g), reports, query, constants, interferers, probes)
        # the sketch's expected transform: T[j, y] = (2p-1)/depth sum_v m_v [h_j(v) = y]
        width = params.sketch_width
        flat = (hashed + (np.arange(rows, dtype=np.uint64) * np.uint64(width))[:, None]).astype(np.int64)
        transform = np.bincount(flat.ravel(), np.broadcast_to(members, hashed.shape).ravel(),
                                rows * width).reshape(rows, -1) * constants.signal / rows
        query = np.concatenate([query, probes])
        columns = olh_hash_into(family, query, width)
        estimates = sketch_estimates(transform, reports, query, constants)
        return sketch_corrected(estimates, columns, len(query) - len(probes), width)

    rows = []
    for _ in range(args.datasets):
        order = rng.permutation(len(words))
        counts = np.zeros(len(words), np.int64)
        counts[order] = np.bincount(rng.choice(len(words), size=args.n, p=weights / weights.sum()),
                                    minlength=len(words))
        cells = simulate_reports(params, symbols, counts, rng, keys)
        owner = np.repeat(np.arange(len(words)), counts)
        group = cells // (cell_count(params) // params.groups)
        members = np.bincount(owner * params.groups + group, minlength=len(words) * params.groups)
        members = members.reshape(len(words), params.groups).astype(np.float64)
        aggregate = (PemAggregate if pem else SfpAggregate).from_cells(params, cells)
        estimate = estimate_heavy_hitters(params, aggregate, top_k=args.top)
        found = np.array([h.symbols for h in estimate.hitters], dtype=np.int64).reshape(len(estimate.hitters), -1)
        reports = int(aggregate.counts[estimation])
        expected = expected_estimates(estimation, members[:, estimation], reports, prefix_keys(found), len(found),
                                      null_keys())
        if pem:
            tested = np.array(estimate.tested, dtype=np.int64)
            at_last = expected_estimates(last, members[:, last], int(aggregate.counts[last]), prefix_keys(tested),
                                         INTERFERERS * args.top)
            position = {symbols: i for i, symbols in enumerate(estimate.tested)}
        for i, hitter in enumerate(estimate.hitters):
            if hitter.value not in index:
                continue
            s = index[hitter.value]
            truth, in_group = counts[s] / args.n, members[s, estimation] / reports
            clipped = min(1.0, max(0.0, hitter.frequency))
            sampling_variance = constants.variance(truth, reports, args.n) - constants.variance(truth, reports)
            collision_variance = hitter.standard_error**2 - constants.variance(clipped, reports, args.n)
            collision_last = (at_last[position[hitter.symbols]] - members[s, last] / aggregate.counts[last]
                              if pem else 0.0)
            rows.append((in_group - truth, expected[i] - in_group, hitter.frequency - expected[i],
                         hitter.standard_error, sampling_variance, collision_variance,
                         constants.variance(clipped, reports), collision_last))
    table = np.array(rows).reshape(-1, 8)
    sampling, collision, noise, error = table[:, 0], table[:, 1], table[:, 2], table[:, :3].sum(axis=1)
    z = error / table[:, 3]
    found_count = len(table)
    coverage = float(np.mean(np.abs(z) <= 1.96)) if found_count else float("nan")
    print(f"{args.shape} eps {args.epsilon:g} top-{args.top} {params.algorithm}, {args.datasets} datasets of n = "
          f"{args.n:,}: {found_count} found, coverage {coverage:.3f} (SE {np.sqrt(0.0475 / max(1, found_count)):.3f}"
          f"), misses above {int(np.sum(z > 1.96))}, below {int(np.sum(z < -1.96))}; "
          f"rms error/SE {np.sqrt(np.mean(z**2)):.3f}")
    for name, part, variance in (("sampling", sampling, table[:, 4]), ("collisions", collision, table[:, 5]),
                                 ("randomizer", noise, table[:, 6]), ("total", error, table[:, 3]**2)):
        print(f"  {name:10s} mean {part.mean():+.2e} (SE {part.std() / np.sqrt(found_count):.1e}), rms "
              f"{np.sqrt(np.mean(part**2)):.2e}; the SE's part: rms {np.sqrt(np.mean(variance)):.2e}")
    if pem and found_count > 2:
        print(f"  corr(collision error: estimation group, last discovery level) "
              f"{np.corrcoef(collision, table[:, 7])[0, 1]:.3f}")


if __name__ == "__main__":
    main()
