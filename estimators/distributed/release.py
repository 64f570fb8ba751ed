"""The estimate of a distributed campaign's release: what ``GET /estimate`` and ``ldp-telemetry report`` show.

A release is what the leader stores after collecting a batch with the helper (``dist_releases``)::

    {"campaign", "fingerprint", "version", "batch", "report_count", "rejected", "prio3",
     "release": [signed integers: the sum of the valid measurements plus both aggregators' noise],
     "noise": NoiseMode.describe(), "coin_subset": null}

:func:`estimate_release` recomputes the noise from the campaign's spec (calibration is deterministic: the spec's
epsilon, delta, noise mode and sensitivity fix it), checks that the release says the same, and de-noises it with
:func:`estimators.distributed.estimate_distributed`.  The answer has the shape of a local estimate (per value:
estimate, count, std_error, ci_low, ci_high; a mean; the ``central_dp`` block) plus ``trust_models`` and a
``guarantee`` that says which property holds under which assumption:

* Prio3 input privacy: no aggregator sees a measurement, if the two aggregators do not collude with each other;
* the (epsilon, delta) of the release under replace-one (n public: the report count is published with the
  release), the noise calibrated to one replaced report's shift (a histogram: two buckets by 1), under the one
  assumption every noise mode makes (``noise.ASSUMPTION``): at least one of the two aggregators follows the protocol
  and does not collude with the analyst.  Each aggregator's share noise alone gives the figure.

A release made by the earlier device-coin noise (``coin_subset`` not null) is refused: its noise came from coins
that an aggregator injecting reports could choose, and no guarantee holds for it.

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
from client_sdk.spec_prio3 import PRIO3_TYPES

from .accounting import Shift, replace_one_shift
from .estimate import estimate_distributed
from .noise import ASSUMPTION, NEIGHBOURING, RELATION, NoiseMode, calibrate

ESTIMATED_TYPES = ("count", "sum", "histogram", "multihot")
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
                   length=params.length, max_weight=params.max_weight, fingerprint=getattr(spec, "fingerprint", None))

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
                   max_weight=spec.get("max_weight"), fingerprint=spec.get("fingerprint"))

    @property
    def shift(self) -> Shift:
        "How far one replaced report moves the release (replace-one, n public)"
        return replace_one_shift(self.prio3, max_measurement=self.max_measurement, length=self.length,
                                 max_weight=self.max_weight)

    @property
    def sensitivity(self) -> int:
        "L1 sensitivity of the release under replace-one"
        return self.shift.l1

    def calibrated_noise(self) -> NoiseMode:
        "The noise this spec calibrates to: the same function the aggregators call"
        return calibrate(self.noise, epsilon=self.epsilon, delta=self.delta or 0.0, sensitivity=self.shift)


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
    noises, noise, n, values = added_releases(question, releases)
    kind, extra = _kind_arguments(question, len(values))
    result = estimate_distributed(values, kind=kind, n=n, noise=noise, epsilon=question.epsilon,
                                  delta=question.delta, confidence=confidence, **extra).to_dict()
    if result["kind"] == "mean":
        result["values"] = [{"value": "mean", "estimate": result["mean"], "std_error": result["std_error"],
                             "ci_low": result["ci_low"], "ci_high": result["ci_high"]}]
    elif question.prio3 == "count":
        row = result["values"][0]
        result.update(count=row["count"], count_std_error=row["count_std_error"], proportion=row["estimate"])
    result["guarantee"] = guarantee(result["guarantee"], n, batches=len(releases))
    result["trust_models"]["distributed"]["mode"] = noise.mode
    stated = result["guarantee"]  # the release's own (epsilon, delta), under replace-one
    result["trust_models"]["distributed"].update(epsilon=stated["epsilon"], delta=stated["delta"])
    result["noise"] = {**noises[0].describe(), "batches": len(releases), "variance": noise.variance()}
    rejected = rejected_counts(releases)
    last = releases[-1]
    batches = [release.get("batch") for release in releases]
    known = {"fingerprint": last.get("fingerprint") or question.fingerprint, "version": last.get("version")}
    return {"campaign": last.get("campaign", question.name), "mechanism": "prio3", "prio3": question.prio3,
            **{key: value for key, value in known.items() if value is not None},
            "batch": batches[0] if len(batches) == 1 else None, "batches": batches, "rejected": rejected,
            "coin_subset": None, **result}


def added_releases(question: DistributedQuestion, releases: Sequence[Mapping[str, Any]], length: int | None = None
                   ) -> tuple[list[NoiseMode], NoiseMode, int, list[int]]:
    """A window's releases of ``question``'s campaign added up: each release's noise, the sum's, the reports and the
    summed values.  ValueError for no release, one that is not the question's (ReleaseMismatch), a bad report
    count, or a release of another length than the first's (``length``: than that)"""
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
        if length is not None and len(values) != length:
            raise ValueError(f"a release of {len(values)} counts for {length} buckets")
        if sums and len(values) != len(sums[0]):
            raise ValueError("the releases of one campaign must have the same length")
        noises.append(_noise_of(question, release))
        counts.append(n)
        sums.append(values)
    return noises, _combined(noises), sum(counts), [sum(column) for column in zip(*sums)]


def rejected_counts(releases: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    "The reports the aggregators rejected in a window's releases, by reason, added up"
    rejected: dict[str, int] = {}
    for release in releases:
        for reason, count in (release.get("rejected") or {}).items():
            rejected[reason] = rejected.get(reason, 0) + int(count)
    return rejected


def _combined(noises: Sequence[NoiseMode]) -> NoiseMode:
    "The noise of a sum of releases: every aggregator share of every batch"
    first = noises[0]
    if len(noises) == 1:
        return first
    return dataclasses.replace(first, aggregators=sum(n.aggregators for n in noises))


def guarantee(base: dict, n: int, batches: int = 1) -> dict:
    """The guarantee block: the release's (epsilon, delta) under replace-one, and every property with the
    assumption it needs.  Each batch's release is (epsilon, delta)-DP for one report in it; a person with reports in
    several batches composes them (the device's privacy ledger charges every report)."""
    epsilon, delta = base["epsilon"], base["delta"]
    each = "each batch's release is" if batches > 1 else "the release is"
    dp = (f"{each} ({epsilon:.4g}, {delta:.3g})-differentially private, {NEIGHBOURING}: the report count "
          f"(n = {n:,}) is published; one person's report replaced by another value", ASSUMPTION)
    statements = [dict(zip(("holds", "assuming"), item)) for item in (INPUT_PRIVACY, dp, INTEGRITY)]
    return {**base, "relation": RELATION, "neighbouring": NEIGHBOURING, "assumption": ASSUMPTION,
            "statements": statements}


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
    "The spec's calibrated noise, checked against what the release says it added"
    if release.get("coin_subset") is not None:
        raise ReleaseMismatch("the release was made with device-coin noise (coin_subset), which an aggregator "
                              "injecting reports could remove: no guarantee holds for it, so it is not estimated")
    noise = question.calibrated_noise()
    stated = release.get("noise") or {}
    if stated.get("mode") not in (None, noise.mode):
        raise ReleaseMismatch(f"the release's noise mode is {stated.get('mode')!r}, the spec's {noise.mode!r}")
    if stated.get("relation", RELATION) != RELATION:
        raise ReleaseMismatch(f"the release's noise is calibrated for {stated.get('relation')!r}, not {RELATION!r}")
    described = noise.describe()
    for key in ("sigma2", "scale", "coins", "sensitivity"):
        if key in stated and key in described and not math.isclose(float(stated[key]), float(described[key])):
            raise ReleaseMismatch(f"the release's noise {key} is {stated[key]}, the spec calibrates {described[key]}")
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
