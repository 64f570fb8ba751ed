"""The distributed kind (Prio3), device side: each report is the value sharded and sealed to two aggregators.

The ledger charges (epsilon, delta) once per batch (the spec's ``window``: a UTC day by default,
``client_sdk.distributed.batch_of``), and the batch is the campaign's period: the batch's release is what the
aggregators' noise protects."""

from __future__ import annotations

from .base import CampaignKind, register_kind

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from .base import ReportMaker


class DistributedKind(CampaignKind):
    "Prio3 aggregated by a leader and a helper, noised by them (or by the devices' coins)"

    name = "distributed"
    needs_aggregators = True
    takes_mechanism = False  # "prio3" (or absent): the circuit is the spec's ``prio3``

    def identity(self, spec: Any) -> dict:
        "Nothing here: ``trust`` comes with the Prio3 parameters (``Spec.identity``)"
        return {}

    def spec_from_dict(self, spec_class: Any, data: dict, common: dict[str, Any]) -> Any:
        return spec_class._distributed_from_dict(data, common)

    def batch_of(self, spec: Any, now: float) -> str | None:
        return str(spec.prio3.batch_at(now))

    def report_period(self, spec: Any) -> float:
        return float(spec.prio3.batch_seconds)

    def ledger_charge(self, spec: Any) -> tuple[float, float]:
        return float(spec.epsilon), float(spec.delta or 0.0)

    def make_payload(self, maker: ReportMaker, spec: Any, campaign: str, value: Any, report_id: str,
                     batch: str | None) -> Any:
        assert batch is not None  # batch_of gives one
        return maker.sealed(spec, campaign, value, report_id, batch)


DISTRIBUTED = register_kind(DistributedKind())
