"""What one device has spent over a campaign's releases: the release ledger's figures, from its stored rows.

Each row of the collector's release ledger (``collector.release_ledger``) is one release a device's data may have
entered, with its *charge* (the (epsilon, delta) the campaign kind states for one report:
``CampaignKind.ledger_charge``, what the device's own ledger charges too), how many charges it makes (a distributed
batch 1; a local window one per report period it adds: a device reports at most once per UTC day under the SDK's
default policy), and its *mechanism* as JSON (:func:`mechanism_of`):

* a distributed batch: the noise ONE aggregator adds, calibrated from the spec (the other aggregator may be
  dishonest, so only one share's noise counts): ``discrete_gaussian`` (sigma2, the spec's delta, the replace-one
  shift) or ``discrete_laplace`` (scale, shift), each entering composition with its own privacy loss distribution;
  ``coins`` noise (centred Binomial, which dp-accounting has no distribution for) enters by its exact (epsilon,
  delta);
* a local report: ``approx`` (epsilon, 0), the worst epsilon-DP mechanism (an upper bound for the randomizer).

:func:`ledger_figures` composes them with ``estimators.composition.compose``: basic composition of the charges
(the budget's rule, ``client_sdk.budget``) and the privacy-loss-distribution figure (exact up to dp-accounting's
pessimistic grid when every mechanism is known, else the optimal bound for the stated guarantees: ``bound``).  The
tight figure is read at the larger of the charges' total delta and the budget's delta; when both are 0 every
release is pure epsilon-DP and the sum is the composition itself (the privacy losses reach their maxima together
with positive probability), so the two figures agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from client_sdk.budget import RULE, Budget, remaining

from .composition import (
    ApproxRelease,
    DiscreteGaussianRelease,
    DiscreteLaplaceRelease,
    Release,
    Spent,
    basic_composition,
    compose,
)
from .distributed.accounting import Shift

PURE = "pure epsilon-DP releases at delta 0: the sum of the epsilons is their composition (Dwork & Roth 2014)"


@dataclass(frozen=True)
class ChargedRelease:
    "A release's mechanism with the charge it is stated at (what basic composition sums; the mechanism meets it)"

    mechanism: Release
    epsilon: float
    delta: float

    @property
    def exact(self) -> bool:
        return bool(self.mechanism.exact)

    def guarantee(self) -> tuple[float, float]:
        return float(self.epsilon), float(self.delta)

    def privacy_loss(self, interval: float) -> Any:
        return self.mechanism.privacy_loss(interval)


@dataclass(frozen=True)
class LedgerRow:
    "One stored release: its charge, how many charges it makes, its mechanism (JSON, :func:`mechanism_of`)"

    release: str
    epsilon: float
    delta: float
    charges: int
    mechanism: Mapping[str, Any]


def mechanism_of(spec: Any) -> dict:
    "The mechanism one release of ``spec`` spends a device's privacy with, as stored JSON (module docstring)"
    if getattr(spec, "prio3", None) is None:
        return {"type": "approx", "epsilon": float(spec.epsilon), "delta": 0.0}
    # imported here: the calibration (scipy) only for a distributed campaign
    from .distributed.release import DistributedQuestion

    question = DistributedQuestion.of(spec)
    noise = question.calibrated_noise()
    shift = {"coordinates": noise.shift.coordinates, "size": noise.shift.size}
    if noise.kind == "gaussian":
        return {"type": "discrete_gaussian", "sigma2": str(noise.parameter), "delta": float(question.delta or 0.0),
                "shift": shift}
    if noise.kind == "laplace":
        return {"type": "discrete_laplace", "scale": str(noise.parameter), "shift": shift}
    epsilon, delta = noise.privacy(question.epsilon)
    return {"type": "approx", "epsilon": float(epsilon), "delta": float(delta), "noise": noise.kind}


def release_of(mechanism: Mapping[str, Any]) -> Release:
    "The composition object of a stored mechanism"
    kind = mechanism.get("type")
    if kind == "discrete_gaussian":
        return DiscreteGaussianRelease(Fraction(mechanism["sigma2"]), float(mechanism["delta"]),
                                       Shift(**mechanism["shift"]))
    if kind == "discrete_laplace":
        return DiscreteLaplaceRelease(Fraction(mechanism["scale"]), Shift(**mechanism["shift"]))
    if kind == "approx":
        return ApproxRelease(float(mechanism["epsilon"]), float(mechanism.get("delta", 0.0)))
    raise ValueError(f"unknown mechanism type {kind!r} in the release ledger")


def charged_releases(rows: Sequence[LedgerRow]) -> list[ChargedRelease]:
    "Every charge of every row as a release (a row of k charges is k releases)"
    out: list[ChargedRelease] = []
    for row in rows:
        out += [ChargedRelease(release_of(row.mechanism), row.epsilon, row.delta)] * row.charges
    return out


def ledger_figures(rows: Sequence[LedgerRow], budget: Budget | None) -> dict:
    """What a device whose data entered every release of ``rows`` has spent (basic and tight) and what remains of
    ``budget`` by the budget's rule (the basic figure) and by the tight one"""
    releases = charged_releases(rows)
    basic = basic_composition(releases)
    target = max(basic.delta, (budget.delta or 0.0) if budget is not None else 0.0)
    if not releases or target == 0:
        tight = Spent(basic.epsilon, 0.0, PURE, all(r.exact for r in releases), len(releases))
    else:
        tight = compose(releases, delta=min(target, 0.5)).tight
    out: dict[str, Any] = {
        "releases": len(rows), "charges": len(releases), "rule": RULE,
        "spent": {"basic": basic.describe(), "tight": tight.describe()},
        "budget": None if budget is None else budget.to_json(), "remaining": None, "remaining_tight": None,
    }
    if budget is not None:
        out["remaining"] = remaining(budget, (basic.epsilon, basic.delta))
        tight_left = budget.epsilon - tight.epsilon if math.isfinite(tight.epsilon) else 0.0
        out["remaining_tight"] = {"epsilon": max(tight_left, 0.0), "at_delta": tight.delta}
    return out

