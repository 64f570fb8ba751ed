"""A campaign's privacy budget (the spec's optional ``budget``) and the one rule both ends enforce it by.

``budget`` is ``{"epsilon": E}`` or ``{"epsilon": E, "delta": D}``: what one device may spend over the campaign's
whole life (every version of its name).  The rule (:data:`RULE`, :func:`refusal`): **basic composition of the
charges**.  Each release a device's data enters charges the (epsilon, delta) its campaign kind states for one report
(``CampaignKind.ledger_charge``: a local report its epsilon, a distributed batch its (epsilon, delta)); the charges
add up (Dwork & Roth 2014, Theorem 3.16), and one more is refused when the sums would pass the budget's epsilon (or
its delta, when it names one).

Why the basic sum and not the tight figure the server also shows (privacy loss distributions, ``estimators.
composition``): the device must stop at the same figure as the collector, with the standard library only and with
no knowledge of the other releases' noise.  The sum is always a valid bound, so the budget holds whatever the
mechanisms; the tight figure says how much less was really spent.  The device's ledger (``client_sdk.runtime.
ledger``) and the collector's release ledger (``collector.release_ledger``) both call :func:`refusal`.
"""

from __future__ import annotations

import math

from .errors import SpecError
from .frozen import Frozen

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (client_sdk.frozen says why)
if TYPE_CHECKING:
    from typing import Any

RULE = ("basic composition of the charges: each release charges the (epsilon, delta) its kind states for one "
        "report, the charges add up, and a release that would take the sums past the budget is refused")
TOLERANCE = 1e-12  # relative: a budget of k epsilons allows k charges despite rounding in their sum


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class Budget(Frozen):
    "What one device may spend over a campaign's life: ``epsilon``, and ``delta`` if the budget caps it (else None)"

    __slots__ = _fields = ("epsilon", "delta")
    epsilon: float
    delta: float | None

    def __init__(self, epsilon: float, delta: float | None = None) -> None:
        self._set(epsilon=epsilon, delta=delta)

    @classmethod
    def from_json(cls, value: Any) -> Budget:
        "The spec's ``budget`` member; SpecError naming ``budget`` (or ``budget.epsilon``/``budget.delta``)"
        if not isinstance(value, dict):
            raise SpecError("budget", 'must be an object {"epsilon": E} or {"epsilon": E, "delta": D}')
        unknown = sorted(set(value) - {"epsilon", "delta"})
        if unknown:
            raise SpecError(f"budget.{unknown[0]}", "unknown field; allowed fields are ['delta', 'epsilon']")
        epsilon: Any = value.get("epsilon")
        if not _number(epsilon) or not epsilon > 0:
            raise SpecError("budget.epsilon", "must be a positive finite number")
        delta: Any = value.get("delta")
        if delta is not None and (not _number(delta) or not 0 < delta < 1):
            raise SpecError("budget.delta", "must be a number with 0 < delta < 1")
        return cls(float(epsilon), None if delta is None else float(delta))

    def to_json(self) -> dict:
        return {"epsilon": self.epsilon} if self.delta is None else {"epsilon": self.epsilon, "delta": self.delta}


def refusal(budget: Budget | None, spent: tuple[float, float], charge: tuple[float, float]) -> str | None:
    """Why one more ``charge`` (epsilon, delta) after ``spent`` (the charges' sums so far) would pass ``budget``,
    or None if it fits (always None without a budget)"""
    if budget is None:
        return None
    epsilon = math.fsum((spent[0], charge[0]))
    if epsilon > budget.epsilon * (1 + TOLERANCE):
        return (f"privacy budget epsilon {budget.epsilon:g} would be exceeded: {spent[0]:g} spent, this release "
                f"charges {charge[0]:g}")
    delta = math.fsum((spent[1], charge[1]))
    if budget.delta is not None and delta > budget.delta * (1 + TOLERANCE):
        return (f"privacy budget delta {budget.delta:g} would be exceeded: {spent[1]:g} spent, this release "
                f"charges {charge[1]:g}")
    return None


def remaining(budget: Budget, spent: tuple[float, float]) -> dict:
    "What remains of ``budget`` after ``spent`` by the rule (never below 0)"
    out: dict[str, Any] = {"epsilon": max(budget.epsilon - spent[0], 0.0)}
    if budget.delta is not None:
        out["delta"] = max(budget.delta - spent[1], 0.0)
    return out
