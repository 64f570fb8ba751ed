"""Frequency oracles: ldp-telemetry against pure-ldp and multi-freq-ldpy on the same data, in one run.

For every epsilon (1, 4), n (1e5, 1e6), d (64, 1024) and oracle (GRR, OUE, OLH), on Zipf(1.1) data over d values:

* perturbation time: our vectorised simulator for all n; the peers' per-user clients
* aggregation + estimation time: our ``aggregate`` + ``estimate_aggregate``; the peers' servers
* MSE over the theoretical variance of the unbiased estimator (mean over the domain)

The peers run in Python loops, so where they would take minutes they are timed on the first ``--peer-cap``
(perturbation) and ``--peer-olh-cap`` (OLH aggregation) users and the time is scaled linearly to n; such cells
are marked ``~``.  Their MSE is measured on the users they actually processed, against the theory for that n.
Finally the real SDK path (``client_sdk``, pure Python, OS CSPRNG) is timed per report at d = 1024.

OUE from the wire (``--wire`` for this table alone): ``estimators.estimate(spec, payloads)`` on the hex strings
devices send (every payload checked, then counted and de-biased) against multi-freq-ldpy's ``UE_Aggregator_MI``
on its clients' in-memory vectors, at n = 1e5 and 1e6, d = 1024, epsilon 1; the least CPU time of ``--repeat``
runs each (both are single-threaded).
The peer's n vectors are references to a pool of ``--peer-cap`` distinct ones from its client (1e6 distinct
float64 vectors of 1024 would be 8 GB); its aggregator sums them one by one, whatever they are.

    bash benchmarks/setup_peers.sh                 # once: peers in benchmarks/.venv-peers
    benchmarks/.venv-peers/bin/python benchmarks/peers.py [--quick] [--wire]
"""

from __future__ import annotations

import argparse
import math
import platform
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from client_sdk import load_spec, mechanism_from_spec
from estimators import aggregate, estimate_aggregate
from estimators.simulate import simulate

ORACLES = ("grr", "oue", "olh")  # the oracles all three libraries implement
OURS_ONLY = ("sue", "hadamard")
NUMERIC = ("laplace", "duchi", "piecewise", "hybrid")


@dataclass
class Row:
    library: str
    oracle: str
    epsilon: float
    n: int
    d: int
    perturb_s: float
    perturb_scaled: bool
    server_s: float
    server_scaled: bool
    mse_over_theory: float


def zipf_population(n: int, d: int, rng: np.random.Generator, exponent: float = 1.1) -> np.ndarray:
    weights = 1 / np.arange(1, d + 1) ** exponent
    return rng.choice(d, size=n, p=weights / weights.sum())


def theory(p: float, q: float, truth: np.ndarray, n: int) -> float:
    "Mean over the domain of the fixed-data variance of the unbiased estimator (Wang et al. 2017)"
    return float(np.mean(q * (1 - q) / (p - q) ** 2 + truth * (1 - p - q) / (p - q)) / n)


def timed(function: Callable[[], object]) -> tuple[float, object]:
    start = time.perf_counter()
    result = function()
    return time.perf_counter() - start, result


def ours(oracle: str, epsilon: float, values: np.ndarray, d: int, rng: np.random.Generator) -> Row:
    """Median time over the trials after one warm-up run; MSE averaged over trials (d * trials >= 4096 values,
    so the ratio's own Monte-Carlo error is about 2%)"""
    spec = load_spec({"name": "bench", "mechanism": oracle, "epsilon": epsilon, "domain": list(range(d))})
    truth = np.bincount(values, minlength=d) / len(values)
    trials = max(3, math.ceil(4096 / d))
    perturb_times, server_times, errors = [], [], []
    simulate(spec, values[:1000], rng)  # warm-up: imports, first allocations
    for _ in range(trials):
        perturb_s, batch = timed(lambda: simulate(spec, values, rng))
        server_s, result = timed(lambda batch=batch: estimate_aggregate(spec, aggregate(spec, batch)))
        perturb_times.append(perturb_s)
        server_times.append(server_s)
        errors.append(float(np.mean((result.estimates - truth) ** 2)))  # type: ignore[union-attr]
    m = mechanism_from_spec(spec)
    return Row("ldp-telemetry", oracle, epsilon, len(values), d, float(np.median(perturb_times)), False,
               float(np.median(server_times)), False, float(np.mean(errors)) / theory(m.p_star, m.q_star, truth,
                                                                                        len(values)))


def peer_parameters(oracle: str, epsilon: float, d: int) -> tuple[float, float, int]:
    e = math.exp(epsilon)
    if oracle == "grr":
        return e / (e + d - 1), 1 / (e + d - 1), d
    if oracle == "oue":
        return 0.5, 1 / (e + 1), 2
    g = int(round(e)) + 1
    return e / (e + g - 1), 1 / g, g


def run_pure_ldp(oracle: str, epsilon: float, values: np.ndarray, d: int, caps: tuple[int, int]) -> Row:
    from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
    from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
    from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer

    g = int(round(math.exp(epsilon))) + 1
    client, server = {
        "grr": lambda: (DEClient(epsilon, d), DEServer(epsilon, d)),
        "oue": lambda: (UEClient(epsilon, d, use_oue=True), UEServer(epsilon, d, use_oue=True)),
        "olh": lambda: (LHClient(epsilon, d, g=g, use_olh=True), LHServer(epsilon, d, g=g, use_olh=True)),
    }[oracle]()
    return _peer("pure-ldp", oracle, epsilon, values, d, caps,
                 perturb=lambda v: [client.privatise(int(x) + 1) for x in v],
                 serve=lambda reports: _pure_serve(server, reports, d))


def _pure_serve(server, reports, d: int) -> np.ndarray:
    for report in reports:
        server.aggregate(report)
    return np.asarray(server.estimate_all(range(1, d + 1))) / server.n


def run_multi_freq(oracle: str, epsilon: float, values: np.ndarray, d: int, caps: tuple[int, int]) -> Row:
    from multi_freq_ldpy.pure_frequency_oracles.GRR import GRR_Aggregator_MI, GRR_Client
    from multi_freq_ldpy.pure_frequency_oracles.LH import LH_Aggregator_MI, LH_Client
    from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client

    client, serve = {
        "grr": (lambda x: GRR_Client(x, d, epsilon), lambda r: GRR_Aggregator_MI(r, d, epsilon)),
        "oue": (lambda x: UE_Client(x, d, epsilon, True), lambda r: UE_Aggregator_MI(r, epsilon, True)),
        "olh": (lambda x: LH_Client(x, d, epsilon, True), lambda r: LH_Aggregator_MI(r, d, epsilon, True)),
    }[oracle]
    return _peer("multi-freq-ldpy", oracle, epsilon, values, d, caps,
                 perturb=lambda v: [client(int(x)) for x in v], serve=lambda reports: np.asarray(serve(reports)))


def _peer(library: str, oracle: str, epsilon: float, values: np.ndarray, d: int, caps: tuple[int, int],
          perturb: Callable, serve: Callable) -> Row:
    n = len(values)
    perturb_cap, server_cap = caps
    used = min(n, perturb_cap)
    perturb_s, reports = timed(lambda: perturb(values[:used]))
    if oracle == "olh":
        used_server = min(used, server_cap)
        reports = reports[:used_server]
    else:
        used_server = used
    server_s, estimates = timed(lambda: serve(reports))
    truth = np.bincount(values[:used_server], minlength=d) / used_server
    p, q, _ = peer_parameters(oracle, epsilon, d)
    mse = float(np.mean((estimates - truth) ** 2))
    return Row(library, oracle, epsilon, n, d, perturb_s * n / used, used < n, server_s * n / used_server,
               used_server < n, mse / theory(p, q, truth, used_server))


def sdk_timings(d: int = 1024, reports: int = 2000) -> list[tuple[str, float]]:
    "Milliseconds per ``perturb`` call on the device path, per mechanism"
    out = []
    for mechanism in ("grr", "sue", "oue", "olh", "hadamard"):
        randomizer = mechanism_from_spec({"name": "s", "mechanism": mechanism, "epsilon": 1.0,
                                          "domain": list(range(d))})
        elapsed, _ = timed(lambda randomizer=randomizer: [randomizer.perturb(i % d) for i in range(reports)])
        out.append((f"{mechanism} (d={d})", 1000 * elapsed / reports))
    for mechanism in ("laplace", "duchi", "piecewise", "hybrid"):
        randomizer = mechanism_from_spec({"name": "s", "mechanism": mechanism, "epsilon": 1.0, "range": [0, 5000]})
        elapsed, _ = timed(lambda randomizer=randomizer: [randomizer.perturb(i % 5000) for i in range(reports)])
        out.append((mechanism, 1000 * elapsed / reports))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="n = 1e5 only, d = 64 and 1024, eps = 1")
    parser.add_argument("--peer-cap", type=int, default=20_000, help="users the peers' clients perturb")
    parser.add_argument("--peer-olh-cap", type=int, default=5_000, help="reports the peers' OLH servers read")
    parser.add_argument("--no-peers", action="store_true", help="only ldp-telemetry")
    parser.add_argument("--wire", action="store_true", help="only the table of OUE estimation from the wire")
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell of the wire table (best is shown)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # pure-ldp warns about small n on every capped run
    epsilons = (1.0,) if args.quick else (1.0, 4.0)
    sizes = (100_000,) if args.quick else (100_000, 1_000_000)
    peers = []
    if not args.no_peers:
        try:
            import multi_freq_ldpy  # noqa: F401
            import pure_ldp  # noqa: F401

            peers = [run_pure_ldp, run_multi_freq]
        except ImportError:
            print("peers not installed (bash benchmarks/setup_peers.sh); timing ldp-telemetry alone\n")
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, Python {platform.python_version()}, "
          f"numpy {np.__version__}")
    if args.wire:
        print_wire(sizes if args.quick else (100_000, 1_000_000), args.peer_cap, args.repeat, bool(peers))
        return
    rows: list[Row] = []
    rng = np.random.default_rng(2026)
    for epsilon in epsilons:
        for n in sizes:
            for d in (64, 1024):
                values = zipf_population(n, d, rng)
                for oracle in ORACLES + OURS_ONLY:
                    rows.append(ours(oracle, epsilon, values, d, rng))
                    compared = peers if oracle in ORACLES else []
                    for peer in compared:
                        rows.append(peer(oracle, epsilon, values, d, (args.peer_cap, args.peer_olh_cap)))
                    print_rows(rows[-1 - len(compared):], header=len(rows) == 1 + len(compared))
    print_speedups(rows)
    print_means(epsilons, trials=200 if args.quick else 1000)
    print("\nSDK perturb, pure Python on the OS CSPRNG, ms per report:")
    for name, ms in sdk_timings():
        print(f"  {name:<16} {ms:8.4f}")
    print_wire(sizes, args.peer_cap, args.repeat, bool(peers))


def best_of(function: Callable[[], object], repeat: int) -> float:
    """Least CPU seconds (this process) over ``repeat`` runs: both sides are single-threaded, and CPU time stays
    meaningful when other jobs share the machine"""
    seconds = []
    for _ in range(max(1, repeat)):
        started = time.process_time()
        function()
        seconds.append(time.process_time() - started)
    return min(seconds)


def print_wire(sizes: tuple[int, ...], pool_size: int, repeat: int, with_peer: bool, d: int = 1024,
               epsilon: float = 1.0) -> None:
    "OUE: our estimate from wire payloads (hex) against multi-freq-ldpy's aggregator on in-memory vectors"
    from estimators import estimate

    spec = load_spec({"name": "wire", "mechanism": "oue", "epsilon": epsilon, "domain": list(range(d))})
    rng = np.random.default_rng(14)
    print(f"\nOUE from the wire, d = {d}, eps = {epsilon:g}: CPU seconds (best of {repeat}) and us per report")
    print(f"{'n':>10} {'ours: estimate(hex payloads)':>29} {'multi-freq-ldpy: aggregator':>29} {'peer / ours':>11}")
    pool = None
    if with_peer:
        from multi_freq_ldpy.pure_frequency_oracles.UE import UE_Aggregator_MI, UE_Client

        pool = [UE_Client(int(x), d, epsilon, True) for x in zipf_population(pool_size, d, rng)]
    for n in sizes:
        payloads = simulate(spec, zipf_population(n, d, rng), rng).to_payloads()
        estimate(spec, payloads[:1000])  # warm-up
        ours = best_of(lambda payloads=payloads: estimate(spec, payloads), repeat)
        del payloads
        peer_text, ratio_text = "-", "-"
        if pool is not None:
            reports = [pool[i % len(pool)] for i in range(n)]
            peer = best_of(lambda reports=reports: UE_Aggregator_MI(reports, epsilon, True), repeat)
            del reports
            peer_text, ratio_text = f"{peer:.3f} s {1e6 * peer / n:6.2f} us", f"{peer / ours:.1f}"
        print(f"{n:>10,} {f'{ours:.3f} s {1e6 * ours / n:6.2f} us':>29} {peer_text:>29} {ratio_text:>11}")


def print_means(epsilons: tuple[float, ...], trials: int, n: int = 100_000) -> None:
    "Means: MSE over the fixed-data variance formula, from ``trials`` simulated campaigns of n users"
    from client_sdk.mechanisms import NumericMechanism

    rng = np.random.default_rng(7)
    values = np.clip(rng.exponential(1200, n), 0, 5000)
    truth = values.mean()
    print(f"\nmeans, n = {n:,}, {trials} trials: MSE over the theoretical variance")
    print(f"{'mechanism':<10} {'eps':>4} {'sim+est ms':>11} {'MSE/theory':>10}")
    for epsilon in epsilons:
        for mechanism in NUMERIC:
            spec = load_spec({"name": "m", "mechanism": mechanism, "epsilon": epsilon, "range": [0, 5000]})
            randomizer = mechanism_from_spec(spec)
            assert isinstance(randomizer, NumericMechanism)
            t = 2 * values / 5000 - 1
            a, b, c = (randomizer.variance(x) for x in (-1.0, 0.0, 1.0))
            per_report = b + ((a + c) / 2 - b) * np.mean(t**2) + (c - a) / 2 * np.mean(t)
            expected = 2500**2 * per_report / n
            start = time.perf_counter()
            errors = [(estimate_aggregate(spec, aggregate(spec, simulate(spec, values, rng))).mean - truth) ** 2
                      for _ in range(trials)]
            elapsed = (time.perf_counter() - start) / trials
            print(f"{mechanism:<10} {epsilon:>4g} {1000 * elapsed:>11.2f} {np.mean(errors) / expected:>10.3f}")


def print_rows(rows: list[Row], header: bool) -> None:
    if header:
        print(f"\n{'library':<16} {'oracle':<8} {'eps':>4} {'n':>9} {'d':>5} {'perturb s':>11} "
              f"{'agg+est s':>11} {'MSE/theory':>10}")
    for r in rows:
        print(f"{r.library:<16} {r.oracle:<8} {r.epsilon:>4g} {r.n:>9,} {r.d:>5} "
              f"{('~' if r.perturb_scaled else '') + format(r.perturb_s, '.3f'):>11} "
              f"{('~' if r.server_scaled else '') + format(r.server_s, '.3f'):>11} {r.mse_over_theory:>10.3f}")


def print_speedups(rows: list[Row]) -> None:
    "Ours against the faster peer, per configuration"
    keyed: dict[tuple, dict[str, Row]] = {}
    for r in rows:
        keyed.setdefault((r.oracle, r.epsilon, r.n, r.d), {})[r.library] = r
    if not any(len(v) > 1 for v in keyed.values()):
        return
    print(f"\n{'oracle':<6} {'eps':>4} {'n':>9} {'d':>5} {'perturb x':>10} {'agg+est x':>10}   (faster peer / ours)")
    for (oracle, epsilon, n, d), by_library in keyed.items():
        mine = by_library["ldp-telemetry"]
        others = [r for name, r in by_library.items() if name != "ldp-telemetry"]
        if not others:
            continue
        perturb = min(r.perturb_s for r in others) / mine.perturb_s
        server = min(r.server_s for r in others) / mine.server_s
        print(f"{oracle:<6} {epsilon:>4g} {n:>9,} {d:>5} {perturb:>10.1f} {server:>10.1f}")


if __name__ == "__main__":
    main()
