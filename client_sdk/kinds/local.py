"""The local-DP kind, device side: each report is the value perturbed on the device by the campaign's mechanism."""

from __future__ import annotations

from typing import Any

from .base import CampaignKind, ReportMaker, register_kind


class LocalKind(CampaignKind):
    "Local differential privacy: pure epsilon per report, no batch"

    name = "local"

    def make_payload(self, maker: ReportMaker, spec: Any, campaign: str, value: Any, report_id: str,
                     batch: str | None) -> Any:
        return maker.perturbed(spec, value)


LOCAL = register_kind(LocalKind())
