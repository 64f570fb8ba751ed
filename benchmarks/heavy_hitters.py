"""Heavy hitters over an unknown dictionary: ours (PEM / SFP, ``estimators.kinds.heavy_hitters``) against pure-ldp
1.2.0's PEM, SFP and TreeHist on the same data and epsilon, in one run.

The configuration of Cormode, Maddock, Maple (VLDB 2021, ``hh_aol``): alphabet a-z and ".", strings of 6
characters, Zipf(1.1) over 10,000 random strings; recall, precision and NCR of the true top-k, server and device
time per report (peer / ours for the server; ours also the JavaScript SDK's under Node, ``sdk-js/dist``, so
``npm run build`` first), the coverage of our intervals (at ``--coverage-n``), and our decode at n = 1e6 (in a
process of its own, whose peak RSS is printed).  The peer
runs in its own environment, ``benchmarks/.venv-peers`` (``benchmarks/setup_peers.sh``, pinned by
``benchmarks/requirements-peers.txt``: pure-ldp 1.2.0 imports scikit-learn and statsmodels without declaring them;
no source patch is needed once those are installed):

    bash benchmarks/setup_peers.sh
    .venv/bin/python benchmarks/heavy_hitters.py --n 1000000 --epsilons 3 --top 20 --peers sfp --timeout 600

Server time per report, the same work on both sides, from reports already made (device time is apart), in CPU
seconds of the process (``time.process_time``: on a shared machine a short burst's wall time is mostly waiting for
a core) except the collector's path, which waits on SQLite's writes (wall time):

* the peer: its server's ``aggregate`` of each privatised report + ``find_heavy_hitters`` (pure-ldp has no
  ingestion: its reports are Python objects, never parsed or checked); reports are privatised and aggregated in
  chunks, the decode also timed at each ``--checkpoints`` n, so its time at smaller n and the largest n it finishes
  within ``--timeout`` seconds follow from one run (``largest``);
* ours, the kind's work: ``add()`` of the JSON-decoded payloads (the vectorised check ``payload_cells`` and the
  count tables) + the decode, from the simulated device math (``simulate_reports``;
  tests/estimators/kinds/heavy_hitters/test_simulate.py compares it with ``make_report``);
* ours, the collector's path minus the network (``ours_post``): POST /v1/reports through the WSGI app, SQLite
  (JSON parse, each report's envelope, the payload check, duplicate ids, the writes) + GET /estimate.

Each peer algorithm runs in a subprocess of ``benchmarks/.venv-peers/bin/python`` (this file with ``--peer``).
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ALPHABET = "abcdefghijklmnopqrstuvwxyz."
ROOT = pathlib.Path(__file__).resolve().parents[1]
PEER_PYTHON = ROOT / "benchmarks" / ".venv-peers" / "bin" / "python"  # benchmarks/setup_peers.sh
PEER_CHUNK = 100_000  # reports the peer privatises, then aggregates, at a time
JS_DIST = ROOT / "sdk-js" / "dist" / "node.js"  # npm run build


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


def ours(data: list[str], epsilon: float, k: int, budget: float, rng: np.random.Generator,
         device_sample: int = 2000) -> dict:
    """Server time: ``add()`` of all n payloads as the collector receives them (JSON lists: the device math
    simulated, ``simulate_reports``) + the decode of that aggregate, the work the peer's ``aggregate`` of each report
    + ``find_heavy_hitters`` does; device time per report from ``make_report`` (OS CSPRNG) on a sample"""
    from client_sdk.kinds.heavy_hitters import encode_value, make_report, params_from_dict
    from client_sdk.randomness import SecureRandom
    from estimators.kinds.heavy_hitters import empty_aggregate, estimate_heavy_hitters
    from estimators.kinds.heavy_hitters.simulate import simulate_reports

    params = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "expected_reports": len(data)}, epsilon)
    device_rng = SecureRandom()
    sample = data[:device_sample]
    start = time.perf_counter()
    for word in sample:
        make_report(device_rng, params, word)
    device_seconds = (time.perf_counter() - start) / len(sample)
    values, counts = np.unique(np.array(data), return_counts=True)
    symbols = [encode_value(params, str(v)) for v in values]
    payloads = simulate_reports(params, symbols, counts, rng).tolist()
    start = time.process_time()
    aggregate = empty_aggregate(params).add(payloads)
    ingest_seconds = (time.process_time() - start) / len(data)
    start = time.process_time()
    estimate = estimate_heavy_hitters(params, aggregate, top_k=k, budget=budget)
    decode_seconds = time.process_time() - start
    label = f"{params.algorithm}(seg={params.segment_length or params.fragment_length}, budget={budget})"
    return {"name": f"ours {label}", "found": [h.value for h in estimate.hitters],
            "server_per_report": ingest_seconds + decode_seconds / len(data), "ingest_per_report": ingest_seconds,
            "decode_seconds": decode_seconds, "device_per_report": device_seconds,
            "threshold": estimate.detection_threshold, "load": os.getloadavg()[0]}


def ours_post(data: list[str], epsilon: float, rng: np.random.Generator, batch: int = 5000) -> dict:
    """The collector's path, minus the network: POST /v1/reports of all n reports (JSON bodies of ``batch``, the
    default MAX_BATCH_REPORTS) through the WSGI app in this process (body read, JSON parse, each report's envelope,
    the kind's payload check, duplicate ids, the SQLite writes of ids and count tables) + GET /estimate (the
    stored tables read and decoded).  Bodies are built (the device's side) outside the timed calls"""
    import uuid

    from client_sdk.kinds.heavy_hitters import encode_value
    from client_sdk.spec import load_spec
    from collector import create_app
    from collector.storage import open_storage
    from estimators.kinds.heavy_hitters.simulate import simulate_reports

    with tempfile.TemporaryDirectory() as folder:
        database = pathlib.Path(folder) / "collector.db"
        app = create_app({"DATABASE": str(database), "RATE_LIMIT": 0, "MAX_BATCH_REPORTS": batch})
        with open_storage(database) as storage:
            admin, _ = storage.create_key("admin", "2024-01-01")
            ingest, _ = storage.create_key("ingest", "2024-01-01")
        http = app.test_client()
        spec_json = {"name": "words", "kind": "heavy_hitters", "epsilon": epsilon, "max_length": 6,
                     "alphabet": ALPHABET, "expected_reports": len(data)}
        created = http.post("/v1/campaigns", json=spec_json, headers={"Authorization": f"Bearer {admin}"}).json
        spec = load_spec(created["spec"])
        values, counts = np.unique(np.array(data), return_counts=True)
        payloads = simulate_reports(spec.params, [encode_value(spec.params, str(v)) for v in values], counts, rng)
        headers = {"Authorization": f"Bearer {ingest}", "Content-Type": "application/json"}
        post_seconds, accepted = 0.0, 0
        for first in range(0, len(payloads), batch):
            body = json.dumps({"reports": [
                {"report_id": str(uuid.uuid4()), "campaign": spec.name, "fingerprint": spec.fingerprint,
                 "payload": payload} for payload in payloads[first:first + batch].tolist()]}).encode()
            start = time.perf_counter()
            answer = http.post("/v1/reports", data=body, headers=headers)
            post_seconds += time.perf_counter() - start
            accepted += answer.json["accepted"]
        start = time.perf_counter()
        estimate = http.get(f"/v1/campaigns/{spec.name}/estimate", headers={"Authorization": f"Bearer {admin}"})
        estimate_seconds = time.perf_counter() - start
    assert accepted == len(data) and estimate.status_code == 200, (accepted, estimate.status_code)
    return {"post_per_report": post_seconds / len(data), "estimate_seconds": estimate_seconds,
            "server_per_report": post_seconds / len(data) + estimate_seconds / len(data), "load": os.getloadavg()[0]}


def coverage(n: int, epsilon: float, k: int, repeats: int, rng: np.random.Generator) -> tuple[int, int]:
    """Over ``repeats`` datasets (Zipf(1.1) counts over one set of 10,000 strings) and decodes: the found strings of
    the data whose 95% interval holds the truth (``interval_coverage``, also run by
    tests/estimators/kinds/heavy_hitters/test_coverage.py)"""
    from client_sdk.kinds.heavy_hitters import params_from_dict
    from estimators.kinds.heavy_hitters.simulate import interval_coverage

    words = sorted(set(zipf_data(10_000, 10_000, 6, rng)))
    params = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "expected_reports": n}, epsilon)
    return interval_coverage(params, words, n, repeats, k, rng)


def large_decode(n: int, epsilon: float, k: int, rng: np.random.Generator) -> tuple[float, float, tuple]:
    "Decode seconds, the process's peak RSS (GiB) and (recall, precision, NCR) for n reports (simulated aggregate)"
    import resource

    from client_sdk.kinds.heavy_hitters import encode_value, params_from_dict
    from estimators.kinds.heavy_hitters import estimate_heavy_hitters, simulate_aggregate

    data = zipf_data(n, 10_000, 6, rng)
    params = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "expected_reports": n}, epsilon)
    values, counts = np.unique(np.array(data), return_counts=True)
    aggregate = simulate_aggregate(params, [encode_value(params, str(v)) for v in values], counts, rng)
    start = time.perf_counter()
    found = [h.value for h in estimate_heavy_hitters(params, aggregate, top_k=k).hitters]
    seconds = time.perf_counter() - start
    return seconds, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, scores(found, true_top(data, k))


def large_decode_child(n: int, k: int, seed: int) -> tuple[float, float, tuple]:
    "large_decode in a fresh process (its peak RSS is the decode's and the simulation's, not this run's)"
    command = [sys.executable, __file__, "--large-child", str(n), "--top", str(k), "--seed", str(seed)]
    done = subprocess.run(command, capture_output=True, text=True, check=True, env={**os.environ,
                                                                                   "OPENBLAS_NUM_THREADS": "2"})
    seconds, gib, found = json.loads(done.stdout.strip().splitlines()[-1])
    return seconds, gib, tuple(found)


def js_device(epsilon: float, n: int, words: list[str]) -> float:
    "The JavaScript SDK's seconds per report (sdk-js/dist, Node, crypto.getRandomValues) for the auto spec at n"
    from client_sdk.kinds.heavy_hitters import params_from_dict

    params = params_from_dict({"max_length": 6, "alphabet": ALPHABET, "expected_reports": n}, epsilon)
    spec = {"name": "words", "kind": "heavy_hitters", "epsilon": epsilon, "max_length": 6, "alphabet": ALPHABET,
            **{key: value for key, value in params.to_dict().items() if key not in ("alphabet", "max_length")}}
    script = (f"import {{ loadKind, loadSpec, mechanismFromSpec }} from {json.dumps(str(JS_DIST))};"
              "await loadKind('heavy_hitters'); const job = JSON.parse(process.argv[1]);"
              "const m = mechanismFromSpec(loadSpec(job.spec)); for (const w of job.words.slice(0, 200)) m.perturb(w);"
              "const t = process.hrtime.bigint(); for (const w of job.words) m.perturb(w);"
              "console.log(Number(process.hrtime.bigint() - t) / 1e9 / job.words.length);")
    done = subprocess.run(["node", "--input-type=module", "-e", script, json.dumps({"spec": spec, "words": words})],
                          capture_output=True, text=True, check=True)
    return float(done.stdout.strip().splitlines()[-1])


def peer_main(algorithm: str, path: str, epsilon: float, k: int, budget: float, checkpoints_at: list[int]) -> None:
    """In benchmarks/.venv-peers: pure-ldp's PEM, SFP or TreeHist on the strings in ``path``, JSON on stdout.

    Its server time is what its server does: ``aggregate`` of each privatised report and ``find_heavy_hitters``.
    Reports are privatised (client time, not server time) and aggregated in chunks; at each of ``checkpoints_at``
    and at the end the decode is timed, giving (n, aggregate seconds so far, decode seconds) rows.  Aggregation
    stops once it has taken ``budget`` seconds ("did not finish")."""
    from pure_ldp.core import generate_hash_funcs
    from pure_ldp.frequency_oracles.apple_cms import CMSClient, CMSServer
    from pure_ldp.heavy_hitters import PEMClient, PEMServer, SFPClient, SFPServer, TreeHistClient, TreeHistServer

    data = json.loads(pathlib.Path(path).read_text())
    letters = list(ALPHABET)

    def index_mapper(text: str) -> int:
        return sum((letters.index(c) + 1) * 28**i for i, c in enumerate(text))

    client_seconds = 0.0
    start = time.perf_counter()
    if algorithm == "pem":
        client = PEMClient(epsilon=epsilon, start_length=2, max_string_length=6, fragment_length=2,
                           alphabet=letters, index_mapper=index_mapper)
        server = PEMServer(epsilon=epsilon, start_length=2, max_string_length=6, fragment_length=2,
                           alphabet=letters, index_mapper=index_mapper)
    elif algorithm == "treehist":
        client = TreeHistClient(epsilon, 2, 6, alphabet=letters, index_mapper=index_mapper)
        server = TreeHistServer(epsilon, 6, 2, alphabet=letters, index_mapper=index_mapper)
    else:
        depth, width = 16, 1024
        client = SFPClient(epsilon, 2, 6, alphabet=letters, index_mapper=index_mapper,
                           fo_client=CMSClient(epsilon, generate_hash_funcs(depth, width), width, is_hadamard=True))
        server = SFPServer(epsilon, 2, 6, alphabet=set(letters), index_mapper=index_mapper,
                           fo_server=CMSServer(epsilon, depth, width, is_hadamard=True))
    client_seconds += time.perf_counter() - start
    aggregate_seconds, done, checkpoints = 0.0, 0, []
    marks = sorted(set(checkpoints_at) | {len(data)})
    while done < len(data) and aggregate_seconds < budget:
        chunk = data[done:min(done + PEER_CHUNK, next(m for m in marks if m > done))]
        start = time.perf_counter()
        reports = [client.privatise(word) for word in chunk]
        client_seconds += time.perf_counter() - start
        start = time.process_time()
        for report in reports:
            server.aggregate(report)
        aggregate_seconds += time.process_time() - start
        done += len(chunk)
        if done in marks:  # the decode at this n (pure-ldp re-estimates after more reports: it can go on)
            start = time.process_time()
            found, _ = server.find_heavy_hitters(k=k)
            checkpoints.append((done, aggregate_seconds, time.process_time() - start))
    if done < len(data):
        print(json.dumps({"name": f"pure-ldp {algorithm}", "found": None, "checkpoints": checkpoints,
                          "error": f"{done:,} reports aggregated in {aggregate_seconds:.0f} s"}))
        return
    n, aggregate_seconds, decode_seconds = checkpoints[-1]
    print(json.dumps({"name": f"pure-ldp {algorithm}", "found": [str(w).rstrip("*") for w in found],
                      "server_per_report": (aggregate_seconds + decode_seconds) / n, "checkpoints": checkpoints,
                      "device_per_report": client_seconds / n}))


def peer(algorithm: str, data: list[str], epsilon: float, k: int, timeout: float, checkpoints: list[int]) -> dict:
    "peer_main in the peers' environment; killed after 4 x ``timeout`` seconds of wall time (client time included)"
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "data.json"
        path.write_text(json.dumps(data))
        command = [str(PEER_PYTHON), __file__, "--peer", algorithm, str(path), "--epsilon", str(epsilon),
                   "--top", str(k), "--timeout", str(timeout), "--checkpoints", *map(str, checkpoints)]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=4 * timeout, check=True)
        except subprocess.TimeoutExpired:
            return {"name": f"pure-ldp {algorithm}", "found": None}
        except subprocess.CalledProcessError as failed:
            return {"name": f"pure-ldp {algorithm}", "found": None,
                    "error": failed.stderr.strip().splitlines()[-1:]}
    return {**json.loads(done.stdout.strip().splitlines()[-1]), "load": os.getloadavg()[0]}


def scores(found: list[str], truth: list[str]) -> tuple[float, float, float]:
    """Recall and precision of the true top-k, and NCR (Wang et al.: the i-th true string scores k - i + 1; the
    found ones' scores over the sum of all)"""
    hits = set(found[:len(truth)]) & set(truth)
    k = len(truth)
    ncr = sum(k - truth.index(word) for word in hits) / (k * (k + 1) / 2)
    return len(hits) / k, len(hits) / min(len(found), k) if found else 0.0, ncr


def ratio(ours_value: float, peer_value: float) -> float:
    return ours_value / peer_value if peer_value else float("inf")


def largest(peer_row: dict, timeout: float, n: int, mine: dict, post: dict) -> None:
    """The largest n the peer's server finishes within ``timeout`` s, from its checkpoints: its aggregation is
    linear in n (the same work per report) and its decode does not grow with n (a fixed set of fragment
    estimates), so server(n) = decode + n * aggregate per report; and the ratios there, ours taken as linear too"""
    points = peer_row["checkpoints"]
    per_report = points[-1][1] / points[-1][0]
    decode = max(point[2] for point in points)
    limit = (timeout - decode) / per_report
    peer_time = timeout / limit
    kind_time = mine["ingest_per_report"] + mine["decode_seconds"] / limit
    path_time = post["post_per_report"] + post["estimate_seconds"] / limit
    how = "measured" if limit <= n else f"projected from n <= {n:,}"
    print(f"largest n {peer_row['name']} finishes within {timeout:.0f} s ({how}): {limit:,.0f} (aggregate "
          f"{1e6 * per_report:.1f} us/report, decode {decode:.0f} s); there ours is {peer_time / kind_time:.0f}x "
          f"faster (the kind's work), {peer_time / path_time:.1f}x (the collector's path)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--epsilon", type=float, default=3.0, help=argparse.SUPPRESS)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[3.0, 1.0])
    parser.add_argument("--peers", nargs="*", default=["pem", "sfp", "treehist"])
    parser.add_argument("--coverage-repeats", type=int, default=16)
    parser.add_argument("--coverage-n", type=int, default=2_000_000)
    parser.add_argument("--coverage-top", type=int, default=50)
    parser.add_argument("--large", type=int, default=1_000_000, help="n of the decode time and memory (0: skip)")
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=600.0,
                        help="server seconds (aggregation) per peer algorithm before it counts as not finished")
    parser.add_argument("--checkpoints", type=int, nargs="*", default=[],
                        help="n at which the peer's decode is also timed (its server time at smaller n)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--peer", nargs=2, metavar=("ALGORITHM", "DATA"), help=argparse.SUPPRESS)
    parser.add_argument("--large-child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.large_child:
        sys.path.insert(0, str(ROOT))
        seconds, gib, found = large_decode(args.large_child, 3.0, args.top, np.random.default_rng(args.seed))
        print(json.dumps([seconds, gib, found]))
        return
    if args.peer:
        peer_main(args.peer[0], args.peer[1], args.epsilon, args.top, args.timeout, args.checkpoints)
        return
    sys.path.insert(0, str(ROOT))
    rng = np.random.default_rng(args.seed)
    print(f"load: {os.getloadavg()[0]:.1f} (1-minute average, 2 cores) at the start")
    if args.large:
        seconds, gib, (recall, precision, ncr) = large_decode_child(args.large, args.top, args.seed)
        print(f"n={args.large:,} epsilon=3 (ours only): decode {seconds:.1f} s, peak RSS of its process {gib:.2f} "
              f"GiB; recall {recall:.2f} precision {precision:.2f} NCR {ncr:.2f}")
    for epsilon in args.epsilons:
        data = zipf_data(args.n, 10_000, 6, rng)
        truth = true_top(data, args.top)
        mine = [ours(data, epsilon, args.top, budget, rng) for budget in (0.05, float(args.top))]
        rows = mine + [peer(algorithm, data, epsilon, args.top, args.timeout, args.checkpoints)
                        for algorithm in args.peers]
        print(f"n={args.n} epsilon={epsilon:g} top-{args.top}, Zipf(1.1) over 10,000 strings of 6 of a-z and '.'")
        for row in rows:
            if row["found"] is None:
                print(f"{row['name']:<36} did not finish within {args.timeout:.0f} s {row.get('error', '')}")
                continue
            recall, precision, ncr = scores(row["found"], truth)
            extra = f"  detection threshold {row['threshold']:.4f}" if "threshold" in row else ""
            print(f"{row['name']:<36} recall {recall:.2f}  precision {precision:.2f}  NCR {ncr:.2f}  server "
                  f"{1e6 * row['server_per_report']:.1f} us/report  device {1e6 * row['device_per_report']:.0f} "
                  f"us/report{extra}  (load {row['load']:.1f} after it)")
        post = ours_post(data, epsilon, rng)
        print(f"ours, the collector's path (POST /v1/reports through the WSGI app, SQLite; no network): "
              f"{1e6 * post['server_per_report']:.1f} us/report (POST {1e6 * post['post_per_report']:.1f} us + "
              f"GET /estimate {post['estimate_seconds']:.2f} s; load {post['load']:.1f} after it)")
        finished = [row for row in rows[len(mine):] if row["found"] is not None]
        if finished:
            fastest = min(finished, key=lambda row: row["server_per_report"])
            for row in finished:
                for n, aggregate_seconds, decode_seconds in row["checkpoints"]:
                    print(f"  {row['name']} at n={n:,}: aggregate {aggregate_seconds:.1f} s + decode "
                          f"{decode_seconds:.1f} s = {1e6 * (aggregate_seconds + decode_seconds) / n:.1f} us/report")
            print(f"server time per report, {fastest['name']} / ours at n={args.n:,}: "
                  f"{fastest['server_per_report'] / rows[0]['server_per_report']:.1f}x the kind's work (add() "
                  f"{1e6 * rows[0]['ingest_per_report']:.2f} us + decode {rows[0]['decode_seconds']:.2f} s), "
                  f"{fastest['server_per_report'] / post['server_per_report']:.1f}x the collector's path")
            largest(fastest, args.timeout, args.n, rows[0], post)
        if JS_DIST.exists():
            print(f"device, JavaScript SDK (Node): {1e6 * js_device(epsilon, args.n, data[:2000]):.0f} us/report")
        if not args.coverage_repeats:
            continue
        covered, total = coverage(args.coverage_n, epsilon, args.coverage_top, args.coverage_repeats, rng)
        print(f"coverage of the found strings' 95% intervals ({args.coverage_repeats} datasets of n = "
              f"{args.coverage_n:,}, top-{args.coverage_top}): {covered}/{total} = {covered / max(1, total):.3f}")
    print(f"load: {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
