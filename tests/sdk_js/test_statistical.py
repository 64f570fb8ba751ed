"""Statistical conformance of the JavaScript SDK: reports its randomizers make in Node (1e5 per case, CSPRNG) are
estimated by the Python estimators without bias and with nominal interval coverage, and an empirical privacy audit
(tests/audit.py) bounds each randomizer's output ratios by e^eps."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import client_sdk
from client_sdk.mechanisms.categorical import hadamard_sign_bit
from client_sdk.mechanisms.hashing import olh_hash, seed_from_hex
from estimators import aggregate, estimate
from estimators.rappor.counts import estimate_bloom_bits
from tests.audit import LN_K_EPSILONS, audit, exact_audit_specs, exact_violations, python_parameters
from tests.tolerances import k_sigma

N = 100_000
BATCHES = 50  # coverage: the reports split into this many estimates


def simulate(sdk_js: Path, jobs: list[dict]) -> list[list[Any]]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed")
    done = subprocess.run([node, "scripts/simulate.mjs"], cwd=sdk_js, input=json.dumps(jobs), capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


FREQUENCY_CASES = [
    {"name": "grr", "mechanism": "grr", "epsilon": 1.0, "domain": ["a", "b", "c", "d", "e"]},
    {"name": "sue", "mechanism": "sue", "epsilon": 1.5, "domain": list(range(8))},
    {"name": "oue", "mechanism": "oue", "epsilon": 1.0, "domain": list(range(16))},
    {"name": "olh", "mechanism": "olh", "epsilon": 2.0, "domain": list(range(30))},
    {"name": "hadamard", "mechanism": "hadamard", "epsilon": 1.0, "domain": list(range(20))},
]
MEAN_CASES = [
    {"name": "laplace", "mechanism": "laplace", "epsilon": 1.0, "range": [0, 100]},
    {"name": "duchi", "mechanism": "duchi", "epsilon": 1.0, "range": [0, 100]},
    {"name": "piecewise", "mechanism": "piecewise", "epsilon": 2.0, "range": [0, 100]},
    {"name": "hybrid", "mechanism": "hybrid", "epsilon": 3.0, "range": [0, 100]},
]


def _frequency_values(domain: list) -> list[tuple[Any, int]]:
    "A skewed distribution: value i gets a share proportional to (d - i), the last value none"
    d = len(domain)
    weights = [d - 1 - i for i in range(d)]
    counts = [N * w // sum(weights) for w in weights]
    counts[0] += N - sum(counts)
    return list(zip(domain, counts))


def _mean_values() -> list[tuple[float, int]]:
    return [(0.0, N // 4), (12.5, N // 4), (61.0, N // 4), (100.0, N - 3 * (N // 4))]


def _shuffled(payloads: list, seed: int) -> list:
    order = np.random.default_rng(seed).permutation(len(payloads))
    return [payloads[i] for i in order]


def test_js_reports_are_estimated_without_bias_and_with_nominal_coverage(sdk_js: Path) -> None:
    jobs = [{"spec": spec, "values": _frequency_values(spec["domain"])} for spec in FREQUENCY_CASES]
    jobs += [{"spec": spec, "values": _mean_values()} for spec in MEAN_CASES]
    results = simulate(sdk_js, jobs)
    comparisons = sum(len(spec["domain"]) for spec in FREQUENCY_CASES) + len(MEAN_CASES)
    k = max(4.0, k_sigma(comparisons))  # |z| <= 4, widened by Bonferroni so that a run fails wrongly w.p. 1e-4
    failures, covered, intervals = [], 0, 0
    for job, payloads in zip(jobs, results):
        spec = client_sdk.load_spec(job["spec"])
        assert len(payloads) == N
        payloads = _shuffled(payloads, seed=7)  # the batches must not follow the order of the true values
        if spec.domain is not None:
            truth = np.array([count / N for _, count in job["values"]])
            result = estimate(spec, payloads)
            z = (result.estimates - truth) / result.std_errors
            failures += [f"{spec.name}[{v}]: z = {zi:.2f}" for v, zi in zip(spec.domain, z) if abs(zi) > k]
            for batch in np.array_split(np.arange(N), BATCHES):
                part = estimate(spec, [payloads[i] for i in batch])
                covered += int(np.sum((part.ci_low <= truth) & (truth <= part.ci_high)))
                intervals += len(truth)
        else:
            truth_mean = sum(v * c for v, c in job["values"]) / N
            result = estimate(spec, payloads)
            z = (result.mean - truth_mean) / result.std_error
            if abs(z) > k:
                failures.append(f"{spec.name}: mean z = {z:.2f}")
            for batch in np.array_split(np.arange(N), BATCHES):
                part = estimate(spec, [payloads[i] for i in batch])
                covered += int(part.ci_low <= truth_mean <= part.ci_high)
                intervals += 1
    assert not failures, failures
    # nominal 95% coverage over all batches' intervals, within k binomial standard errors
    rate = covered / intervals
    assert abs(rate - 0.95) <= k_sigma() * math.sqrt(0.95 * 0.05 / intervals), (rate, intervals)


# -- the privacy audit ------------------------------------------------------------------------------------------
def _categorical_bins(spec: client_sdk.Spec, x: int, y: int) -> Callable[[Any], Any]:
    "Outputs binned by whether they support x and y (post-processing: the audit's bound still applies)"
    if spec.mechanism == "grr":
        return lambda p: p if p in (x, y) else -1
    if spec.mechanism in ("sue", "oue"):
        def bits(p: str) -> tuple[int, int]:
            value = int(p, 16) >> (4 * len(p) - spec.domain_size)
            return tuple((value >> (spec.domain_size - 1 - i)) & 1 for i in (x, y))  # type: ignore[return-value]
        return bits
    if spec.mechanism == "olh":
        g = client_sdk.mechanism_from_spec(spec).g  # type: ignore[attr-defined]

        def support(p: list) -> tuple[bool, bool]:
            a, b = seed_from_hex(p[0])
            return olh_hash(a, b, x, g) == p[1], olh_hash(a, b, y, g) == p[1]
        return support
    return lambda p: (p[1] == hadamard_sign_bit(x, p[0]), p[1] == hadamard_sign_bit(y, p[0]))


def _numeric_bins(spec: client_sdk.Spec) -> Callable[[Any], Any]:
    if spec.mechanism == "laplace":
        return lambda p: max(-8, min(8, p // 1024))
    if spec.mechanism == "piecewise":
        return lambda p: p // 4096
    if spec.mechanism == "hybrid":
        return lambda p: (p[0], p[1] // 4096)
    return lambda p: p


AUDIT_CASES = FREQUENCY_CASES + MEAN_CASES + [
    {"name": "rappor", "mechanism": "rappor", "rappor": {"k": 3, "m": 1, "f": 0.25, "p": 0.25, "q": 0.75,
                                                         "encoding": "basic"}, "candidates": ["x", "y", "z"]},
    {"name": "rappor-bloom", "mechanism": "rappor", "rappor": {"k": 8, "h": 2, "m": 1, "f": 0.5, "p": 0.25,
                                                               "q": 0.75}},
]
AUDIT_N = N // 2


def test_js_randomizers_pass_the_privacy_audit(sdk_js: Path) -> None:
    "For two inputs, no (binned) output is more likely under one than e^eps times under the other"
    jobs, inputs = [], []
    for data in AUDIT_CASES:
        spec = client_sdk.load_spec(data)
        if spec.domain is not None:
            pair: tuple[Any, Any] = (spec.domain[0], spec.domain[-1])
        elif spec.range is not None:
            pair = spec.range
        else:
            pair = ("x", "z") if spec.candidates else ("/home", "/about")
        inputs.append(pair)
        jobs.append({"spec": data, "values": [[pair[0], AUDIT_N], [pair[1], AUDIT_N]],
                     "freshDevices": spec.mechanism == "rappor"})
    results = simulate(sdk_js, jobs)
    violations = []
    for data, pair, payloads in zip(AUDIT_CASES, inputs, results):
        spec = client_sdk.load_spec(data)
        if spec.domain is not None:
            binned = _categorical_bins(spec, 0, len(spec.domain) - 1)
        elif spec.range is not None:
            binned = _numeric_bins(spec)
        else:
            binned = lambda p: p["bits"]  # noqa: E731 (m = 1: one cohort; the bits are the whole output)
        samples = {pair[0]: [binned(p) for p in payloads[:AUDIT_N]], pair[1]: [binned(p) for p in payloads[AUDIT_N:]]}
        violations += [f"{spec.name}: {v}" for v in audit(samples, spec.epsilon)]
        if spec.mechanism in ("grr", "oue", "duchi"):  # the audit has the power to catch a leak of 3x epsilon
            assert audit(samples, spec.epsilon / 3), spec.name
    assert not violations, violations[:10]


def test_js_randomizers_pass_the_exact_privacy_audit(sdk_js: Path) -> None:
    """At eps = float(ln k), k = 2..65, and on a grid: the JavaScript randomizers' quantized parameters give a
    worst-case ratio at most e^eps, proved with rationals, and are exactly the Python SDK's"""
    specs = exact_audit_specs(LN_K_EPSILONS + [i / 20 for i in range(1, 201)])
    done = subprocess.run([shutil.which("node") or "node", "scripts/mechanism-parameters.mjs"], cwd=sdk_js,
                          input=json.dumps(specs), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    violations, mismatches = [], []
    for data, js in zip(specs, json.loads(done.stdout), strict=True):
        violations += [f"{data}: {v}" for v in exact_violations(js["mechanism"], js["parameters"], js["epsilon"])]
        python = client_sdk.mechanism_from_spec(client_sdk.load_spec(data), rng=client_sdk.DeterministicRandom(1))
        expected = {key: Fraction(value) for key, value in python_parameters(python).items()}
        if {key: Fraction(value) for key, value in js["parameters"].items()} != expected:
            mismatches.append(data)
    assert violations == []
    assert mismatches == []


def test_js_rappor_reports_give_unbiased_bloom_bit_estimates(sdk_js: Path) -> None:
    "1e5 devices (a fresh secret each, so independent permanent responses): the de-biased bit frequencies hit the truth"
    data = {"name": "flags", "mechanism": "rappor", "rappor": {"k": 4, "m": 1, "f": 0.5, "p": 0.25, "q": 0.75,
                                                              "encoding": "basic"}, "candidates": ["w", "x", "y", "z"]}
    values = [("w", N // 2), ("x", 3 * N // 10), ("y", N - N // 2 - 3 * N // 10), ("z", 0)]
    (payloads,) = simulate(sdk_js, [{"spec": data, "values": values, "freshDevices": True}])
    spec = client_sdk.load_spec(data)
    bits = estimate_bloom_bits(spec.rappor, aggregate(spec, payloads).counts)
    truth = np.array([count / N for _, count in values])
    z = (bits.proportions[0] - truth) / bits.std_errors[0]
    assert np.all(np.abs(z) <= max(4.0, k_sigma(len(truth)))), z
