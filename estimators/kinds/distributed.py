"""The distributed kind (Prio3), estimate side: the releases of a window added up and de-noised, with the local
and central trust models' standard errors beside; its typed estimates :class:`Prio3Release` (a histogram's or a
count's fractions) and :class:`Prio3MeanRelease` (a sum's mean)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ..errors import NoReports
from ..estimates import Estimate, EstimatedMean, TrustModel, trust_model
from ..window import DailyResult, finite_json
from .base import EstimateKind, register_estimate_kind


@dataclass(frozen=True)
class Prio3Release(Estimate):
    "Per-value fractions from Prio3 releases, with the release's noise, batches and the three trust models"

    trust_models: Mapping[str, TrustModel] | None
    noise_mode: str | None
    prio3: str | None  # the Prio3 type
    batches: tuple[str, ...]
    rejected: Mapping[str, int]
    guarantee: tuple[tuple[str, str], ...]  # (what holds, assuming what)

    @classmethod
    def members(cls, data: Mapping[str, Any]) -> dict[str, Any]:
        models, noise, guarantee = data.get("trust_models"), data.get("noise"), data.get("guarantee")
        statements = guarantee.get("statements") if isinstance(guarantee, Mapping) else None
        batches = data.get("batches") or [data.get("batch")]
        return {
            **super().members(data),
            "trust_models": MappingProxyType({name: trust_model(model) for name, model in models.items()
                                              if isinstance(model, Mapping)}) if isinstance(models, Mapping) else None,
            "noise_mode": noise.get("mode") if isinstance(noise, Mapping) and isinstance(noise.get("mode"), str)
            else None,
            "prio3": data.get("prio3") if isinstance(data.get("prio3"), str) else None,
            "batches": tuple(str(batch) for batch in batches if batch) if isinstance(batches, list) else (),
            "rejected": MappingProxyType(dict(data.get("rejected") or {})),
            "guarantee": tuple((str(item.get("holds", "")), str(item.get("assuming", "")))
                               for item in statements or [] if isinstance(item, Mapping)),
        }


@dataclass(frozen=True)
class Prio3MeanRelease(EstimatedMean, Prio3Release):
    "The mean of a Prio3 sum's releases"


class DistributedEstimates(EstimateKind):
    "Prio3 releases (``source``) with the aggregators' (or the devices' coins') noise: exact-quantile intervals"

    name = "prio3"

    def estimate_json(self, spec: Any, source: Any, confidence: float = 0.95) -> dict:
        "The estimate over the releases of a window (their batches added up); NoReports when there is none"
        if not source:
            raise NoReports("no release in this window")
        # imported here: the releases' estimator (accounting, noise) only for a distributed campaign's estimate, not
        # with every local report's start-up
        from ..distributed import estimate_releases

        return finite_json(estimate_releases(spec, source, confidence))

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Estimate:
        return self.read(self.estimate_json(spec, source, confidence))

    def read(self, data: Mapping[str, Any]) -> Estimate:
        "A release's fractions, or a sum's mean (the JSON's ``kind``, estimators.distributed.estimate)"
        return (Prio3MeanRelease if data.get("kind") == "mean" else Prio3Release).read(data)

    def per_period(self, spec: Any, sources: Sequence[Any], confidence: float = 0.95) -> list[DailyResult]:
        "One estimate per batch; none when the window holds a single batch"
        if len(sources) <= 1:
            return []
        return [DailyResult(str(release.get("batch")), self.estimate_json(spec, [release], confidence))
                for release in sources]


DISTRIBUTED_ESTIMATES = register_estimate_kind(DistributedEstimates())
