"""The registry of campaign kinds, estimate side: a window's estimate from what the collector side gathered.

Each kind registers one :class:`EstimateKind` (:func:`register_estimate_kind`) under the name its device side
registered in :mod:`client_sdk.kinds`; :func:`estimate_kind` finds it from a spec or an estimate (both carry
``trust``; a local estimate has none).  A kind makes its estimate's JSON once (:meth:`EstimateKind.estimate_json`,
what the collector's ``/estimate`` answers) and reads that JSON into its own typed estimate, a subclass of
:class:`estimators.estimates.Estimate` (:meth:`EstimateKind.read`; :func:`read_estimate` finds the kind).  What a
report says and draws per kind, and which sections and main figure an estimate type gets, is
``estimators.report.kinds``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, cast

from client_sdk.kinds import Registry

from ..estimates import Estimate

if TYPE_CHECKING:
    from ..window import DailyResult


@dataclass
class KindPlan:
    "A kind's answer to ``ldp-telemetry plan --spec``: a header, notes, and a table (columns, rows)"

    header: str
    columns: list[str]
    rows: list[list[Any]]
    notes: list[str] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)  # the answer's own members in its JSON (a threshold, ...)

    def to_dict(self) -> dict:
        return {"header": self.header, "notes": self.notes,
                "rows": [dict(zip(self.columns, row)) for row in self.rows], **self.figures}


class EstimateKind:
    """One campaign kind's estimate side.

    ``source`` is what this kind's collector side gathers for a window: merged aggregates for local campaigns,
    releases for distributed ones.  The estimate is typed (a subclass of :class:`estimators.estimates.Estimate`
    the kind declares); its JSON form is estimators/report/report.schema.json's.  A kind defines
    :meth:`estimate` (and :meth:`estimate_json` when it makes the JSON first, as the built-in kinds do)."""

    name: ClassVar[str] = ""

    def estimate(self, spec: Any, source: Any, confidence: float = 0.95) -> Estimate:
        "The estimate of one window (``.to_json()``: its JSON form); raises estimators.NoReports for an empty one"
        raise NotImplementedError

    def estimate_json(self, spec: Any, source: Any, confidence: float = 0.95) -> dict:
        "The JSON of :meth:`estimate`, what ``/estimate`` answers (no typed estimate made and turned back)"
        return self.estimate(spec, source, confidence).to_json()

    def read(self, data: Mapping[str, Any]) -> Estimate:
        "An estimate's JSON (from the collector, a database, a file) as this kind's typed estimate"
        return Estimate.read(data)

    def per_period(self, spec: Any, sources: Sequence[Any], confidence: float = 0.95) -> list[DailyResult]:
        "One estimate per day (or batch) of the window; none when it holds a single one"
        return []

    def plan(self, spec: Any, n: int, question: Mapping[str, Any]) -> KindPlan:
        """What this kind's estimate will say at n reports (``question``: confidence, target_halfwidth and the
        kind's own keys); ValueError for a kind without a planner or a question it cannot answer"""
        raise ValueError(f"the {self.name} kind has no planner: ldp-telemetry plan --spec answers for its own kinds")


_KINDS = Registry("estimate side")


def register_estimate_kind(kind: EstimateKind) -> EstimateKind:
    "Register the estimate side of a kind whose device side is registered (client_sdk.kinds.register_kind)"
    return cast(EstimateKind, _KINDS.register(kind))


def unregister_estimate_kind(name: str) -> None:
    _KINDS.unregister(name)


def read_estimate(data: Mapping[str, Any]) -> Estimate:
    "An estimate's JSON as its kind's typed estimate (its ``trust``); the shared members only for a kind unknown here"
    kind = _KINDS.find(data)
    return kind.read(data) if kind is not None else Estimate.read(data)


def estimate_kind(spec_or_result: Any) -> EstimateKind:
    "The estimate side of a spec's or an estimate's kind (its ``trust``); SpecError('trust') for none"
    return cast(EstimateKind, _KINDS.of(spec_or_result))
