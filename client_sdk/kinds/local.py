"""The local-DP kind, device side: each report is the value perturbed on the device by the campaign's mechanism."""

from __future__ import annotations

from .base import CampaignKind, register_kind

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (mypy treats the name as True)
if TYPE_CHECKING:
    from typing import Any

    from .base import ReportMaker


class LocalKind(CampaignKind):
    "Local differential privacy: pure epsilon per report, no batch"

    name = "local"

    def identity(self, spec: Any) -> dict:
        "Nothing: a local spec has no ``trust`` member (fingerprints from before kinds existed)"
        return {}

    def spec_from_dict(self, spec_class: Any, data: dict, common: dict[str, Any]) -> Any:
        return spec_class._local_from_dict(data, common)

    def make_payload(self, maker: ReportMaker, spec: Any, campaign: str, value: Any, report_id: str,
                     batch: str | None) -> Any:
        return maker.perturbed(spec, value)


LOCAL = register_kind(LocalKind())
