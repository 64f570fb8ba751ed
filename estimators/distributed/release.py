"""The estimate of a distributed campaign's release: what ``GET /estimate`` and ``ldp-telemetry report`` show.

A release is what the leader stores after collecting a batch with the helper (``dist_releases``)::

    {"campaign", "fingerprint", "version", "batch", "report_count", "rejected", "prio3",
     "release": [signed integers: the sum of the valid measurements plus both aggregators' noise or the coins],
     "noise": NoiseMode.describe(), "coin_subset": reports whose coins entered the release, or null}

:func:`estimate_release` recomputes the noise from the campaign's spec (calibration is deterministic: the spec's
epsilon, delta, noise mode and sensitivity fix it), checks that the release says the same, and de-noises it with
:func:`estimators.distributed.estimate_distributed`.  The answer has the shape of a local estimate (per value:
estimate, count, std_error, ci_low, ci_high; a mean; the ``central_dp`` block) plus ``trust_models`` and a
``guarantee`` that says which property holds under which assumption:

* Prio3 input privacy: no aggregator sees a measurement, if the two aggregators do not collude with each other;
* the (epsilon, delta) of the release (add or remove one person's report), under the noise mode's assumption: at
  least one aggregator does not collude with the analyst (aggregator noise), or at least a fraction h of the devices
  in the batch, so at least n_min in the coin subset, do not collude with the analyst (coins);
* the report count n is published with the release.  If n is taken as public, the neighbouring relation is
  "replace one person's value"; a histogram's (or multihot's) release then changes in two disjoint sets of buckets,
  and basic composition over the two gives (2 epsilon, 2 delta) (Laplace: exactly 2 epsilon, delta 0).  A count
  and a sum are "replace one" already (the shift stays within the sensitivity).

Kinds: histogram and multihot give the fraction of reports per domain value (count / n, as local estimates; a
multihot report may count in several buckets), count gives the count and the proportion of ``true``, sum gives
the mean of the measurements (integers in [0, max_measurement]).  sumvec releases are refused: a vector of means
has no single trust-model comparison yet.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from client_sdk.errors import LDPError

from .estimate import estimate_distributed
from .noise import CoinNoise, NoiseMode, calibrate

PRIO3_TYPES = ("count", "sum", "histogram", "sumvec", "multihot")
ESTIMATED_TYPES = ("count", "sum", "histogram", "multihot")
DEFAULT_HONEST_FRACTION = 0.5
INPUT_PRIVACY = ("no aggregator sees any device's measurement, only random-looking shares (Prio3)",
                 "the two aggregators do not collude with each other")
INTEGRITY = ("the release sums valid measurements only, one per accepted report (Prio3's proof)",
             "both aggregators follow the protocol (a malicious aggregator can drop reports or alter its share)")


class ReleaseMismatch(LDPError, ValueError):
    "A release does not belong to the spec given, or its noise is not the spec's calibration"


@dataclass(frozen=True)
class DistributedQuestion:
    "What a distributed spec asks, read from a Spec (``spec.prio3``) or its JSON form"

    name: str
    prio3: str
    epsilon: float
    delta: float | None
    noise: str
    domain: tuple[Any, ...] | None = None
    max_measurement: int | None = None
    length: int | None = None
    max_weight: int | None = None
    coins: int = 1
    honest_fraction: float = DEFAULT_HONEST_FRACTION
    fingerprint: str | None = None

    @classmethod
    def of(cls, spec: Any) -> DistributedQuestion:
        if isinstance(spec, Mapping):
            return cls._from_json(spec)
        params = getattr(spec, "prio3", None)
        if getattr(spec, "trust", "distributed") != "distributed" or params is None:
            raise ValueError("the spec is not a distributed campaign's (trust 'distributed' with a prio3 block)")
        domain = getattr(spec, "domain", None)
        return cls(name=spec.name, prio3=params.type, epsilon=float(spec.epsilon),
                   delta=None if spec.delta is None else float(spec.delta), noise=params.noise,
                   domain=tuple(domain) if domain is not None else None, max_measurement=params.max_measurement,
                   length=params.length, max_weight=params.max_weight, coins=params.coins or 1,
                   honest_fraction=params.honest_fraction or DEFAULT_HONEST_FRACTION,
                   fingerprint=getattr(spec, "fingerprint", None))

    @classmethod
    def _from_json(cls, spec: Mapping) -> DistributedQuestion:
        if spec.get("trust") != "distributed":
            raise ValueError("the spec is not a distributed campaign's (trust must be 'distributed')")
        if spec.get("prio3") not in PRIO3_TYPES:
            raise ValueError(f"prio3 must be one of {list(PRIO3_TYPES)}")
        domain = spec.get("domain")
        delta = spec.get("delta")
        return cls(name=str(spec.get("name", "campaign")), prio3=spec["prio3"], epsilon=float(spec["epsilon"]),
                   delta=None if delta is None else float(delta), noise=str(spec.get("noise", "gaussian")),
                   domain=tuple(domain) if domain is not None else None,
                   max_measurement=spec.get("max_measurement"), length=spec.get("length"),
                   max_weight=spec.get("max_weight"), coins=int(spec.get("coins") or 1),
                   honest_fraction=float(spec.get("honest_fraction") or DEFAULT_HONEST_FRACTION),
                   fingerprint=spec.get("fingerprint"))

    @property
    def sensitivity(self) -> int:
        "L1 sensitivity of one report (add or remove it; a sum: replace its value)"
        if self.prio3 == "sum":
            return int(self.max_measurement or 0)
        if self.prio3 == "multihot":
            return int(self.max_weight or 0)
        if self.prio3 == "sumvec":
            return int(self.length or 0) * int(self.max_measurement or 0)
        return 1

    def calibrated_noise(self) -> NoiseMode:
        "The noise this spec calibrates to: the same function the aggregators call"
        return calibrate(self.noise, epsilon=self.epsilon, delta=self.delta or 0.0, sensitivity=self.sensitivity,
                         coins_per_report=self.coins, honest_fraction=self.honest_fraction)


def estimate_release(spec: Any, release_dict: Mapping[str, Any], confidence: float = 0.95) -> dict:
    """The estimate of one release (a batch) of a distributed campaign, in the shape of a local estimate.

    ``spec`` is the campaign's Spec (or its JSON), ``release_dict`` the leader's release.  Raises
    :class:`ReleaseMismatch` when the release is not this spec's (fingerprint, Prio3 type, noise), ValueError for a
    malformed release and ``estimators.NoReports`` for a release of no reports."""
    return estimate_releases(spec, [release_dict], confidence)


def estimate_releases(spec: Any, releases: Sequence[Mapping[str, Any]], confidence: float = 0.95) -> dict:
    """The estimate over a window of batches: their releases added up.

    Each batch's noise is independent of the others', so the noise of the sum is the sum of every batch's: the
    aggregator noise of 2k aggregator shares (its exact pmf the convolution), or the coins of every batch's
    subset.  One batch gives exactly :func:`estimate_release`'s answer."""
    question = DistributedQuestion.of(spec)
    if question.prio3 not in ESTIMATED_TYPES:
        raise ValueError(f"no estimate for Prio3 type {question.prio3!r} (estimated: {list(ESTIMATED_TYPES)})")
    if not releases:
        raise ValueError("no release to estimate from")
    noises: list[NoiseMode] = []
    counts: list[int] = []
    sums: list[list[int]] = []
    for release in releases:
        _check_matches(question, release)
        n = release.get("report_count")
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError("report_count must be a non-negative integer")
        values = _release_values(release.get("release"))
        if sums and len(values) != len(sums[0]):
            raise ValueError("the releases of one campaign must have the same length")
        noises.append(_noise_of(question, release))
        counts.append(n)
        sums.append(values)
    noise = _combined(noises)
    n = sum(counts)
    values = [sum(column) for column in zip(*sums)]
    kind, extra = _kind_arguments(question, len(values))
    result = estimate_distributed(values, kind=kind, n=n, noise=noise, epsilon=question.epsilon,
                                  delta=question.delta, confidence=confidence, **extra).to_dict()
    if result["kind"] == "mean":
        result["values"] = [{"value": "mean", "estimate": result["mean"], "std_error": result["std_error"],
                             "ci_low": result["ci_low"], "ci_high": result["ci_high"]}]
    elif question.prio3 == "count":
        row = result["values"][0]
        result.update(count=row["count"], count_std_error=row["count_std_error"], proportion=row["estimate"])
    weakest = min(noises, key=lambda noise: getattr(noise, "subset_size", 0))  # coins: the smallest subset
    result["guarantee"] = guarantee(question, weakest, result["guarantee"], n, batches=len(releases))
    result["trust_models"]["distributed"]["mode"] = noise.mode
    replace_one = result["guarantee"].get("replace_one") or {}  # the release's own (epsilon, delta) under replace-one
    result["trust_models"]["distributed"].update(epsilon=replace_one.get("epsilon"), delta=replace_one.get("delta"))
    result["noise"] = {**noises[0].describe(), "batches": len(releases), "variance": noise.variance()}
    rejected: dict[str, int] = {}
    for release in releases:
        for reason, count in (release.get("rejected") or {}).items():
            rejected[reason] = rejected.get(reason, 0) + int(count)
    last = releases[-1]
    batches = [release.get("batch") for release in releases]
    subsets = [release.get("coin_subset") for release in releases]
    known = {"fingerprint": last.get("fingerprint") or question.fingerprint, "version": last.get("version")}
    return {"campaign": last.get("campaign", question.name), "mechanism": "prio3", "prio3": question.prio3,
            **{key: value for key, value in known.items() if value is not None},
            "batch": batches[0] if len(batches) == 1 else None, "batches": batches, "rejected": rejected,
            "coin_subset": sum(subsets) if all(isinstance(s, int) for s in subsets) else None, **result}


def _combined(noises: Sequence[NoiseMode]) -> NoiseMode:
    "The noise of a sum of releases: every aggregator share of every batch, or every batch's coin subset"
    first = noises[0]
    if len(noises) == 1:
        return first
    if isinstance(first, CoinNoise):
        return dataclasses.replace(first, subset_size=sum(n.subset_size for n in noises if isinstance(n, CoinNoise)))
    return dataclasses.replace(first, aggregators=sum(n.aggregators for n in noises if not isinstance(n, CoinNoise)))


def guarantee(question: DistributedQuestion, noise: NoiseMode, base: dict, n: int, batches: int = 1) -> dict:
    """The guarantee block: the release's (epsilon, delta), and every property with the assumption it needs.

    ``noise`` is one batch's: each batch's release is (epsilon, delta)-DP for one report in it; a person with
    reports in several batches composes them (the device's privacy ledger charges every report)."""
    epsilon, delta = base["epsilon"], base["delta"]
    each = "each batch's release is" if batches > 1 else "the release is"
    dp = (f"{each} ({epsilon:.4g}, {delta:.3g})-differentially private ({base['neighbouring']})",
          base["assumption"])
    statements = [dict(zip(("holds", "assuming"), item)) for item in (INPUT_PRIVACY, dp, INTEGRITY)]
    if isinstance(noise, CoinNoise):
        short = "" if noise.subset_size >= noise_subset_needed(question) else ": FEWER than calibrated"
        statements.append({"holds": (f"the coins of {noise.subset_size} reports per batch (at least {noise.n_min} "
                                     f"from honest devices) enter the release{short}"),
                           "assuming": "the subset is chosen by public randomness fixed after the batch closed"})
    replace_one = replace_one_privacy(question, noise, epsilon, delta)
    statements.append({"holds": (f"with the published report count (n = {n:,}) taken as public: "
                                 f"({replace_one['epsilon']:.4g}, {replace_one['delta']:.3g})-DP for replacing one "
                                 "person's value"),
                       "assuming": "the same as the line above"})
    return {**base, "replace_one": replace_one, "statements": statements}


def noise_subset_needed(question: DistributedQuestion) -> int:
    noise = question.calibrated_noise()
    return noise.subset_size if isinstance(noise, CoinNoise) else 0


def replace_one_privacy(question: DistributedQuestion, noise: NoiseMode, epsilon: float, delta: float) -> dict:
    """(epsilon, delta) when n is public and one person's value is replaced.

    A histogram or multihot release changes in two disjoint sets of buckets (the old value's, the new one's), each
    change within the sensitivity the noise is calibrated to: basic composition gives (2 eps, 2 delta).  For a
    count (one 0/1 entry) and a sum (already calibrated to a replaced value) nothing changes."""
    if question.prio3 in ("count", "sum"):
        return {"epsilon": epsilon, "delta": delta, "method": "the shift stays within the calibrated sensitivity"}
    if noise.mode == "laplace":
        return {"epsilon": 2 * epsilon, "delta": 0.0,
                "method": "pure epsilon over two disjoint sets of buckets: the privacy losses add"}
    return {"epsilon": 2 * epsilon, "delta": 2 * delta,
            "method": "basic composition over two disjoint sets of buckets (an upper bound)"}


def _check_matches(question: DistributedQuestion, release: Mapping[str, Any]) -> None:
    fingerprint = release.get("fingerprint")
    if question.fingerprint and fingerprint and fingerprint != question.fingerprint:
        raise ReleaseMismatch(f"the release is of fingerprint {fingerprint}, the spec's is {question.fingerprint}")
    if release.get("prio3") not in (None, question.prio3):
        raise ReleaseMismatch(f"the release is a {release.get('prio3')!r}, the spec a {question.prio3!r}")


def _release_values(raw: Any) -> list[int]:
    "The released integers (a list, or one number for a count or a sum)"
    items = raw if isinstance(raw, list) else [raw]
    if not items or not all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        raise ValueError("release must be a non-empty list of integers")
    return list(items)


def _noise_of(question: DistributedQuestion, release: Mapping[str, Any]) -> NoiseMode:
    """The spec's calibrated noise, checked against what the release says it added; a coin release's subset size
    is the one it states (its coins' mean is what the release holds)"""
    noise = question.calibrated_noise()
    stated = release.get("noise") or {}
    if stated.get("mode") not in (None, noise.mode):
        raise ReleaseMismatch(f"the release's noise mode is {stated.get('mode')!r}, the spec's {noise.mode!r}")
    described = noise.describe()
    for key in ("sigma2", "scale", "coins_per_report", "sensitivity"):
        if key in stated and key in described and not math.isclose(float(stated[key]), float(described[key])):
            raise ReleaseMismatch(f"the release's noise {key} is {stated[key]}, the spec calibrates {described[key]}")
    if isinstance(noise, CoinNoise):
        subset = release.get("coin_subset")
        if subset is not None:
            if not isinstance(subset, int) or isinstance(subset, bool) or subset < 1:
                raise ValueError("coin_subset must be a positive integer")
            noise = dataclasses.replace(noise, subset_size=subset)
    return noise


def _kind_arguments(question: DistributedQuestion, length: int) -> tuple[str, dict[str, Any]]:
    if question.prio3 == "sum":
        bound = int(question.max_measurement or 0)
        if length != 1 or bound < 1:
            raise ValueError("a sum release has one value and a max_measurement of at least 1")
        return "sum", {"value_range": (0.0, float(bound)), "bound": bound, "rounded": False}
    if question.prio3 == "count":
        if length != 1:
            raise ValueError("a count release has one value")
        return "count", {"domain": ["true"]}
    domain: Sequence[Any] = question.domain or ()
    if length != len(domain):
        raise ValueError(f"the release has {length} counts for a domain of {len(domain)} values")
    return "histogram", {"domain": list(domain)}
