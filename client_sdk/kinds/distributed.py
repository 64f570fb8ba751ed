"""The distributed kind (Prio3), device side: each report is the value sharded and sealed to two aggregators.

The ledger charges (epsilon, delta) once per batch (a UTC day, ``client_sdk.distributed.batch_of``): the batch's
release is what the aggregators' noise protects."""

from __future__ import annotations

from typing import Any

from ..clock import utc_day
from .base import CampaignKind, ReportMaker, register_kind


class DistributedKind(CampaignKind):
    "Prio3 aggregated by a leader and a helper, noised by them (or by the devices' coins)"

    name = "distributed"
    needs_aggregators = True

    def batch_of(self, now: float) -> str | None:
        return utc_day(now)

    def ledger_charge(self, spec: Any) -> tuple[float, float]:
        return float(spec.epsilon), float(spec.delta or 0.0)

    def make_payload(self, maker: ReportMaker, spec: Any, campaign: str, value: Any, report_id: str,
                     batch: str | None) -> Any:
        assert batch is not None  # batch_of gives one
        return maker.sealed(spec, campaign, value, report_id, batch)


DISTRIBUTED = register_kind(DistributedKind())
