"""Heavy hitters over an unknown dictionary: ours (PEM / SFP, ``estimators.kinds.heavy_hitters``) against pure-ldp
1.2.0's PEMServer and SFPServer on the same data and epsilon, in one run.

The configuration of Cormode, Maddock, Maple (VLDB 2021, ``hh_aol``): alphabet a-z and ".", strings of 6
characters, Zipf(1.1) over 10,000 random strings; recall and precision of the true top-k and the server time,
printed as ratios ours / peer (time: peer / ours).  The peer runs in its own environment, ``.peer-venv`` (pure-ldp
1.2.0 does not import on a current install: it imports scikit-learn and statsmodels without declaring them and
fails with xxhash >= 3; no source patch is needed once those are pinned):

    python3 -m venv .peer-venv && .peer-venv/bin/pip install pure-ldp==1.2.0 "xxhash<3" "numpy<2.3" \\
        "scipy<1.15" "pandas<2.3" scikit-learn statsmodels
    .venv/bin/python benchmarks/heavy_hitters.py --n 20000 --epsilon 3 --top 20 --timeout 600

Each peer algorithm runs in a subprocess of ``.peer-venv/bin/python`` (this file with ``--peer``), killed after
``--timeout`` seconds of client + server time ("did not finish" is then printed).  Ours: the simulated reports of
the device math (``simulate_aggregate``; the device function is the same math, tests compare them).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
ROOT = pathlib.Path(__file__).resolve().parents[1]
PEER_PYTHON = ROOT / ".peer-venv" / "bin" / "python"


def zipf_data(n: int, distinct: int, length: int, rng: np.random.Generator, exponent: float = 1.1) -> list[str]:
    "n strings drawn from Zipf(exponent) over ``distinct`` random strings of ``length`` characters"
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < distinct:
        word = "".join(rng.choice(list(ALPHABET), length))
        if word not in seen:
            seen.add(word)
            words.append(word)
    weights = 1 / np.arange(1, distinct + 1) ** exponent
    return [words[i] for i in rng.choice(distinct, size=n, p=weights / weights.sum())]


def true_top(data: list[str], k: int) -> list[str]:
    values, counts = np.unique(np.array(data), return_counts=True)
    return [str(v) for v in values[np.argsort(-counts, kind="stable")][:k]]


def ours(data: list[str], epsilon: float, k: int, budget: float, rng: np.random.Generator) -> dict:
    from client_sdk.kinds.heavy_hitters import encode_value, params_from_dict
    from estimators.kinds.heavy_hitters import estimate_heavy_hitters, simulate_aggregate

    params = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "expected_reports": len(data)}, epsilon)
    values, counts = np.unique(np.array(data), return_counts=True)
    symbols = [encode_value(params, str(v)) for v in values]
    aggregate = simulate_aggregate(params, symbols, counts, rng)
    start = time.perf_counter()
    estimate = estimate_heavy_hitters(params, aggregate, top_k=k, budget=budget)
    seconds = time.perf_counter() - start
    label = f"{params.algorithm}(seg={params.segment_length or params.fragment_length}, budget={budget})"
    return {"name": f"ours {label}", "found": [h.value for h in estimate.hitters], "server_seconds": seconds,
            "threshold": estimate.detection_threshold}


def peer_main(algorithm: str, path: str, epsilon: float, k: int) -> None:
    "In .peer-venv: run pure-ldp's PEM or SFP on the strings in ``path`` and print JSON"
    from pure_ldp.core import generate_hash_funcs
    from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
    from pure_ldp.heavy_hitters import PEMClient, PEMServer, SFPClient, SFPServer

    data = json.loads(pathlib.Path(path).read_text())
    letters = list(ALPHABET)

    def index_mapper(text: str) -> int:
        return sum((letters.index(c) + 1) * 28**i for i, c in enumerate(text))

    start = time.perf_counter()
    if algorithm == "pem":
        client = PEMClient(epsilon=epsilon, start_length=2, max_string_length=6, fragment_length=2,
                           alphabet=letters, index_mapper=index_mapper)
        server = PEMServer(epsilon=epsilon, start_length=2, max_string_length=6, fragment_length=2,
                           alphabet=letters, index_mapper=index_mapper)
    else:
        depth, width = 16, 1024
        client = SFPClient(epsilon, 2, 6, alphabet=letters, index_mapper=index_mapper,
                           fo_client=CMSClient(epsilon, generate_hash_funcs(depth, width), width, is_hadamard=True))
        server = SFPServer(epsilon, 2, 6, alphabet=set(letters), index_mapper=index_mapper,
                           fo_server=CMSServer(epsilon, depth, width, is_hadamard=True))
    reports = [client.privatise(word) for word in data]
    client_seconds = time.perf_counter() - start
    start = time.perf_counter()
    for report in reports:
        server.aggregate(report)
    found, _ = server.find_heavy_hitters(k=k)
    print(json.dumps({"name": f"pure-ldp {algorithm}", "found": [str(w).rstrip("*") for w in found],
                      "server_seconds": time.perf_counter() - start, "client_seconds": client_seconds}))


def peer(algorithm: str, data: list[str], epsilon: float, k: int, timeout: float) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "data.json"
        path.write_text(json.dumps(data))
        command = [str(PEER_PYTHON), __file__, "--peer", algorithm, str(path), "--epsilon", str(epsilon),
                   "--top", str(k)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=True)
        except subprocess.TimeoutExpired:
            return {"name": f"pure-ldp {algorithm}", "found": None, "server_seconds": None}
        except subprocess.CalledProcessError as failed:
            return {"name": f"pure-ldp {algorithm}", "found": None, "server_seconds": None,
                    "error": failed.stderr.strip().splitlines()[-1:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def scores(found: list[str], truth: list[str]) -> tuple[float, float]:
    hits = len(set(found) & set(truth))
    return hits / len(truth), hits / len(found) if found else 0.0


def ratio(ours_value: float, peer_value: float) -> float:
    return ours_value / peer_value if peer_value else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--epsilon", type=float, default=3.0)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per peer algorithm")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--peer", nargs=2, metavar=("ALGORITHM", "DATA"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        peer_main(args.peer[0], args.peer[1], args.epsilon, args.top)
        return
    sys.path.insert(0, str(ROOT))
    rng = np.random.default_rng(args.seed)
    data = zipf_data(args.n, 10_000, 6, rng)
    truth = true_top(data, args.top)
    rows = [ours(data, args.epsilon, args.top, budget, rng) for budget in (0.05, float(args.top))]
    peers = [peer(algorithm, data, args.epsilon, args.top, args.timeout) for algorithm in ("pem", "sfp")]
    print(f"n={args.n} epsilon={args.epsilon} top-{args.top}, Zipf(1.1) over 10,000 strings of 6 of a-z.")
    for row in rows + peers:
        if row["found"] is None:
            print(f"{row['name']:<40} did not finish within {args.timeout:.0f} s {row.get('error', '')}")
            continue
        recall, precision = scores(row["found"], truth)
        row.update(recall=recall, precision=precision)
        extra = f"  detection threshold {row['threshold']:.4f}" if "threshold" in row else ""
        print(f"{row['name']:<40} recall {recall:.2f}  precision {precision:.2f}  "
              f"server {row['server_seconds']:.2f} s{extra}")
    for mine in rows:
        for other in peers:
            if other["found"] is None:
                continue
            print(f"{mine['name']} / {other['name']}: recall x{ratio(mine['recall'], other['recall']):.2f}, "
                  f"precision x{ratio(mine['precision'], other['precision']):.2f}, "
                  f"server time: peer / ours = {other['server_seconds'] / mine['server_seconds']:.1f}")


if __name__ == "__main__":
    main()
