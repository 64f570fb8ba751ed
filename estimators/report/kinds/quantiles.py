"""The quantiles kind, report side: a header naming the tree, a quantile table with intervals (and a trusted
curator's beside them), the mean two ways, and two figures: the CDF with its simultaneous band, and the histogram.

It reads the kind's typed estimate (``estimators.kinds.quantiles.kind.QuantilesDistribution``, read from the
JSON of ``QuantilesEstimate.to_json``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...estimates import typed_as
from ...kinds.quantiles.kind import QuantilesDistribution
from ...window import ReportData
from ..model import confidence_percent, describe_window, epsilon_text, format_number
from ..style import CENTRAL_COLOUR, LDP_COLOUR
from .base import ReportKind, register_report_kind

if TYPE_CHECKING:
    from ..plots import Plot

# Function-level imports: the figures' module loads matplotlib (a third of a second), so it is imported by
# main_plots only; a table or JSON report never loads it.

BAND_COLOUR = "#aec7e8"
MAX_BARS_LABELLED = 40


class QuantilesReport(ReportKind):
    "A number's distribution under local DP: quantiles, the CDF with its band, the histogram"

    name = "quantiles"
    model_label = "local DP"
    colour = LDP_COLOUR

    def header_lines(self, data: ReportData) -> list[str]:
        result = distribution(data)
        low, high = result.range
        unit = f" {result.unit}" if result.unit else ""
        n = data.n
        if result.trust == "distributed":
            noise = result.json.get("noise")
            how = noise.get("noise") if isinstance(noise, dict) else None
            first = (f"campaign {data.campaign}: quantiles estimate, distributed DP, one Prio3 histogram count per "
                     f"report over the buckets, noised by the aggregators ({_or_unknown(how)}), epsilon "
                     f"{epsilon_text(result)}")
        else:
            first = (f"campaign {data.campaign}: quantiles estimate, local DP, {_or_unknown(result.oracle)} on one "
                     f"level of a tree per report (branching {_or_unknown(result.branching)}, "
                     f"{_or_unknown(result.height)} levels), epsilon {epsilon_text(result)}")
        return [
            first,
            (f"{f'n = {n:,} reports, ' if n is not None else ''}window: {describe_window(data.since, data.until)}, "
             f"confidence {confidence_percent(result)}"),
            (f"{result.buckets} {_or_unknown(result.bucketing)} buckets over [{format_number(low)}, "
             f"{format_number(high)}]{unit}; values outside were clamped into the first and last"),
        ]

    def value_table(self, data: ReportData) -> tuple[list[str], list[list[str]]]:
        "One row per quantile (its interval and the curator's), then the mean two ways"
        result = distribution(data)
        unit = f" ({result.unit})" if result.unit else ""
        if result.model_intervals:
            return _models_table(result, unit)
        central = {row.p: row for row in result.central_quantiles}
        columns = ["", f"estimate{unit}", "CI low", "CI high", "central DP CI"]
        cells = []
        for row in result.quantiles:
            curator = central.get(row.p)
            cells.append([f"p{100 * row.p:g}", format_number(row.estimate), format_number(row.ci_low),
                          format_number(row.ci_high),
                          f"{format_number(curator.ci_low)} - {format_number(curator.ci_high)}"
                          if curator else "-"])
        cells.append(["mean", format_number(result.mean), format_number(result.ci_low),
                      format_number(result.ci_high), ""])
        mechanism = result.mean_mechanism
        if mechanism is not None:
            cells.append([f"mean ({mechanism.mechanism})", format_number(result.mean),
                          format_number(mechanism.ci_low), format_number(mechanism.ci_high), ""])
        return columns, cells

    def footnotes(self, data: ReportData) -> list[str]:
        result = distribution(data)
        if result.model_intervals:
            return [
                "quantile intervals: the pointwise CDF intervals (the aggregators' exact noise) inverted; the CDF "
                "figure's band is simultaneous" + (f" (critical value {format_number(result.band_critical)})"
                                                   if result.band_critical is not None else ""),
                "local / distributed / central DP CI: the CDF's rank half-width at the quantile's boundary under "
                "each trust model, same epsilon, n and buckets, replace-one (local: a local quantiles campaign's "
                "tree; central: a trusted curator releasing the bucket histogram), inverted through this CDF",
            ]
        curator = result.central.mechanism if result.central is not None else None
        mechanism = result.mean_mechanism.mechanism if result.mean_mechanism is not None else "a mean mechanism"
        band = result.band_critical
        return [
            "quantile intervals: the monotone (isotonic) CDF's pointwise intervals inverted (each holds the quantile "
            "with the stated confidence); the CDF figure's band is simultaneous"
            + (f" (critical value {format_number(band)})" if band is not None else ""),
            "mean: the bucketed distribution's (within half a bucket of the values' mean); mean "
            f"({mechanism}): the interval a {mechanism} campaign at the same epsilon over the range would give",
            f"central DP CI: a trusted curator ({_or_unknown(curator)}, replace-one) releasing each "
            "quantile's CDF point (one count over n), epsilon split over the quantiles, noise only",
        ]

    def main_plots(self, data: ReportData) -> list[Plot]:
        return [cdf_figure(data), histogram_figure(data)]


def _models_table(result: QuantilesDistribution, unit: str) -> tuple[list[str], list[list[str]]]:
    "A distributed estimate's quantiles with the interval each trust model gives for the same quantile"
    models = dict(result.model_intervals)
    columns = ["", f"estimate{unit}", "CI low", "CI high", "local DP CI", "distributed DP CI", "central DP CI"]

    def shown(pair: tuple[float | None, float | None] | None) -> str:
        if pair is None or pair[0] is None or pair[1] is None:
            return "-"
        return f"{format_number(pair[0])} - {format_number(pair[1])}"

    cells = []
    for row in result.quantiles:
        found = models.get(row.p, {})
        cells.append([f"p{100 * row.p:g}", format_number(row.estimate), format_number(row.ci_low),
                      format_number(row.ci_high), *(shown(found.get(model))
                                                    for model in ("local", "distributed", "central"))])
    cells.append(["mean", format_number(result.mean), format_number(result.ci_low), format_number(result.ci_high),
                  "", "", ""])
    return columns, cells


def distribution(data: ReportData) -> QuantilesDistribution:
    "The estimate as the quantiles kind reads it"
    return typed_as(QuantilesDistribution, data.estimate)


def _or_unknown(value: object) -> str:
    return "?" if value is None else str(value)


def _log_axis(result: QuantilesDistribution) -> bool:
    return result.bucketing == "geometric"


def cdf_figure(data: ReportData) -> Plot:
    "The CDF at the boundaries with its pointwise intervals and simultaneous band, the quantiles marked"
    from ..plots import Plot, fit_layout, new_figure

    result = distribution(data)
    points = result.cdf
    x = [p.boundary for p in points]
    figure = new_figure(8.0, 4.5)
    axes = figure.subplots()
    axes.fill_between(x, [p.band_low for p in points], [p.band_high for p in points], step=None,
                      color=BAND_COLOUR, alpha=0.6, label=f"simultaneous {confidence_percent(result)} band")
    axes.fill_between(x, [p.ci_low for p in points], [p.ci_high for p in points], color=LDP_COLOUR,
                      alpha=0.25, label="pointwise intervals")
    axes.plot(x, [p.cdf for p in points], color=LDP_COLOUR, linewidth=1.5, label="estimated CDF")
    for row in result.quantiles:
        axes.errorbar([row.estimate], [row.p], xerr=[[row.estimate - row.ci_low], [row.ci_high - row.estimate]],
                      fmt="o", color=CENTRAL_COLOUR, capsize=4, markersize=4)
    if _log_axis(result):
        axes.set_xscale("log")
    unit = result.unit
    axes.set_xlabel(f"value ({unit})" if unit else "value")
    axes.set_ylabel("share of values at or below")
    axes.set_ylim(-0.05, 1.05)
    axes.legend(fontsize=7, loc="lower right")
    axes.set_title(f"{data.campaign}: CDF over n = {data.n or 0:,} reports, ε = {epsilon_text(result)}")
    fit_layout(figure)
    quantiles = "; ".join(f"p{100 * r.p:g} {format_number(r.estimate)} [{format_number(r.ci_low)}, "
                          f"{format_number(r.ci_high)}]" for r in result.quantiles)
    caption = (f"The estimated CDF at the bucket boundaries with its pointwise intervals and a simultaneous band "
               f"(the whole curve lies within it with {confidence_percent(result)} confidence). In red, the "
               f"quantiles with their intervals: {quantiles}.")
    return Plot("cdf", "CDF", figure, caption)


def histogram_figure(data: ReportData) -> Plot:
    "Each bucket's share with its interval, drawn over the bucket's span"
    from ..plots import Plot, fit_layout, new_figure

    result = distribution(data)
    bars = result.histogram
    figure = new_figure(8.0, 4.0)
    axes = figure.subplots()
    lows = [b.low for b in bars]
    widths = [b.high - b.low for b in bars]
    estimates = [b.estimate for b in bars]
    axes.bar(lows, estimates, width=widths, align="edge", color=LDP_COLOUR, alpha=0.7, edgecolor="white",
             linewidth=0.3)
    centres = [b.low + w / 2 for b, w in zip(bars, widths)]
    axes.errorbar(centres, estimates, yerr=[[e - b.ci_low for e, b in zip(estimates, bars)],
                                            [b.ci_high - e for e, b in zip(estimates, bars)]],
                  fmt="none", color="#333333", linewidth=0.6, capsize=1 if len(bars) <= MAX_BARS_LABELLED else 0)
    axes.axhline(0, color="#888888", linewidth=0.5)
    if _log_axis(result):
        axes.set_xscale("log")
    unit = result.unit
    axes.set_xlabel(f"value ({unit})" if unit else "value")
    axes.set_ylabel("share of values in the bucket")
    axes.set_title(f"{data.campaign}: histogram of {len(bars)} buckets")
    fit_layout(figure)
    caption = (f"Each bucket's share from the consistent tree with its {confidence_percent(result)} "
               "interval (unbiased, so a bucket may fall below 0; the CDF sums them).")
    return Plot("histogram", "Histogram", figure, caption)


QUANTILES_REPORT = register_report_kind(QuantilesReport())
