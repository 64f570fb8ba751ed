"""Decode RAPPOR bit counts into candidate frequencies, with standard errors and a detection threshold.

The steps follow the reference decoder (``google/rappor`` ``analysis/R/decode.R``; EPK 2014 section 4) with the
fit the issue asks for:

1. De-bias the bit counts of every non-empty cohort (:func:`estimate_bloom_bits`).  ``y[j, i]`` estimates the
   fraction of cohort j's clients with Bloom bit i set; its standard error is ``sd[j, i]``.
2. Model ``E y = X pi``: ``X[(j, i), s] = 1`` when candidate s sets bit i in cohort j, ``pi`` the candidates'
   proportions.  Rows and columns are weighted by ``1/sd`` (weighted least squares).
3. When the candidates outnumber 80% of the rows (the reference's rule), a non-negative LASSO with penalty
   ``z * ||column||`` (z = 1, doubled until the support fits) picks the support.
4. Constrained least squares on that support: ``pi >= 0``, ``sum(pi) <= 1`` (:mod:`.solver`).
5. Standard errors: the larger of the weighted-least-squares standard error on the active set
   (``sqrt(diag((A_S^T A_S)^-1))``) and the spread of refits on resampled estimates ``y + sd * N(0, 1)`` (the
   reference's resampling, refitting on the active set).  Taking the larger keeps detection conservative.
6. A candidate is detected when ``pi > z * SE`` with ``z = Phi^-1(1 - alpha / M)`` (one-sided, Bonferroni over
   the M candidates).  Only detected candidates count towards the allocated mass.

Outputs per candidate: count (``pi * N``), its standard error, proportion, and a 95% CI from the unconstrained
weighted least squares on the same columns (:meth:`BloomFit.intervals`).  Also
epsilon_1, epsilon_inf and the detection frequency ``z * sqrt(p01 (1 - p01) / N) / (p11 - p01)`` (the
reference's ``ComputePrivacyGuarantees``).  With too little data (fewer than 10 reports per non-empty cohort on
average, or a detection frequency above 0.25) the result says so and lists nothing.

The boolean (k = 1) and basic (one bit per candidate) encodings need no regression: their de-biased bit
frequencies, summed over cohorts, are the estimates (unbiased, not clipped), with
``SE = sqrt(r (1 - r) / N) / (p11 - p01)`` at r clipped to [p01, p11], and the frequency oracles' interval
(``estimators.intervals``: the support count is Binomial(N, p01 + f (p11 - p01))): never inverted, never of zero
width, and it contains the estimate, which may leave [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

import numpy as np

from client_sdk.rappor import RapporParams
from client_sdk.spec import Spec

from ..errors import CandidatesRequired
from ..intervals import frequency_interval, support_std_errors
from .counts import check_counts, estimate_bloom_bits
from .design import CandidateMap
from .solver import LeastSquaresProblem, solve_nonnegative

if TYPE_CHECKING:  # scipy loads only when a decode runs, not with the estimators
    import scipy.sparse as sp

NORMAL = NormalDist()

DEFAULT_ALPHA = 0.05
DEFAULT_RESAMPLES = 20
LASSO_ROW_FRACTION = 0.8
LASSO_SCREEN_Z = 1.0
MIN_REPORTS_PER_COHORT = 10
MAX_DETECTION_FREQUENCY = 0.25
ANALYTIC_SE_MAX_SUPPORT = 4000
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class CandidateEstimate:
    "One candidate's fitted frequency; ``estimate`` and ``std_error`` are counts, the rest proportions"

    string: str
    estimate: float
    std_error: float
    proportion: float
    proportion_std_error: float
    ci_low: float
    ci_high: float
    detected: bool

    def to_dict(self) -> dict:
        return {
            "string": self.string,
            "estimate": self.estimate,
            "std_error": _finite(self.std_error),
            "proportion": self.proportion,
            "prop_std_error": _finite(self.proportion_std_error),
            "prop_low_95": self.ci_low,
            "prop_high_95": self.ci_high,
            "detected": self.detected,
        }


REFERENCE_COLUMNS = (
    "string",
    "estimate",
    "std_error",
    "proportion",
    "prop_std_error",
    "prop_low_95",
    "prop_high_95",
)


@dataclass(frozen=True)
class RapporResult:
    "The decoded distribution: every candidate's estimate, which were detected, and the run's summary"

    status: str  # "ok" or "insufficient_data"
    message: str
    params: RapporParams
    reports: int
    candidates: int
    estimates: tuple[CandidateEstimate, ...] = ()
    alpha: float = DEFAULT_ALPHA
    confidence: float = DEFAULT_CONFIDENCE
    detection_z: float = math.nan
    detection_frequency: float = math.nan
    lasso_used: bool = False
    resamples: int = 0
    extra: dict = field(default_factory=dict)
    campaign: str | None = None  # the spec's name, when decoded for a campaign (estimate_rappor)

    @property
    def detected(self) -> tuple[CandidateEstimate, ...]:
        "The candidates that cleared the detection threshold, largest first"
        return tuple(e for e in self.estimates if e.detected)

    @property
    def allocated_mass(self) -> float:
        "Sum of the detected proportions"
        return float(sum(e.proportion for e in self.detected))

    @property
    def epsilon_one(self) -> float:
        return self.params.epsilon_one

    @property
    def epsilon_inf(self) -> float:
        return self.params.epsilon_inf

    def proportions(self) -> dict[str, float]:
        "Detected candidates' proportions by string (undetected ones are absent, i.e. 0)"
        return {e.string: e.proportion for e in self.detected}

    def rows(self) -> list[dict]:
        "The detected candidates in the reference decoder's column order"
        return [{column: e.to_dict()[column] for column in REFERENCE_COLUMNS} for e in self.detected]

    def to_dict(self) -> dict:
        "Plain JSON (infinite values become null); ``estimates`` lists the detected candidates only"
        return {
            "status": self.status,
            "message": self.message,
            "mechanism": "rappor",
            "params": {**self.params.to_dict(), "encoding": self.params.encoding},
            "reports": self.reports,
            "candidates": self.candidates,
            "detected_count": len(self.detected),
            "allocated_mass": self.allocated_mass,
            "epsilon_one": _finite(self.epsilon_one),
            "epsilon_inf": _finite(self.epsilon_inf),
            "detection_frequency": _finite(self.detection_frequency),
            "alpha": self.alpha,
            "confidence": self.confidence,
            "detection_z": _finite(self.detection_z),
            "lasso_used": self.lasso_used,
            "resamples": self.resamples,
            **self.extra,
            "estimates": [e.to_dict() for e in self.detected],
        }


    def to_json(self) -> dict:
        """The estimate in the shape every kind shares (estimators/report/report.schema.json): ``kind``,
        ``campaign``, ``n`` and ``values`` rows whose ``estimate`` is the detected candidate's proportion (its
        count and the count's standard error kept beside); the decoder's summary members as in :meth:`to_dict`"""
        summary = self.to_dict()
        del summary["estimates"]  # the reference decoder's rows: ``values`` below instead
        return {"kind": "rappor", "campaign": self.campaign, "n": self.reports, **summary, "values": [
            {"value": e.string, "estimate": e.proportion, "std_error": _finite(e.proportion_std_error),
             "ci_low": e.ci_low, "ci_high": e.ci_high, "count": e.estimate, "count_std_error": _finite(e.std_error),
             "detected": e.detected} for e in self.detected]}


def decode_rappor(
    params: RapporParams | Spec,
    counts: np.ndarray,
    candidates: Sequence[str] | CandidateMap | None = None,
    *,
    alpha: float = DEFAULT_ALPHA,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int | np.random.Generator | None = 0,
    min_reports_per_cohort: float = MIN_REPORTS_PER_COHORT,
    max_detection_frequency: float = MAX_DETECTION_FREQUENCY,
) -> RapporResult:
    """Decode per-cohort counts (m, k+1) against candidate strings (or a :class:`CandidateMap`).

    ``params`` may be a Spec, whose candidates are used when ``candidates`` is None.  ``alpha`` is the
    family-wise false-detection rate, ``confidence`` the level of the intervals (the reference's columns keep
    their ``_95`` names).  ``seed`` drives the resampling only (a fixed default keeps decoding reproducible)."""
    if isinstance(params, Spec):
        candidates = params.candidates if candidates is None else candidates
    settings = params.rappor if isinstance(params, Spec) else params
    if settings is None:
        raise ValueError("the spec has no RAPPOR parameters")
    if not 0 < alpha < 1:
        raise ValueError("alpha must lie in (0, 1)")
    if not 0 < confidence < 1:
        raise ValueError("confidence must lie in (0, 1)")
    if resamples < 0:
        raise ValueError("resamples must be >= 0")
    counts = check_counts(settings, counts)
    options: dict[str, Any] = {
        "alpha": alpha,
        "ci_z": NORMAL.inv_cdf(0.5 + confidence / 2),
        "min_reports_per_cohort": min_reports_per_cohort,
        "max_detection_frequency": max_detection_frequency,
    }
    if settings.encoding == "boolean":
        return _decode_direct(settings, counts, ("TRUE",), boolean=True, **options)
    if candidates is None:
        raise CandidatesRequired(f"the {settings.encoding} encoding needs candidates to decode")
    if settings.encoding == "basic":
        if isinstance(candidates, CandidateMap) or len(candidates) != settings.k:
            raise ValueError("the basic encoding needs exactly k candidate strings, in bit order")
        return _decode_direct(settings, counts, tuple(candidates), boolean=False, **options)
    candidate_map = (
        candidates
        if isinstance(candidates, CandidateMap)
        else CandidateMap.from_candidates(settings, candidates)
    )
    made_for = candidate_map.params
    if (made_for.k, made_for.h, made_for.m) != (settings.k, settings.h, settings.m):
        raise ValueError("the candidate map was made for other k, h, m")
    return _decode_bloom(
        settings, counts, candidate_map, resamples=resamples, rng=np.random.default_rng(seed), **options
    )


def detection_frequency(params: RapporParams, reports: int, z: float) -> float:
    "The reference's detection frequency: z * sqrt(p01 (1 - p01) / N) / (p11 - p01)"
    if reports <= 0:
        return math.inf
    return z * math.sqrt(params.p01 * (1 - params.p01) / reports) / (params.p11 - params.p01)


def _bonferroni_z(alpha: float, tests: int) -> float:
    return NORMAL.inv_cdf(1 - alpha / max(tests, 1))


def _insufficient(
    params: RapporParams, counts: np.ndarray, frequency: float, per_cohort: float | None, max_frequency: float
) -> str | None:
    "Why the data is too thin to decode, or None"
    reports = int(counts[:, 0].sum())
    if reports == 0:
        return "no reports"
    if per_cohort is not None:
        nonempty = int(np.count_nonzero(counts[:, 0]))
        if reports / nonempty < per_cohort:
            return (
                f"too little data: {reports / nonempty:.1f} reports per non-empty cohort on average, "
                f"at least {per_cohort:g} are needed"
            )
    if frequency > max_frequency:
        return (
            f"too little data: only candidates above {frequency:.3f} of the reports could be detected "
            f"(limit {max_frequency:g})"
        )
    return None


def _decode_direct(
    params: RapporParams,
    counts: np.ndarray,
    names: tuple[str, ...],
    *,
    boolean: bool,
    alpha: float,
    ci_z: float,
    min_reports_per_cohort: float,
    max_detection_frequency: float,
) -> RapporResult:
    "Boolean and basic RAPPOR: each bit is one candidate, so the de-biased bit frequency is the estimate"
    reports = int(counts[:, 0].sum())
    z = NORMAL.inv_cdf(1 - alpha) if boolean else _bonferroni_z(alpha, len(names))
    frequency = detection_frequency(params, reports, z)
    common: dict[str, Any] = {
        "params": params,
        "reports": reports,
        "candidates": 2 if boolean else len(names),
        "alpha": alpha,
        "confidence": _confidence(ci_z),
        "detection_z": z,
        "detection_frequency": frequency,
    }
    reason = _insufficient(params, counts, frequency, None, max_detection_frequency)
    if reason:
        return RapporResult("insufficient_data", reason, **common)
    spread = params.p11 - params.p01
    supports = counts[:, 1:].sum(axis=0)
    rate = supports / reports
    proportion = (rate - params.p01) / spread
    std_error = support_std_errors(rate, reports, params.p11, params.p01)
    low, high = frequency_interval(supports, reports, params.p11, params.p01, _confidence(ci_z))
    if boolean:
        estimates = [
            _estimate("TRUE", float(proportion[0]), float(std_error[0]), reports, True, (low[0], high[0])),
            _estimate("FALSE", 1 - float(proportion[0]), float(std_error[0]), reports, True,
                      (1 - high[0], 1 - low[0])),
        ]
    else:
        estimates = [
            _estimate(name, float(p), float(se), reports, bool(p > 0 and p > z * se), (lo, hi))
            for name, p, se, lo, hi in zip(names, proportion, std_error, low, high)
        ]
    estimates.sort(key=lambda e: -e.proportion)
    return RapporResult("ok", "", estimates=tuple(estimates), **common)


def _confidence(ci_z: float) -> float:
    return 2 * NORMAL.cdf(ci_z) - 1


def _clipped_normal(
    proportions: np.ndarray, std_errors: np.ndarray, ci_z: float
) -> tuple[np.ndarray, np.ndarray]:
    "proportion +- z SE clipped to [0, 1]; [0, 1] for an infinite SE"
    with np.errstate(invalid="ignore"):
        low = np.clip(proportions - ci_z * std_errors, 0.0, 1.0)
        high = np.clip(proportions + ci_z * std_errors, 0.0, 1.0)
    unknown = ~np.isfinite(std_errors)
    return np.where(unknown, 0.0, low), np.where(unknown, 1.0, high)


def _estimate(
    name: str, proportion: float, std_error: float, reports: int, detected: bool, interval: tuple[float, float]
) -> CandidateEstimate:
    low, high = (float(end) for end in interval)
    return CandidateEstimate(
        name, proportion * reports, std_error * reports, proportion, std_error, low, high, detected
    )


def _decode_bloom(
    params: RapporParams,
    counts: np.ndarray,
    candidate_map: CandidateMap,
    *,
    alpha: float,
    ci_z: float,
    resamples: int,
    rng: np.random.Generator,
    min_reports_per_cohort: float,
    max_detection_frequency: float,
) -> RapporResult:
    reports = int(counts[:, 0].sum())
    total_candidates = len(candidate_map)
    z = _bonferroni_z(alpha, total_candidates)
    frequency = detection_frequency(params, reports, z)
    common: dict[str, Any] = {
        "params": params,
        "reports": reports,
        "candidates": total_candidates,
        "alpha": alpha,
        "confidence": _confidence(ci_z),
        "detection_z": z,
        "detection_frequency": frequency,
    }
    reason = _insufficient(params, counts, frequency, min_reports_per_cohort, max_detection_frequency)
    if reason or total_candidates == 0:
        return RapporResult("insufficient_data" if reason else "ok", reason or "no candidates", **common)

    design, target = _weighted_system(params, counts, candidate_map)
    fit = _fit_candidates(design, target, resamples, rng)
    proportions, std_errors = fit.proportions, fit.std_errors
    detected = (proportions > 0) & (proportions > z * std_errors)
    low, high = fit.intervals(ci_z)
    estimates = [
        _estimate(
            candidate_map.candidates[s],
            float(proportions[s]),
            float(std_errors[s]),
            reports,
            bool(detected[s]),
            (low[s], high[s]),
        )
        for s in np.argsort(-proportions, kind="stable")
    ]
    return RapporResult(
        "ok",
        "",
        estimates=tuple(estimates),
        lasso_used=fit.lasso_used,
        resamples=resamples,
        extra={"selected_candidates": fit.selected, "interval_method": fit.interval_method},
        **common,
    )


@dataclass(frozen=True)
class BloomFit:
    """The constrained fit, plus the unconstrained weighted least squares on the same columns for the intervals.

    ``unconstrained`` and ``unconstrained_std_errors`` are NaN for the columns without one (outside the LASSO's
    selection, or more columns than ``ANALYTIC_SE_MAX_SUPPORT``)."""

    proportions: np.ndarray
    std_errors: np.ndarray
    unconstrained: np.ndarray
    unconstrained_std_errors: np.ndarray
    lasso_used: bool
    selected: int

    @property
    def interval_method(self) -> str:
        return "unconstrained_wls" if np.any(np.isfinite(self.unconstrained)) else "clipped_normal"

    def intervals(self, ci_z: float) -> tuple[np.ndarray, np.ndarray]:
        """Per candidate: the unconstrained WLS interval ``u +- z SE_u`` (unbiased under the model, so it holds its
        level wherever the truth is), intersected with [0, 1] and widened to contain the constrained estimate.

        The constrained fit's own ``+- z SE`` is biased where many candidates sit at 0: their noise, cut at 0,
        moves mass off the present candidates sharing their bits (coverage 0.84 at a 0.95 level with 25 absent
        candidates of 30).  A column without an unconstrained fit keeps the clipped normal interval."""
        with np.errstate(invalid="ignore"):
            low = np.clip(self.unconstrained - ci_z * self.unconstrained_std_errors, 0.0, 1.0)
            high = np.clip(self.unconstrained + ci_z * self.unconstrained_std_errors, 0.0, 1.0)
        fallback = ~np.isfinite(self.unconstrained)
        clipped_low, clipped_high = _clipped_normal(self.proportions, self.std_errors, ci_z)
        low = np.where(fallback, clipped_low, low)
        high = np.where(fallback, clipped_high, high)
        return np.minimum(low, self.proportions), np.maximum(high, self.proportions)


def _fit_candidates(
    design: sp.csc_matrix, target: np.ndarray, resamples: int, rng: np.random.Generator
) -> BloomFit:
    "Every column's proportion and standard error, the unconstrained fit, whether the LASSO ran, columns kept"
    rows, columns = design.shape
    column_norms = np.sqrt(np.asarray(design.multiply(design).sum(axis=0)).ravel())
    lasso_used = columns > LASSO_ROW_FRACTION * rows
    selected = np.flatnonzero(column_norms > 0)
    if lasso_used:
        limit = int(LASSO_ROW_FRACTION * rows)
        selected = selected[_lasso_support(design[:, selected], target, column_norms[selected], limit)]
    proportions = np.zeros(columns)
    # a column outside the fit gets the standard error it would have alone
    std_errors = np.where(column_norms > 0, 1.0 / np.maximum(column_norms, 1e-300), np.inf)
    if len(selected):
        fitted = solve_nonnegative(LeastSquaresProblem(design[:, selected], target))
        proportions[selected] = fitted
        support = selected[fitted > 0]
        if len(support):
            std_errors[support] = _support_std_errors(
                design[:, support], target, proportions[support], resamples, rng
            )
    unconstrained = np.full(columns, np.nan)
    unconstrained_std_errors = np.full(columns, np.nan)
    if 0 < len(selected) <= ANALYTIC_SE_MAX_SUPPORT:
        unconstrained[selected], unconstrained_std_errors[selected] = _unconstrained_fit(design[:, selected], target)
    return BloomFit(proportions, std_errors, unconstrained, unconstrained_std_errors, lasso_used, len(selected))


def _weighted_system(
    params: RapporParams, counts: np.ndarray, candidate_map: CandidateMap
) -> tuple[sp.csc_matrix, np.ndarray]:
    "A = diag(1/sd) X and b = y/sd over the rows of the non-empty cohorts"
    # imported here: scipy.sparse costs 0.3 s of import (230 modules), only for a decoder's sparse system
    import scipy.sparse as sp  # here, not at import: the estimators load without scipy

    bits = estimate_bloom_bits(params, counts)
    cohorts = np.flatnonzero(bits.nonempty)
    rows = (cohorts[:, None] * params.k + np.arange(params.k)[None, :]).ravel()
    inverse_sd = 1.0 / bits.std_errors[cohorts].ravel()
    design = sp.csc_matrix(sp.diags(inverse_sd) @ candidate_map.matrix(rows))
    return design, bits.proportions[cohorts].ravel() * inverse_sd


def _lasso_support(
    design: sp.csc_matrix, target: np.ndarray, column_norms: np.ndarray, limit: int
) -> np.ndarray:
    "Columns a non-negative LASSO keeps; the penalty z*||a_s|| lets a null column in w.p. about Phi(-z)"
    problem = LeastSquaresProblem(design, target)
    screen_z = LASSO_SCREEN_Z
    solution: np.ndarray | None = None
    chosen = np.arange(0)
    for _ in range(8):
        solution = solve_nonnegative(
            problem, penalty=screen_z * column_norms, start=solution, tolerance=1e-8, max_iterations=3000
        )
        chosen = np.flatnonzero(solution > 0)
        if len(chosen) <= limit:
            return chosen
        screen_z *= 2
    assert solution is not None
    return chosen[np.argsort(-solution[chosen], kind="stable")[:limit]]


def _support_std_errors(
    design: sp.csc_matrix, target: np.ndarray, fitted: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    "max(analytic WLS variance on the active set, variance of refits on resampled targets), square-rooted"
    problem = LeastSquaresProblem(design, target)
    variance = _analytic_variance(problem, design)
    if resamples >= 2:
        refits = np.empty((resamples, len(fitted)))
        for r in range(resamples):
            noisy = problem.with_target(target + rng.standard_normal(len(target)))
            refits[r] = solve_nonnegative(noisy, start=fitted)
        variance = np.maximum(variance, refits.var(axis=0, ddof=1))
    return np.sqrt(variance)


def _analytic_variance(problem: LeastSquaresProblem, design: sp.csc_matrix) -> np.ndarray:
    "diag((A^T A)^-1), infinite for columns the design cannot separate from others"
    columns = design.shape[1]
    if columns > ANALYTIC_SE_MAX_SUPPORT:
        return np.zeros(columns)
    gram = problem.gram if problem.gram is not None else (design.T @ design).toarray()
    return _gram_solution(gram, np.zeros(columns))[1]


def _unconstrained_fit(design: sp.csc_matrix, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    "Weighted least squares without constraints: (A^T A)^-1 A^T b and its standard errors (infinite: unidentified)"
    gram = (design.T @ design).toarray()
    estimate, variance = _gram_solution(gram, np.asarray(design.T @ target).ravel())
    return estimate, np.sqrt(variance)


def _gram_solution(gram: np.ndarray, correlation: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    "G^+ c and diag(G^-1) through the eigenvectors of G; infinite variance where G cannot separate the column"
    eigenvalues, eigenvectors = np.linalg.eigh(gram)
    floor = max(float(eigenvalues[-1]), 1e-300) * 1e-10
    good = eigenvalues > floor
    variance = (eigenvectors[:, good] ** 2) @ (1.0 / eigenvalues[good])
    unidentified = np.any(np.abs(eigenvectors[:, ~good]) > 1e-6, axis=1)
    variance[unidentified] = np.inf
    estimate = eigenvectors[:, good] @ ((eigenvectors[:, good].T @ correlation) / eigenvalues[good])
    return estimate, variance


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def decode_aggregate(
    spec: Spec, aggregate: Any, candidates: Sequence[str] | CandidateMap | None = None, **options: Any
) -> RapporResult:
    "Decode an ``estimators.aggregation.Aggregate`` of a RAPPOR spec (candidates default to the spec's)"
    if aggregate.fingerprint != spec.fingerprint:
        raise ValueError("the aggregate was made under another spec")
    return decode_rappor(spec, aggregate.counts, candidates, **options)


def estimate_rappor(
    spec: Spec, aggregate: Any, *, confidence: float = DEFAULT_CONFIDENCE, **options: Any
) -> RapporResult:
    "The ``estimators.estimate_aggregate`` entry point for RAPPOR: decode against the spec's candidates"
    return replace(decode_aggregate(spec, aggregate, confidence=confidence, **options), campaign=spec.name)
