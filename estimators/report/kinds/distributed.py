"""The distributed kind (Prio3), report side: the release's noise and batches, against the local and central trust
models."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from ...window import ReportData
from ..model import (
    NOT_DISTINGUISHABLE,
    ValueRow,
    central_halfwidth,
    central_mechanism,
    confidence_percent,
    describe_window,
    epsilon_text,
    format_number,
    target_text,
    trust_models_text,
)
from ..style import DISTRIBUTED_COLOUR, LDP_COLOUR
from .base import ReportKind, register_report_kind

if TYPE_CHECKING:
    from ..plots import Plot


class DistributedReport(ReportKind):
    "Prio3 releases: the header names the noise, the batches and the three trust models' standard errors"

    name = "distributed"
    model_label = "distributed DP"
    colour = DISTRIBUTED_COLOUR

    def header_lines(self, data: ReportData) -> list[str]:
        "Its Prio3 type and noise, the batches, rejections, the three trust models"
        result = data.result
        noise = result.get("noise") or {}
        delta = result.get("delta")
        n = data.n
        batches = [batch for batch in result.get("batches") or [result.get("batch")] if batch]
        lines = [
            (f"campaign {data.campaign}: {data.kind} estimate, distributed (Prio3 {result.get('prio3', '?')}, "
             f"{noise.get('mode', '?')} noise), epsilon {epsilon_text(result)}"
             + (f", delta {delta:.3g}" if isinstance(delta, (int, float)) and delta else "")),
            (f"{f'n = {n:,} reports, ' if n is not None else ''}batches: {', '.join(batches) or '-'} "
             f"(window: {describe_window(data.since, data.until)}), confidence {confidence_percent(result)}"),
        ]
        rejected = result.get("rejected") or {}
        if rejected:
            lines.append("rejected reports: " + ", ".join(f"{reason} {count:,}" for reason, count in
                                                          sorted(rejected.items())))
        models = trust_models_text(result)
        if models is not None:
            lines.append(models)
        target = target_text(result)
        if target:
            lines.append(target)
        return lines

    def mechanism_text(self, result: dict) -> str:
        return f"Prio3 {result.get('prio3', '')}, {(result.get('noise') or {}).get('mode', '')} noise"

    def summary_mechanism(self, result: dict) -> str:
        return f"distributed: {self.mechanism_text(result)}"

    def frequency_caption(self, result: dict, rows: Sequence[ValueRow], shown: int, truth: bool) -> str:
        widths = [(r.ci_high - r.ci_low) / 2 for r in rows if r.ci_low is not None and r.ci_high is not None]
        parts = [f"Bars: unbiased estimates from the noisy release with their {confidence_percent(result)} "
                 "intervals (the exact quantile of the release's noise)"]
        if len(rows) > shown:
            parts[0] += f" (the {shown} largest of {len(rows)} values)"
        central = central_halfwidth(result)
        if widths and central is not None:
            parts.append(f"A trusted curator ({central_mechanism(result)}, replace-one) would give "
                         f"±{format_number(central)} against ±{format_number(sum(widths) / len(widths))} here"
                         + ("; in red, its interval around the truth" if truth else ""))
        if any(r.includes_zero for r in rows):
            parts.append(f"Faint bars: the interval includes 0, {NOT_DISTINGUISHABLE}")
        return ". ".join(parts) + "."

    def mean_comparisons(self, result: dict) -> list[tuple[str, float, str, str]]:
        "Local DP's best mechanism at the same ε (its formula)"
        local = (result.get("trust_models") or {}).get("local") or {}
        if not isinstance(local.get("std_error"), (int, float)):
            return []
        z = NormalDist().inv_cdf(0.5 + float(result.get("confidence", 0.95)) / 2)
        width = z * float(local["std_error"])
        return [(f"local DP\n{local.get('mechanism', '')} (formula)", width, LDP_COLOUR,
                 f"local DP's best mechanism would give ± {format_number(width)} at the same ε")]

    def comparison_plots(self, data: ReportData, *, simulate_points: bool, rng: Any) -> list[Plot]:
        "The three trust models' standard errors over n"
        from ..plots import trust_models_figure  # matplotlib: loaded by the figures only, never by a table
        from ..scaling import trust_model_curves

        models = trust_model_curves(data.result)
        return [] if models is None else [trust_models_figure(models)]


DISTRIBUTED_REPORT = register_report_kind(DistributedReport())
