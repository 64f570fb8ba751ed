"""The distributed kind (Prio3), report side: the release's noise and batches, against the local and central trust
models."""

from __future__ import annotations

from collections.abc import Sequence
from statistics import NormalDist
from typing import TYPE_CHECKING, Any

from ...estimates import Estimate
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


# Function-level imports: the figures' modules load matplotlib (a third of a second), so they are imported by
# comparison_plots only; a table or JSON report never loads them.


class DistributedReport(ReportKind):
    "Prio3 releases: the header names the noise, the batches and the three trust models' standard errors"

    name = "prio3"
    model_label = "distributed DP"
    colour = DISTRIBUTED_COLOUR

    def header_lines(self, data: ReportData) -> list[str]:
        "Its Prio3 type and noise, the batches, rejections, the three trust models"
        result = data.estimate
        delta = result.delta
        n = data.n
        batches = result.batches
        lines = [
            (f"campaign {data.campaign}: {data.kind} estimate, distributed (Prio3 {result.prio3 or '?'}, "
             f"{result.noise_mode or '?'} noise), epsilon {epsilon_text(result)}"
             + (f", delta {delta:.3g}" if delta else "")),
            (f"{f'n = {n:,} reports, ' if n is not None else ''}batches: {', '.join(batches) or '-'} "
             f"(window: {describe_window(data.since, data.until)}), confidence {confidence_percent(result)}"),
        ]
        rejected = result.rejected
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

    def mechanism_text(self, result: Estimate) -> str:
        return f"Prio3 {result.prio3 or ''}, {result.noise_mode or ''} noise"

    def summary_mechanism(self, result: Estimate) -> str:
        return f"distributed: {self.mechanism_text(result)}"

    def frequency_caption(self, result: Estimate, rows: Sequence[ValueRow], shown: int, truth: bool) -> str:
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

    def mean_comparisons(self, result: Estimate) -> list[tuple[str, float, str, str]]:
        "Local DP's best mechanism at the same ε (its formula)"
        local = result.trust_models.get("local") if result.trust_models is not None else None
        if local is None or local.std_error is None:
            return []
        z = NormalDist().inv_cdf(0.5 + result.z_confidence / 2)
        width = z * local.std_error
        return [(f"local DP\n{local.mechanism or ''} (formula)", width, LDP_COLOUR,
                 f"local DP's best mechanism would give ± {format_number(width)} at the same ε")]

    def comparison_plots(self, data: ReportData, *, simulate_points: bool, rng: Any) -> list[Plot]:
        "The three trust models' standard errors over n"
        from ..plots import trust_models_figure  # matplotlib: loaded by the figures only, never by a table
        from ..scaling import trust_model_curves

        models = trust_model_curves(data.estimate)
        return [] if models is None else [trust_models_figure(models)]


DISTRIBUTED_REPORT = register_report_kind(DistributedReport())
