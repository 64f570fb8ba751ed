"""A distributed quantiles campaign's estimate: the buckets' noisy Prio3 histogram (releases added up) read as a CDF.

Each device adds one to its clamped value's bucket (``client_sdk.kinds.quantiles.device.prio3_measurement``), so a
release is c_j = (the number of reports in bucket j) + e_j, where e_j is the sum of both aggregators' discrete
noise (every batch's, for a window of several), independent over the buckets, symmetric about 0, with the exact
pmf ``NoiseMode.noise_pmf`` and variance s2 = ``NoiseMode.variance()``.  The noise is calibrated, as a
distributed histogram's, to one device's whole contribution under replace-one (n public): its bucket -1, another
+1 (``estimators.distributed.release``, the same function the aggregators call).  Target: the devices that
reported (privacy noise only), as every distributed estimate's.

* CDF           F_k = (c_0 + ... + c_(k-1)) / n at the buckets+1 boundaries (unbiased), SE sqrt(k s2) / n
* pointwise     F_k +- q_k / n, q_k the ``confidence`` quantile of |e_0 + ... + e_(k-1)|: the exact pmf convolved
                k times for a bucket and a range (``range_frequency``), simulated from the exact pmf for the CDF
                (``NOISE_DRAWS`` draws of the whole noise vector from a fixed seed: the estimate is deterministic)
* band          simultaneous: F +- c SE, c the ``confidence`` quantile of max_k |partial sum_k| / sd_k over the
                same simulated noise vectors (the aggregators' noise itself, not a normal approximation)
* quantiles     ``estimate.invert_cdf`` of F; the interval inverts the pointwise intervals
                (``estimate.quantile_interval``, as a local campaign's)
* mean          the bucketed distribution's mean (bucket midpoints), SE from s2, normal interval
* trust_models  per quantile, the CDF's rank half-width at its boundary under local DP (this spec's range and
                buckets as a local quantiles campaign, default tree and oracle, at the same epsilon and n: the exact
                covariance at the estimated shares, ``planner.unit_cdf_covariance``), distributed DP (this noise) and
                central DP (a curator releasing the same bucket histogram: ``estimators.central.central_noise`` at
                the histogram's replace-one sensitivity), each with the value interval it gives (the estimated CDF
                inverted at p -+ the half-width)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from client_sdk.kinds.quantiles import QuantilesParams
from client_sdk.kinds.quantiles.params import parse_params
from estimators.central import central_noise, histogram_sensitivity
from estimators.distributed.accounting import convolve_power
from estimators.distributed.noise import NoiseMode, noise_halfwidth
from estimators.distributed.release import (
    INPUT_PRIVACY,
    INTEGRITY,
    DistributedQuestion,
    added_releases,
    guarantee,
    rejected_counts,
)
from estimators.errors import NoReports
from estimators.intervals import z_value

from .estimate import DEFAULT_QUANTILES, invert_cdf, quantile_interval
from .planner import unit_cdf_covariance

NOISE_DRAWS = 4000
MAX_DRAWN = 1 << 23  # noise values simulated at most (draws x buckets)
NOISE_SEED = 20261202  # fixed: the same releases always give the same band

__all__ = ["NOISE_DRAWS", "DistributedQuantiles", "estimate_releases", "simulated_noise"]


def simulated_noise(noise: NoiseMode, buckets: int, draws: int = NOISE_DRAWS) -> np.ndarray:
    "``draws`` x ``buckets`` independent draws of the release's noise from its exact pmf (fixed seed)"
    offsets, pmf = noise.noise_pmf()
    draws = max(200, min(draws, MAX_DRAWN // max(buckets, 1)))
    rng = np.random.default_rng(NOISE_SEED)
    return rng.choice(offsets, size=(draws, buckets), p=pmf)


class DistributedQuantiles:
    "The CDF of n reports from the noisy bucket counts (module docstring)"

    def __init__(self, params: QuantilesParams, counts: Sequence[int], n: int, noise: NoiseMode,
                 confidence: float = 0.95) -> None:
        if n <= 0:
            raise NoReports("this distributed quantiles campaign has no reports in this window")
        if len(counts) != params.buckets:
            raise ValueError(f"the release has {len(counts)} counts, the spec {params.buckets} buckets")
        self.params, self.n, self.noise, self.confidence = params, int(n), noise, float(confidence)
        self.counts = np.asarray(counts, dtype=float)
        self.variance = float(noise.variance())
        self.boundaries = np.asarray(params.boundaries)
        self.cdf = np.concatenate([[0.0], np.cumsum(self.counts)]) / self.n
        k = np.arange(params.buckets + 1)
        self.cdf_std_errors = np.sqrt(k * self.variance) / self.n
        partial = np.cumsum(simulated_noise(noise, params.buckets), axis=1)  # draws x buckets: e_0 + ... + e_k
        self.pointwise_half = np.concatenate([[0.0], np.quantile(np.abs(partial), confidence, axis=0)]) / self.n
        scaled = np.abs(partial) / np.sqrt(k[1:] * self.variance)
        self.band_critical = float(np.quantile(scaled.max(axis=1), confidence))
        self.draws = partial.shape[0]

    @property
    def frequencies(self) -> np.ndarray:
        return self.counts / self.n

    def range_frequency(self, first: int, stop: int) -> dict:
        "The share of values in buckets first..stop-1, SE and the exact-noise interval"
        if not 0 <= first < stop <= self.params.buckets:
            raise ValueError(f"a range of buckets needs 0 <= first < stop <= {self.params.buckets}")
        estimate = float(self.cdf[stop] - self.cdf[first])
        width = stop - first
        offsets, pmf = self.noise.noise_pmf()
        if width > 1:
            pmf = convolve_power(pmf, width)
            offsets = np.arange(len(pmf)) - (len(pmf) - 1) // 2
        half = float(noise_halfwidth(offsets, pmf / pmf.sum(), self.confidence)) / self.n
        return {"estimate": estimate, "std_error": math.sqrt(width * self.variance) / self.n,
                "ci_low": estimate - half, "ci_high": estimate + half}

    def quantile_rows(self, quantiles: Sequence[float]) -> list[dict]:
        low, high = self.cdf - self.pointwise_half, self.cdf + self.pointwise_half
        rows = []
        for p in quantiles:
            ci_low, ci_high = quantile_interval(self.boundaries, low, high, p)
            rows.append({"p": p, "estimate": invert_cdf(self.boundaries, self.cdf, p), "ci_low": ci_low,
                         "ci_high": ci_high})
        return rows

    def mean(self) -> dict:
        midpoints = (self.boundaries[:-1] + self.boundaries[1:]) / 2
        estimate = float(midpoints @ self.frequencies)
        se = math.sqrt(self.variance * float(midpoints @ midpoints)) / self.n
        half = z_value(self.confidence) * se
        return {"mean": estimate, "std_error": se, "ci_low": estimate - half, "ci_high": estimate + half}

    def trust_models(self, rows: Sequence[dict], delta: float | None) -> dict:
        "Local, distributed and central rank half-widths per quantile (module docstring)"
        params = self.params  # the local campaign over the same buckets, at its default tree and oracle
        local_source: dict[str, Any] = {"range": [params.low, params.high], "bucketing": params.bucketing}
        local_source.update({"growth": params.growth} if params.bucketing == "geometric"
                            else {"buckets": params.buckets})
        local_params = parse_params(local_source, params.epsilon)
        shares = np.clip(self.frequencies, 0.0, None)
        shares = shares / shares.sum() if shares.sum() > 0 else np.full(params.buckets, 1.0 / params.buckets)
        local_se = np.sqrt(np.clip(np.diag(unit_cdf_covariance(local_params, shares)), 0.0, None) / self.n)
        central = central_noise(histogram_sensitivity(self.n), params.epsilon, delta, self.confidence,
                                family=self.noise.mode)
        z = z_value(self.confidence)
        out = []
        for row in rows:
            # the boundary at or above the estimate, below the top one: at the top the CDF is 1 by construction
            # under local DP (half-width 0) but not in the noisy distributed release, so the models compare below it
            k = int(np.clip(np.searchsorted(self.boundaries, row["estimate"], side="left"), 1,
                            max(params.buckets - 1, 1)))
            halves = {"local": float(z * local_se[k]), "distributed": float(self.pointwise_half[k]),
                      "central": float(central["ci_halfwidth"]) * math.sqrt(k)}
            out.append({"p": row["p"], "boundary": float(self.boundaries[k]), **{
                model: {"rank_halfwidth": half,
                        "ci_low": invert_cdf(self.boundaries, self.cdf, max(row["p"] - half, 0.0)),
                        "ci_high": invert_cdf(self.boundaries, self.cdf, min(row["p"] + half, 1.0))}
                for model, half in halves.items()}})
        return {"relation": "replace-one", "target": "reported", "scale": "rank (the CDF at the quantile's boundary)",
                "local": {"mechanism": f"quantiles tree ({local_params.oracle}, branching {local_params.branching})",
                          "epsilon": params.epsilon, "delta": 0.0,
                          "assumption": "none: each device randomizes its own report"},
                "distributed": {"mechanism": self.noise.describe()["noise"], "assumption":
                                "the noise mode's (see noise.assumption); Prio3: the aggregators do not both collude"},
                "central": {"mechanism": central["mechanism"], "std_error_per_bucket": central["std_error"],
                            "epsilon": params.epsilon, "assumption": "a trusted curator sees every raw value"},
                "quantiles": out}

    def to_json(self, quantiles: Sequence[float] = DEFAULT_QUANTILES, delta: float | None = None) -> dict:
        low, high = self.cdf - self.pointwise_half, self.cdf + self.pointwise_half
        band = self.band_critical * self.cdf_std_errors
        rows = self.quantile_rows(quantiles)
        return {
            "kind": "quantiles", "trust": "distributed", "n": self.n, "confidence": self.confidence,
            "epsilon": self.params.epsilon, "params": self.params.to_dict(), "derived": self.params.derived(),
            "cdf": [{"boundary": float(b), "cdf": float(f), "std_error": float(se), "ci_low": float(lo),
                     "ci_high": float(hi), "band_low": float(f - w), "band_high": float(f + w)}
                    for b, f, se, lo, hi, w in zip(self.boundaries, self.cdf, self.cdf_std_errors, low, high, band)],
            "band": {"critical": self.band_critical, "draws": self.draws,
                     "method": "max-|z| over the boundaries, simulated from the aggregators' exact noise pmf"},
            "buckets": [float(f) for f in self.frequencies],
            "quantiles": rows,
            "quantile_interval": "the pointwise CDF intervals (exact noise) inverted",
            "values": [],
            **self.mean(),
            "histogram": [{"low": float(self.boundaries[i]), "high": float(self.boundaries[i + 1]),
                           **self.range_frequency(i, i + 1)} for i in range(self.params.buckets)],
            "trust_models": self.trust_models(rows, delta),
        }


def estimate_releases(spec: Any, releases: Sequence[Mapping[str, Any]], confidence: float = 0.95,
                      quantiles: Sequence[float] = DEFAULT_QUANTILES) -> dict:
    """The estimate over a window's releases of a distributed quantiles campaign (their counts and noises added);
    ReleaseMismatch (a ValueError) for a release that is not the spec's, NoReports for none with reports"""
    params: QuantilesParams = spec.params
    question = DistributedQuestion.of(spec)
    noises, noise, n, values = added_releases(question, releases, params.buckets)
    estimate = DistributedQuantiles(params, values, n, noise, confidence)
    result = estimate.to_json(quantiles, spec.delta)
    stated = noise.privacy(params.epsilon) if len(releases) == 1 else noises[0].privacy(params.epsilon)
    base = {"epsilon": stated[0], "delta": stated[1]}
    result["guarantee"] = guarantee(base, n, batches=len(releases))
    rejected = rejected_counts(releases)
    last = releases[-1]
    batches = [release.get("batch") for release in releases]
    result.update({"campaign": last.get("campaign", spec.name), "mechanism": "prio3", "prio3": "histogram",
                   "fingerprint": last.get("fingerprint") or question.fingerprint, "version": last.get("version"),
                   "batch": batches[0] if len(batches) == 1 else None, "batches": batches, "rejected": rejected,
                   "unit": spec.unit, "noise": {**noises[0].describe(), "batches": len(releases),
                                                "variance": noise.variance()},
                   "input_privacy": dict(zip(("holds", "assuming"), INPUT_PRIVACY)),
                   "integrity": dict(zip(("holds", "assuming"), INTEGRITY))})
    return result
