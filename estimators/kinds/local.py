"""The local-DP kind, estimate side: a window's merged aggregate de-biased by the campaign's mechanism, and its
typed estimates: :class:`LocalFrequencies` (a frequency oracle's), :class:`RapporFrequencies` (the RAPPOR
decoder's candidates) and :class:`LocalMean` (a numeric campaign's), each with a shuffled campaign's amplified
guarantee per batch size (:class:`ShuffleGuarantee`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..estimates import Defence, Estimate, EstimatedMean, defence_of, is_number
from ..window import DailyResult, daily_estimates, window_estimate
from .base import EstimateKind, register_estimate_kind


@dataclass(frozen=True)
class ShuffledBatches:
    "The batches a shuffled campaign's window came in, each size with its amplified guarantee"

    batch_size: int
    batches: int
    epsilon: float
    closed_form_epsilon: float | None


@dataclass(frozen=True)
class ShuffleGuarantee:
    """A shuffled campaign's ``shuffle`` block (collector.kinds.local_shuffled): each report epsilon0-LDP, each
    batch of its size (epsilon, delta)-DP by ``bound``"""

    epsilon0: float
    delta: float
    batches: tuple[ShuffledBatches, ...]
    bound: str


def shuffle_of(data: Any) -> ShuffleGuarantee | None:
    "The typed ``shuffle`` block of an estimate's JSON, or None (not a shuffled campaign)"
    if not isinstance(data, Mapping) or not is_number(data.get("epsilon0")) or not is_number(data.get("delta")):
        return None
    rows = tuple(ShuffledBatches(int(row["batch_size"]), int(row.get("batches", 0)), float(row["epsilon"]),
                                 float(row["closed_form_epsilon"]) if is_number(row.get("closed_form_epsilon"))
                                 else None)
                 for row in data.get("batches") or [] if isinstance(row, Mapping) and is_number(row.get("epsilon")))
    return ShuffleGuarantee(float(data["epsilon0"]), float(data["delta"]), rows, str(data.get("bound") or ""))


@dataclass(frozen=True)
class LocalFrequencies(Estimate):
    "Per-value frequencies from a local-DP frequency oracle, with the ones test that refused reports at ingestion"

    defence: Defence | None
    shuffle: ShuffleGuarantee | None

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        defence = data.get("defence")
        return {**super().members(data), "defence": defence_of(defence) if isinstance(defence, Mapping) else None,
                "shuffle": shuffle_of(data.get("shuffle"))}


@dataclass(frozen=True)
class RapporFrequencies(LocalFrequencies):
    "The RAPPOR decoder's detected candidates, their proportions, and the share of the reports they hold"

    allocated_mass: float | None

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        mass = data.get("allocated_mass")
        return {**super().members(data), "allocated_mass": float(mass) if is_number(mass) else None}


@dataclass(frozen=True)
class LocalMean(EstimatedMean):
    "The unbiased mean of a numeric campaign (its JSON also holds it as one ``values`` row, not read as a value)"

    shuffle: ShuffleGuarantee | None

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        return {**super().members(data), "shuffle": shuffle_of(data.get("shuffle"))}


# The estimate types by the JSON's ``kind`` (the estimator's: estimators.frequency, .means, .rappor)
ESTIMATE_TYPES: Mapping[str, type[Estimate]] = {"mean": LocalMean, "rappor": RapporFrequencies}


class LocalEstimates(EstimateKind):
    "Local differential privacy: the estimate of a merged aggregate (``source``), its intervals the mechanism's"

    name = "local"

    def estimate_json(self, spec: Any, source: Any, confidence: float = 0.95) -> dict:
        return window_estimate(spec, source, confidence)

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Estimate:
        return self.read(self.estimate_json(spec, source, confidence))

    def read(self, data: Mapping[str, Any]) -> Estimate:
        "Frequencies, RAPPOR candidates or a mean, as the estimator that wrote the JSON says"
        named = data.get("kind")
        return ESTIMATE_TYPES.get(named if isinstance(named, str) else "", LocalFrequencies).read(data)

    def per_period(self, spec: Any, sources: Sequence[Any], confidence: float = 0.95) -> list[DailyResult]:
        "One estimate per day (``sources``: (day, aggregate) pairs) that has reports; none for a single day"
        return daily_estimates(spec, sources, confidence)


LOCAL_ESTIMATES = register_estimate_kind(LocalEstimates())
