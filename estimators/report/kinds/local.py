"""The local-DP kind, report side: the mechanism's intervals against central DP's, and the √n price figure."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...estimates import Estimate
from ...kinds.local import LocalFrequencies, LocalMean, RapporFrequencies, ShuffleGuarantee
from ...window import ReportData
from ..model import (
    NOT_DISTINGUISHABLE,
    RATIO_DEFINITION,
    ValueRow,
    central_halfwidth,
    central_mechanism,
    confidence_percent,
    describe_window,
    epsilon_text,
    format_number,
    ldp_to_central_ratio,
    ratio_text,
    target_text,
)
from ..sections import MEAN, PER_VALUE
from ..style import LDP_COLOUR
from .base import ReportKind, register_report_kind

if TYPE_CHECKING:
    from ..plots import Plot


# Function-level imports: the figures' modules load matplotlib (a third of a second), so they are imported by
# comparison_plots only; a table or JSON report never loads them.


class LocalReport(ReportKind):
    "Local differential privacy: the header states the LDP/central ratio; the figure, the price over n"

    name = "local"
    model_label = "local DP"
    colour = LDP_COLOUR
    sections = ((LocalMean, MEAN), (Estimate, PER_VALUE))

    def header_lines(self, data: ReportData) -> list[str]:
        result = data.estimate
        ratio = ldp_to_central_ratio(result)
        n = data.n
        count = f"n = {n:,} reports, " if n is not None else ""
        lines = [
            (f"campaign {data.campaign}: {data.kind} estimate, mechanism {result.mechanism or '?'}, "
             f"epsilon {epsilon_text(result)}"),
            (f"{count}window: {describe_window(data.since, data.until)}, "
             f"confidence {confidence_percent(result)}"),
        ]
        if result.status not in (None, "ok"):
            lines.append(f"status {result.status}: {result.message}".rstrip(": "))
        shuffle = result.shuffle if isinstance(result, (LocalFrequencies, LocalMean)) else None
        if shuffle is not None:
            lines += shuffle_lines(shuffle)
        if ratio is not None:
            lines.append(f"LDP/central ratio {ratio_text(ratio)} ({RATIO_DEFINITION})")
        target = target_text(result)
        if target:
            lines.append(target)
        return lines

    def frequency_caption(self, result: Estimate, rows: Sequence[ValueRow], shown: int, truth: bool) -> str:
        widths = [(r.ci_high - r.ci_low) / 2 for r in rows if r.ci_low is not None and r.ci_high is not None]
        central = central_halfwidth(result)
        kind = "unbiased estimates" if _unbiased(result) else "estimates"
        parts = [f"Bars: {kind} with their {confidence_percent(result)} local-DP intervals"]
        if len(rows) > shown:
            parts[0] += f" (the {shown} largest of {len(rows)} values)"
        if widths and central is not None:
            ldp = sum(widths) / len(widths)
            parts.append(
                f"Central DP ({central_mechanism(result)}, replace-one) would give ±{format_number(central)} at the "
                f"same ε against ±{format_number(ldp)} locally (the mean over the values, at their estimates)"
                + ("; in red, its interval around the truth" if truth else ""))
        if any(r.includes_zero for r in rows):
            parts.append(f"Faint bars: the interval includes 0, {NOT_DISTINGUISHABLE}")
        return ". ".join(parts) + "."

    def bar_label(self, result: Estimate) -> str:
        return "estimate (unbiased)" if _unbiased(result) else "estimate"

    def notes(self, result: Estimate) -> list[str]:
        "The share of the reports RAPPOR's detected candidates hold; the ones test that refused reports"
        notes = []
        if isinstance(result, RapporFrequencies) and result.allocated_mass is not None:
            notes.append(f"only the candidates the decoder detected are listed; together they hold "
                         f"{format_number(result.allocated_mass)} of the reports")
        defence = result.defence if isinstance(result, LocalFrequencies) else None
        if defence is not None and defence.max_ones is not None:
            notes.append(f"ones test: reports setting more than {defence.max_ones} bits were refused at ingestion "
                         f"(max_ones; {format_number(defence.false_rejection)} of honest reports are), and the rest "
                         "de-biased for it")
        return notes

    def planner_rows(self, data: ReportData) -> dict[str, Any] | None:
        """n for +-x: the reports the planner (``estimators.planner``) needs for this campaign's current half-width,
        half of it and a tenth of it, at the estimate's confidence"""
        from ...planner import n_for_halfwidth

        result = data.estimate
        current = result.typical_halfwidth()
        options = _planner_options(data.spec)
        if current is None or not current > 0 or options is None or result.epsilon is None:
            return None
        confidence = result.confidence or 0.95
        mechanism = str((data.spec or {}).get("mechanism"))
        epsilon = result.epsilon
        needed = [n_for_halfwidth(mechanism, epsilon, width, confidence=confidence, **options)
                  for width in (current, current / 2, current / 10)]
        rows = [[format_number(width), f"{n:,}"] for width, n in zip((current, current / 2, current / 10), needed)]
        return {"title": f"planner: reports needed for a {confidence_percent(result)} interval of +-x",
                "columns": ["+-x", "n"], "rows": rows,
                "notes": [f"x: this campaign's typical half-width now (n = {result.n or 0:,}), half of it and a tenth; "
                          "for a frequency, at the mean frequency over the values (1/d)"]}

    def comparison_plots(self, data: ReportData, *, simulate_points: bool, rng: Any) -> list[Plot]:
        "The √n price of local DP: this campaign's interval against central DP's, over n"
        from ..plots import scaling_figure  # matplotlib: loaded by the figures only, never by a table
        from ..scaling import scaling_curves

        try:
            curves = scaling_curves(data.estimate, data.spec, rng=rng, simulate_points=simulate_points)
        except (KeyError, ValueError, TypeError):  # a result this module cannot model: leave the plot out
            curves = None
        return [] if curves is None else [scaling_figure(curves)]


def shuffle_lines(shuffle: ShuffleGuarantee) -> list[str]:
    "A shuffled campaign's guarantee: epsilon0 per report, and the amplified (epsilon, delta) of each batch size"
    if not shuffle.batches:
        return [f"shuffled: each report epsilon0 = {shuffle.epsilon0:.4g}-LDP; no batch forwarded in the window"]
    sizes = "; ".join(
        f"{row.batches:,} batch{'es' if row.batches != 1 else ''} of {row.batch_size:,}: "
        f"({row.epsilon:.4g}, {shuffle.delta:.3g})-DP"
        + (f" (closed form {row.closed_form_epsilon:.4g})" if row.closed_form_epsilon is not None else "")
        for row in shuffle.batches)
    return [f"shuffled: each report epsilon0 = {shuffle.epsilon0:.4g}-LDP; amplified per batch (replace-one): "
            f"{sizes}", f"amplification bound: {shuffle.bound}"]


def _planner_options(spec: dict | None) -> dict[str, Any] | None:
    "The planner's model of a local spec (a domain's size or a range), or None (RAPPOR: no model of its decoder)"
    from ...planner import CATEGORICAL_MECHANISMS, NUMERIC_MECHANISMS

    spec = spec or {}
    mechanism = spec.get("mechanism")
    if mechanism in NUMERIC_MECHANISMS and isinstance(spec.get("range"), list):
        return {"value_range": tuple(spec["range"])}
    if mechanism in CATEGORICAL_MECHANISMS and isinstance(spec.get("domain"), list):
        # at the mean frequency over the values, 1/d: the typical half-width is a mean over them too
        return {"domain_size": len(spec["domain"]), "frequency": 1 / max(1, len(spec["domain"]))}
    return None


def _unbiased(result: Estimate) -> bool:
    "A frequency oracle's estimates are unbiased; the RAPPOR decoder's (a regression after a test) are not"
    return isinstance(result, LocalFrequencies) and not isinstance(result, RapporFrequencies) and \
        result.kind == "frequency"


LOCAL_REPORT = register_report_kind(LocalReport())
