"""Warnings an estimate carries: what its numbers cannot be trusted for, checked once where its JSON is made.

:func:`with_flags` adds a ``flags`` list to an estimate's JSON (``estimators.window.window_estimate``, so the
collector's ``/estimate`` and every report agree); :class:`estimators.estimates.Estimate` reads it back as typed
:class:`EstimateFlag` objects and every report format prints them (``estimators.report.table.warning_lines``).

* ``impossible-frequencies``: no honest set of reports gives these frequencies.  Each value's estimate f is
  unbiased with standard error SE, and the frequencies of a full domain sum to 1, so honest reports put
  (f - 1)/SE above z and |sum f - 1|/SE_sum above z rarely; SE_sum = sqrt(sum SE^2) (the support counts of
  different values are independent given the true value for SUE/OUE, nearly so for OLH and Hadamard, and
  negatively correlated for GRR, whose sum is exactly 1).  z is set so that honest reports raise the flag with
  probability at most ``FALSE_ALARM`` (Bonferroni over the d + 2 one-sided tests, normal approximation).  Crafted
  reports do raise it: one all-ones OUE report adds (1 - q*)/(p* - q*) to every value at once (docs/privacy.md,
  "Poisoning").
* ``impossible-mean``: the mean lies more than z standard errors outside its range (z the same way, two tests).
* ``too-few-reports``: at this n the planner (``estimators.planner``) expects an interval wider than everything
  the quantity can be: a half-width above 0.5 for a frequency, above half the range for a mean.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import NormalDist
from typing import Any

from client_sdk.spec import CATEGORICAL_MECHANISMS, NUMERIC_MECHANISMS, Spec

from .estimates import EstimateFlag
from .planner import expected_std_error, n_for_halfwidth

FALSE_ALARM = 1e-3  # the probability, at most, that honest reports raise an impossible-* flag
IMPOSSIBLE_FREQUENCIES = "impossible-frequencies"
IMPOSSIBLE_MEAN = "impossible-mean"
TOO_FEW_REPORTS = "too-few-reports"
FLAG_CODES = (IMPOSSIBLE_FREQUENCIES, IMPOSSIBLE_MEAN, TOO_FEW_REPORTS)
FREQUENCY_USEFUL_HALFWIDTH = 0.5  # a frequency's half-width above this: its interval is wider than [0, 1]


def alarm_z(tests: int) -> float:
    "The z of each of ``tests`` one-sided tests, so that any of them fires with probability at most FALSE_ALARM"
    return NormalDist().inv_cdf(1 - FALSE_ALARM / tests)


def estimate_flags(result: Mapping[str, Any], spec: Spec) -> list[EstimateFlag]:
    "The flags of an estimate's JSON (``result``) made under ``spec``"
    flags = _impossible(result, spec)
    too_few = _too_few(result, spec)
    return flags + ([too_few] if too_few is not None else [])


def with_flags(result: dict[str, Any], spec: Spec) -> dict[str, Any]:
    "``result`` with its ``flags`` member (an empty list when nothing is wrong)"
    return {**result, "flags": [flag.to_json() for flag in estimate_flags(result, spec)]}


def _impossible(result: Mapping[str, Any], spec: Spec) -> list[EstimateFlag]:
    if spec.mechanism in NUMERIC_MECHANISMS:
        return _impossible_mean(result, spec)
    if spec.mechanism not in CATEGORICAL_MECHANISMS:  # RAPPOR: candidates need not cover the domain, sums <= 1
        return []
    rows = [row for row in result.get("values") or [] if _finite(row.get("estimate")) is not None
            and (_finite(row.get("std_error")) or 0.0) > 0]
    if not rows:
        return []
    z = alarm_z(len(rows) + 2)  # d values above 1, the sum above or below 1
    above = [row for row in rows if (row["estimate"] - 1) / row["std_error"] > z]
    total = math.fsum(row["estimate"] for row in rows)
    total_se = math.sqrt(math.fsum(row["std_error"] ** 2 for row in rows))
    if not above and abs(total - 1) <= z * total_se:
        return []
    parts = []
    if above:
        parts.append(f"{_listed([str(row['value']) for row in above])} "
                     f"{'is' if len(above) == 1 else 'are'} above 1")
    parts.append(f"the {len(rows)} frequencies sum to {total:.3g} (honest reports: 1 +- {z * total_se:.2g})")
    return [EstimateFlag(IMPOSSIBLE_FREQUENCIES,
                         f"impossible frequencies: {'; '.join(parts)}. Honest reports give this with probability "
                         f"below {FALSE_ALARM:g}: crafted (fake) reports are likely in this window")]


def _impossible_mean(result: Mapping[str, Any], spec: Spec) -> list[EstimateFlag]:
    mean, std_error = _finite(result.get("mean")), _finite(result.get("std_error"))
    if spec.range is None or mean is None or std_error is None or std_error <= 0:
        return []
    low, high = spec.range
    z = alarm_z(2)
    if low - z * std_error <= mean <= high + z * std_error:
        return []
    return [EstimateFlag(IMPOSSIBLE_MEAN,
                         f"impossible mean: {mean:.4g} is {abs(mean - min(max(mean, low), high)) / std_error:.3g} "
                         f"standard errors outside the range [{low:g}, {high:g}]. Honest reports give this with "
                         f"probability below {FALSE_ALARM:g}: crafted (fake) reports are likely in this window")]


def _too_few(result: Mapping[str, Any], spec: Spec) -> EstimateFlag | None:
    "The planner's expected half-width at this n against the widest useful one"
    n, confidence = result.get("n"), _finite(result.get("confidence"))
    if not isinstance(n, int) or n < 1 or confidence is None or not 0 < confidence < 1:
        return None
    if spec.mechanism in NUMERIC_MECHANISMS and spec.range is not None:
        options: dict[str, Any] = {"value_range": spec.range}
        useful, quantity = (spec.range[1] - spec.range[0]) / 2, "the mean"
        span = f"the range [{spec.range[0]:g}, {spec.range[1]:g}]"
    elif spec.mechanism in CATEGORICAL_MECHANISMS and spec.domain is not None:
        options = {"domain_size": len(spec.domain)}
        useful, quantity, span = FREQUENCY_USEFUL_HALFWIDTH, "a rare value's frequency", "[0, 1]"
    else:  # RAPPOR: the planner has no model of its decoder
        return None
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    halfwidth = z * expected_std_error(spec.mechanism, spec.epsilon, n, **options)
    if halfwidth <= useful:
        return None
    needed = n_for_halfwidth(spec.mechanism, spec.epsilon, useful, confidence=confidence, **options)
    return EstimateFlag(TOO_FEW_REPORTS,
                        f"too few reports for a useful answer: at n = {n:,} the planner expects a "
                        f"{100 * confidence:.4g}% interval of +-{halfwidth:.3g} for {quantity}, wider than {span} "
                        f"itself; about n = {needed:,} reports narrow it to +-{useful:g}")


def _listed(names: Sequence[str], shown: int = 5) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")


def _finite(value: Any) -> float | None:
    "``value`` as a float if it is a finite number, else None"
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None
