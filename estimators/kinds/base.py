"""The registry of campaign kinds, estimate side: a window's estimate from what the collector side gathered.

Each kind registers one :class:`EstimateKind` (:func:`register_estimate_kind`) under the name its device side
registered in :mod:`client_sdk.kinds`; :func:`estimate_kind` finds it from a spec or an estimate (both carry
``trust``; a local estimate has none).  What a report says and draws per kind is
``estimators.report.kinds``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from client_sdk.kinds import Registry

if TYPE_CHECKING:
    from ..estimates import Estimate
    from ..window import DailyResult


class EstimateKind:
    """One campaign kind's estimate side.

    ``source`` is what this kind's collector side gathers for a window: merged aggregates for local campaigns,
    releases for distributed ones.  The estimate is typed (:class:`estimators.estimates.Estimate`); its JSON form
    is estimators/report/report.schema.json's."""

    name: ClassVar[str] = ""

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Estimate:
        "The estimate of one window (``.to_json()``: its JSON form); raises estimators.NoReports for an empty one"
        raise NotImplementedError

    def per_period(self, spec: Any, sources: Sequence[Any], confidence: float = 0.95) -> list[DailyResult]:
        "One estimate per day (or batch) of the window; none when it holds a single one"
        return []


_KINDS = Registry("estimate side")


def register_estimate_kind(kind: EstimateKind) -> EstimateKind:
    "Register the estimate side of a kind whose device side is registered (client_sdk.kinds.register_kind)"
    return cast(EstimateKind, _KINDS.register(kind))


def unregister_estimate_kind(name: str) -> None:
    _KINDS.unregister(name)


def estimate_kind(spec_or_result: Any) -> EstimateKind:
    "The estimate side of a spec's or an estimate's kind (its ``trust``); SpecError('trust') for none"
    return cast(EstimateKind, _KINDS.of(spec_or_result))
